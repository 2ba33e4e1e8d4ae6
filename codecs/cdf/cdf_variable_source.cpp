#include "codecs/cdf/cdf_variable_source.hpp"

#include <cstring>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

namespace ncafs::cdf {

CdfVariableSource::CdfVariableSource(std::shared_ptr<const OpenFile> file, std::shared_ptr<const CdfLayout> layout,
                                     size_t variable, std::string name)
    : file_(std::move(file)), layout_(std::move(layout)), index_(variable), name_(std::move(name)) {}

template <class ReadAgain>
void CdfVariableSource::check_unchanged(const void* read, size_t n, ReadAgain&& read_again) const {
    // One fstat per read, after it: a file rewritten in place (same inode)
    // must give an error, not bytes of a different layout or of two versions.
    try {
        file_->check_after_read(read, n, read_again);
    } catch (const SourceError& e) {
        throw SourceError(file_->path(), std::string(e.what()).substr(file_->path().size() + 2) + "; variable '" +
                                             name_ + "' not read");
    }
}

void CdfVariableSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                             void* out) const {
    const VariableLayout& vl = var();
    check_box(vl.shape, start, count, name_.c_str());
    const uint64_t total = ncafs::element_count(count);
    if (total == 0) return;
    if (read_whole(start, count, out)) {
        if (order == ByteOrder::Native) swap_from_big_endian(vl.type, out, total);
        return;
    }
    // No fstat before reading: the one after compares with the identity the
    // file had when opened (and its header parsed), so a change before or
    // during the reads is caught there, before any byte is served.
    // After reading: the bytes all come from the version opened, untorn
    // (and, for a file changed lately, the version its layout describes).
    const FileRuns runs = file_runs(start, count);
    try {
        file_->read_checked(out, total * vl.element_size, [&](void* to) {
            auto* dst = static_cast<uint8_t*>(to);
            for (uint64_t offset : runs.offsets) {
                file_->pread_unchecked(dst, runs.length, offset);
                dst += runs.length;
            }
        });
    } catch (const SourceError&) {
        check_unchanged(nullptr, 0, [](void*) {});  // a file that shrank: say so (and mark it changed)
        throw;
    }
    if (order == ByteOrder::Native) swap_from_big_endian(vl.type, out, total);
}

bool CdfVariableSource::read_whole(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                   void* out) const {
    if (file_->is_remote() || file_->size() > kReadWholeBelow) return false;
    if (file_->seen_changed())
        throw SourceError(file_->path(), "file changed since it was opened: variable '" + name_ + "' not read");
    std::vector<uint8_t> whole = file_->take_kept_file();  // the opener's read, checked: no system call
    if (whole.size() != file_->size()) {
        whole.assign(static_cast<size_t>(file_->size()), 0);
        try {
            file_->pread_exact(whole.data(), whole.size(), 0);  // checked after reading, like the runs
        } catch (const SourceError&) {
            check_unchanged(nullptr, 0, [](void*) {});  // a file that shrank: say so (and mark it changed)
            throw;
        }
    }
    const FileRuns runs = file_runs(start, count);
    auto* dst = static_cast<uint8_t*>(out);
    for (uint64_t offset : runs.offsets) {
        if (offset > whole.size() || runs.length > whole.size() - offset)
            throw SourceError(file_->path(), "file ends at byte " + std::to_string(whole.size()) + ", expected " +
                                                 std::to_string(runs.length) + " bytes at offset " +
                                                 std::to_string(offset));
        std::memcpy(dst, whole.data() + offset, runs.length);
        dst += runs.length;
    }
    return true;
}

CdfVariableSource::FileRuns CdfVariableSource::file_runs(std::span<const uint64_t> start,
                                                          std::span<const uint64_t> count) const {
    const VariableLayout& vl = var();
    const size_t rank = vl.shape.size();
    if (rank == 0) return {vl.element_size, {vl.begin}};
    // Merge dims from the innermost outward while the inner block is full
    // and lies contiguously (stride equals the inner block's bytes).
    // j = first merged dim (rank: none yet, the run is one element).
    size_t j = rank;
    FileRuns runs{vl.element_size, {}};
    while (j > 0 && (j == rank || count[j] == vl.shape[j]) &&
           vl.strides[j - 1] == (j == rank ? vl.element_size : vl.shape[j] * vl.strides[j])) {
        --j;
        runs.length = count[j] * vl.strides[j];
    }
    uint64_t n = 1;
    for (size_t d = 0; d < j; ++d) n *= count[d];
    runs.offsets.reserve(n);
    // Odometer over dims [0, j).
    std::vector<uint64_t> idx(start.begin(), start.begin() + j);
    uint64_t offset = vl.begin;
    for (size_t d = 0; d < rank; ++d) offset += start[d] * vl.strides[d];
    for (;;) {
        runs.offsets.push_back(offset);
        size_t d = j;
        while (d-- > 0) {
            if (++idx[d] < start[d] + count[d]) {
                offset += vl.strides[d];
                break;
            }
            offset -= (count[d] - 1) * vl.strides[d];
            idx[d] = start[d];
        }
        if (d == SIZE_MAX) break;
    }
    return runs;
}

std::optional<std::vector<FileExtent>> CdfVariableSource::big_endian_extents(uint64_t first, uint64_t n) const {
    const VariableLayout& vl = var();
    const uint64_t all = vl.element_count();
    if (first > all || n > all - first)
        throw UsageError(name_ + ": linear run [" + std::to_string(first) + ", +" + std::to_string(n) +
                         ") outside " + std::to_string(all) + " elements");
    std::vector<FileExtent> extents;
    if (n == 0) return extents;
    // No fstat here: whoever reads the extents checks the identity (after a
    // copy, before a splice); a file a check has seen changed is refused.
    if (file_->seen_changed())
        throw SourceError(file_->path(), "file changed since it was opened: variable '" + name_ + "' not read");
    const uint64_t per = vl.record_elements;
    const bool contiguous = !vl.is_record || layout_->record_size == vl.data_bytes;
    if (contiguous) {
        extents.push_back({file_, layout_->linear_element_offset(index_, first), n * vl.element_size});
        return extents;
    }
    uint64_t i = first, end = first + n;
    while (i < end) {
        uint64_t in_record = std::min(end, (i / per + 1) * per) - i;
        extents.push_back({file_, layout_->linear_element_offset(index_, i), in_record * vl.element_size});
        i += in_record;
    }
    return extents;
}

}  // namespace ncafs::cdf
