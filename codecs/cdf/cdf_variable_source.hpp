// The values of one variable of a CDF-1/2/5 file, read by pread at the
// offsets the layout computes. Contiguous runs (a box whose inner dims are
// full; whole packed records) are one pread each.
#pragma once

#include <memory>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/cdf/layout.hpp"

namespace ncafs::cdf {

class CdfVariableSource final : public ArraySource {
public:
    CdfVariableSource(std::shared_ptr<const OpenFile> file, std::shared_ptr<const CdfLayout> layout, size_t variable,
                      std::string name);

    NcType type() const override { return var().type; }
    const std::vector<uint64_t>& shape() const override { return var().shape; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;
    // Classic bytes are already big-endian: the extents are the file's own.
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override;

    const std::shared_ptr<const OpenFile>& file() const { return file_; }

private:
    const VariableLayout& var() const { return layout_->variables[index_]; }
    // SourceError when the file is no longer what the layout describes.
    // OpenFile::check_after_read, its error naming the variable (defined and used in the .cpp).
    template <class ReadAgain>
    void check_unchanged(const void* read, size_t n, ReadAgain&& read_again) const;
    // The file's contiguous runs of a box, in C order: each `length` bytes
    // long, at these offsets (listed before any is read).
    struct FileRuns {
        uint64_t length = 0;
        std::vector<uint64_t> offsets;
    };
    FileRuns file_runs(std::span<const uint64_t> start, std::span<const uint64_t> count) const;
    // A file of at most one page is read whole (its opener's first read,
    // still held, costs no system call: OpenFile::keep_first_read).
    static constexpr uint64_t kReadWholeBelow = 4096;
    bool read_whole(std::span<const uint64_t> start, std::span<const uint64_t> count, void* out) const;

    std::shared_ptr<const OpenFile> file_;
    std::shared_ptr<const CdfLayout> layout_;
    size_t index_;
    std::string name_;
};

}  // namespace ncafs::cdf
