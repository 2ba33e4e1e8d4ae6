#include "codecs/array_source.hpp"

#include <span>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

namespace ncafs {

std::optional<std::vector<FileExtent>> ArraySource::big_endian_extents(uint64_t, uint64_t) const {
    return std::nullopt;
}

uint64_t ArraySource::element_count() const { return ncafs::element_count(shape()); }

namespace {

// The boxes of a linear run (for_each_linear_box), kept flat: per box its
// start, its count (rank each) and the elements of the run before it.
struct LinearBoxes {
    size_t rank = 0;
    std::vector<uint64_t> flat;
    size_t size() const { return flat.size() / (2 * rank + 1); }
    std::span<const uint64_t> start(size_t i) const { return {flat.data() + i * (2 * rank + 1), rank}; }
    std::span<const uint64_t> count(size_t i) const { return {flat.data() + i * (2 * rank + 1) + rank, rank}; }
    uint64_t before(size_t i) const { return flat[i * (2 * rank + 1) + 2 * rank]; }
};

LinearBoxes linear_boxes(const std::vector<uint64_t>& shape, uint64_t first, uint64_t n) {
    LinearBoxes boxes{shape.size(), {}};
    boxes.flat.reserve(3 * (2 * shape.size() + 1));  // most runs are one to three boxes
    auto keep = [&](std::span<const uint64_t> start, std::span<const uint64_t> count, uint64_t before) {
        boxes.flat.insert(boxes.flat.end(), start.begin(), start.end());
        boxes.flat.insert(boxes.flat.end(), count.begin(), count.end());
        boxes.flat.push_back(before);
    };
    for_each_linear_box(shape, first, n, keep);
    return boxes;
}

}  // namespace

void ArraySource::read_linear(uint64_t first, uint64_t n, ByteOrder order, void* out) const {
    const size_t esize = type_size(type());
    auto* bytes = static_cast<uint8_t*>(out);
    // The boxes first, then one read each: the decomposition has returned
    // before a source reads (a reader following a read finds it shorter).
    const LinearBoxes boxes = linear_boxes(shape(), first, n);
    for (size_t i = 0; i < boxes.size(); ++i)
        read(boxes.start(i), boxes.count(i), order, bytes + boxes.before(i) * esize);
}

void check_box(const std::vector<uint64_t>& shape, std::span<const uint64_t> start, std::span<const uint64_t> count,
               const char* what) {
    if (start.size() != shape.size() || count.size() != shape.size())
        throw UsageError(std::string(what) + ": hyperslab rank " + std::to_string(start.size()) +
                         " does not match array rank " + std::to_string(shape.size()));
    for (size_t d = 0; d < shape.size(); ++d)
        if (start[d] > shape[d] || count[d] > shape[d] - start[d])
            throw UsageError(std::string(what) + ": hyperslab [" + std::to_string(start[d]) + ", +" +
                             std::to_string(count[d]) + ") outside dimension " + std::to_string(d) + " of length " +
                             std::to_string(shape[d]));
}

namespace {

struct LinearDecomposer {
    const std::vector<uint64_t>& shape;
    std::vector<uint64_t> row_size;  // elements in one index step of each dimension
    std::vector<uint64_t> start, count;
    const LinearBoxFn& f;
    uint64_t emitted = 0;

    // Emits boxes for linear offsets [lo, hi) of the sub-array of dims d.. at
    // the index prefix already in start[0..d).
    void run(size_t d, uint64_t lo, uint64_t hi) {
        if (lo >= hi) return;
        const uint64_t p = row_size[d];
        if (d + 1 == shape.size()) {
            emit(d, lo, hi - lo);
            return;
        }
        uint64_t a = lo / p, b = hi / p;
        if (a == b) {
            start[d] = a;
            count[d] = 1;
            run(d + 1, lo - a * p, hi - a * p);
            return;
        }
        if (lo % p != 0) {
            start[d] = a;
            count[d] = 1;
            run(d + 1, lo % p, p);
            ++a;
        }
        if (b > a) emit(d, a, b - a);
        if (hi % p != 0) {
            start[d] = b;
            count[d] = 1;
            run(d + 1, 0, hi % p);
        }
    }

    // A box of `rows` full rows starting at index `first` along d.
    void emit(size_t d, uint64_t first, uint64_t rows) {
        start[d] = first;
        count[d] = rows;
        for (size_t k = d + 1; k < shape.size(); ++k) {
            start[k] = 0;
            count[k] = shape[k];
        }
        f(start, count, emitted);
        emitted += rows * row_size[d];
    }
};

}  // namespace

void for_each_linear_box(const std::vector<uint64_t>& shape, uint64_t first, uint64_t n, const LinearBoxFn& f) {
    if (n == 0) return;
    if (shape.empty()) {
        if (first != 0 || n != 1) throw UsageError("linear run outside a scalar");
        f({}, {}, 0);
        return;
    }
    LinearDecomposer dec{shape, std::vector<uint64_t>(shape.size()), std::vector<uint64_t>(shape.size()),
                         std::vector<uint64_t>(shape.size()), f};
    uint64_t p = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        dec.row_size[d] = p;
        p *= shape[d];
    }
    if (first > p || n > p - first)
        throw UsageError("linear run [" + std::to_string(first) + ", +" + std::to_string(n) + ") outside array of " +
                         std::to_string(p) + " elements");
    dec.run(0, first, first + n);
}

}  // namespace ncafs
