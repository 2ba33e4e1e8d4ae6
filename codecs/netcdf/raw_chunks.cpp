#include "codecs/netcdf/raw_chunks.hpp"

#include <algorithm>
#include <bit>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"
#include "codecs/inflate.hpp"
#include "codecs/error.hpp"
#include "io/error.hpp"

namespace ncafs::netcdf {

namespace {

std::atomic<uint64_t> decoded_count{0};

uint32_t load_le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// HDF5's fletcher32 filter, reading: checks the 4-byte sum at the end and
// returns the bytes before it. HDF5 before 1.6.3 stored the sum with each
// 16-bit half byte-swapped on little-endian machines; both forms are
// accepted, as HDF5 does.
std::span<const uint8_t> check_fletcher32(std::span<const uint8_t> in) {
    if (in.size() < 4) throw std::runtime_error("chunk shorter than its fletcher32 checksum");
    const auto data = in.first(in.size() - 4);
    const uint32_t stored = load_le32(in.data() + data.size());
    const uint32_t sum = hdf5_fletcher32(data);
    const uint32_t old_form = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
    if (stored != sum && stored != old_form) throw std::runtime_error("data error detected by the fletcher32 checksum");
    return data;
}

void swap_elements(uint8_t* p, uint64_t bytes, size_t size) {
    for (uint64_t i = 0; i + size <= bytes; i += size) std::reverse(p + i, p + i + size);
}

}  // namespace

namespace {

// The dataset of variable `name` in a group (prefix "/" or "/a/b/"):
// netCDF-4 stores a variable named like a dimension it is not the
// coordinate of under "_nc4_non_coord_NAME" (NAME itself is then the
// dimension's scale): looked for first.
template <class Map>
const typename Map::value_type* find_storage(const Map& storage, const std::string& prefix, const std::string& name) {
    for (const std::string& candidate : {"_nc4_non_coord_" + name, name})
        if (auto it = storage.find(prefix + candidate); it != storage.end()) return &*it;
    return nullptr;
}

std::string group_prefix(const std::string& group_path) { return group_path == "/" ? "/" : group_path + "/"; }

// The index of the chunk at chunk_start in the survey's C-order list.
uint64_t chunk_index(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start, const std::string& shown) {
    const Hdf5Storage& s = *plan.storage;
    uint64_t index = 0;
    for (size_t d = 0; d < s.dims.size(); ++d) {
        const uint64_t grid = s.dims[d] == 0 ? 0 : (s.dims[d] - 1) / s.chunk[d] + 1;
        if (d >= chunk_start.size() || chunk_start[d] % s.chunk[d] != 0 || chunk_start[d] / s.chunk[d] >= grid)
            throw SourceError(shown, "no chunk of " + plan.dataset + " starts where one is asked for");
        index = index * grid + chunk_start[d] / s.chunk[d];
    }
    if (index >= s.chunks.size()) throw SourceError(shown, "the chunk index of " + plan.dataset + " is incomplete");
    return index;
}

}  // namespace

std::optional<RawChunkPlan> plan_raw_chunks(const Hdf5Survey& survey, const std::string& group_path,
                                            const std::string& name, NcType type, const std::vector<uint64_t>& shape,
                                            uint64_t max_bytes) {
    const auto* found = find_storage(survey.storage, group_prefix(group_path), name);
    if (!found) return std::nullopt;
    const Hdf5Storage& s = *found->second;
    if (s.type_size != type_size(type) || s.dims != shape || s.chunk.size() != shape.size()) return std::nullopt;
    std::optional<uint64_t> bytes = s.type_size;
    for (uint64_t c : s.chunk)
        if (bytes) bytes = c == 0 ? std::nullopt : checked::mul(*bytes, c);
    if (!bytes || *bytes > max_bytes) return std::nullopt;
    RawChunkPlan plan{found->first, s.pipeline, s.shuffle_size, s.chunk, *bytes, *bytes, type, s.big_endian,
                      found->second, survey.file_size};
    // A checksum computed before deflating is deflated with the chunk.
    for (RawChunkPlan::Filter f : plan.pipeline) {
        if (f == RawChunkPlan::Filter::Deflate) break;
        if (f == RawChunkPlan::Filter::Fletcher32) plan.inflated_bytes += 4;
    }
    return plan;
}

std::optional<StoredChunk> locate_chunk(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start,
                                        const std::string& shown) {
    const StoredChunk at = plan.storage->chunks[chunk_index(plan, chunk_start, shown)];
    if (at.size == 0) return std::nullopt;
    const auto end = checked::add(at.address, at.size);
    if (!end || *end > plan.file_size)
        throw SourceError(shown, "a chunk of " + plan.dataset + " lies beyond the end of the file");
    if (at.size > max_stored_bytes(plan))
        throw SourceError(shown, "a chunk of " + plan.dataset + " is stored in " + std::to_string(at.size) +
                                     " bytes, more than a chunk of " + std::to_string(plan.declared_bytes) +
                                     " bytes can need");
    return at;
}

bool chunk_never_written(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start, const std::string& shown) {
    const StoredChunk at = plan.storage->chunks[chunk_index(plan, chunk_start, shown)];
    return at.size == 0 && at.address == 0;
}

std::optional<Hdf5Contiguous> find_contiguous(const Hdf5Survey& survey, const std::string& group_path,
                                              const std::string& name, NcType type) {
    const auto* found = find_storage(survey.contiguous, group_prefix(group_path), name);
    if (!found || found->second.type_size != type_size(type)) return std::nullopt;
    return found->second;
}

uint64_t max_stored_bytes(const RawChunkPlan& plan) {
    return plan.inflated_bytes + plan.inflated_bytes / 8 + (uint64_t{1} << 20) + 4;
}

namespace {

// The two buffers a thread's chunk decodes alternate between: reused, so a
// decode neither zero-fills nor page-faults fresh memory. Released after a
// chunk larger than kKeptScratch: up to 64 FUSE threads and the pool's
// decode, and what they keep is outside cache_mem=.
constexpr size_t kKeptScratch = size_t{512} << 10;

struct Scratch {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
    std::span<uint8_t> take(size_t n) {
        if (n > size) bytes.reset(new uint8_t[n]), size = n;  // uninitialized: every byte is written before it is read
        return {bytes.get(), n};
    }
    void trim() {
        if (size > kKeptScratch) bytes.reset(), size = 0;
    }
};

thread_local Scratch scratch[2];

// The stored bytes through the filters in reverse, each into the scratch
// buffer the previous one did not write; the result may be `stored` itself.
std::span<const uint8_t> undo_filters(const RawChunkPlan& plan, std::span<const uint8_t> stored) {
    std::span<const uint8_t> current = stored;
    size_t next = 0;
    for (auto it = plan.pipeline.rbegin(); it != plan.pipeline.rend(); ++it) {
        if (*it == RawChunkPlan::Filter::Fletcher32) {
            current = check_fletcher32(current);
            continue;
        }
        std::span<uint8_t> out;
        if (*it == RawChunkPlan::Filter::Deflate) {
            out = scratch[next].take(plan.inflated_bytes);
            out = out.first(inflate_bounded_into(current, out, true));
        } else {
            out = scratch[next].take(current.size());
            unshuffle_bytes_into(current, plan.shuffle_size, out.data());
        }
        current = out;
        next ^= 1;
    }
    return current;
}

}  // namespace

void decode_raw_chunk(const RawChunkPlan& plan, std::span<const uint8_t> stored, std::span<const uint64_t> count,
                      void* dst) {
    struct Trim {
        ~Trim() { scratch[0].trim(), scratch[1].trim(); }
    } trim;
    const std::span<const uint8_t> decoded = undo_filters(plan, stored);
    if (decoded.size() != plan.declared_bytes)
        throw std::runtime_error("chunk decodes to " + std::to_string(decoded.size()) + " bytes, not " +
                                 std::to_string(plan.declared_bytes));
    const size_t esize = type_size(plan.type);
    const std::vector<uint64_t> origin(count.size(), 0);
    auto* out = static_cast<uint8_t*>(dst);
    copy_box_overlap(decoded.data(), origin, plan.declared, origin, count, esize, out);
    // Swapped where it lands: the box of `count` only, no copy of the chunk.
    if (plan.big_endian && std::endian::native == std::endian::little)
        swap_elements(out, element_count(count) * esize, esize);
    ++decoded_count;
}

uint32_t hdf5_fletcher32(std::span<const uint8_t> data) {
    const uint8_t* p = data.data();
    size_t words = data.size() / 2;
    uint32_t sum1 = 0, sum2 = 0;
    while (words) {
        size_t run = std::min<size_t>(words, 360);  // no overflow of the 32-bit sums
        words -= run;
        do {
            sum1 += static_cast<uint32_t>((uint32_t{p[0]} << 8) | p[1]);
            p += 2;
            sum2 += sum1;
        } while (--run);
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (data.size() % 2) {
        sum1 += uint32_t{*p} << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return (sum2 << 16) | sum1;
}

uint64_t raw_chunks_decoded() { return decoded_count; }

}  // namespace ncafs::netcdf
