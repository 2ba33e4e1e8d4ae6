// ArraySource: the values of one variable. Reads any hyperslab in the source's
// element type, in native or big-endian byte order. Implementations must be
// safe to call from several threads at once (the FUSE loop is multithreaded).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/open_file.hpp"
#include "codecs/types.hpp"

namespace ncafs {

class DeflatedChunks;

enum class ByteOrder { Native, Big };

// Bytes that already lie in a file exactly as a view needs them.
struct FileExtent {
    std::shared_ptr<const OpenFile> file;
    uint64_t offset = 0;
    uint64_t length = 0;
};

class ArraySource {
public:
    virtual ~ArraySource() = default;

    virtual NcType type() const = 0;
    virtual const std::vector<uint64_t>& shape() const = 0;

    // Reads the box [start, start+count) in C order into out, which holds
    // product(count) * type_size(type()) bytes. Throws SourceError when the
    // data cannot be produced; UsageError when the box is outside the shape.
    virtual void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                      void* out) const = 0;

    // Where the big-endian bytes of elements [first, first+n) of the C-order
    // linearisation already lie in files, in order; nullopt when they do not
    // (different type, conversion needed, not a classic file...).
    virtual std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const;

    // One element (native order, type()) when metadata alone shows that every
    // element of the box has that value (e.g. a box inside constant or missing
    // partitions); nullopt when unknown. Never opens a file.
    virtual std::optional<std::vector<uint8_t>> uniform_value(std::span<const uint64_t> start,
                                                              std::span<const uint64_t> count) const {
        (void)start, (void)count;
        return std::nullopt;
    }

    // The chunks as the variable's own file stores them, when each is
    // deflated (after a shuffle or not) and nothing else, and every place
    // in the chunk index is sound (deflated_chunks.hpp); else null, with
    // *why set when the index itself is unsound (a chunk beyond the file,
    // larger than deflate may make it, overlapping another). Never reads values.
    virtual std::shared_ptr<const DeflatedChunks> deflated_chunks(std::string* why) const {
        (void)why;
        return nullptr;
    }

    // Why every read fails before any file is touched (e.g. a netCDF-4
    // variable with HDF5 external storage), or nullopt.
    virtual std::optional<std::string> refusal() const { return std::nullopt; }

    // True when values come from files other than the dataset's own (an
    // aggregation's partitions, the objects a reference set names): what a
    // stat or a listing computes may not read them (docs/security.md).
    virtual bool draws_on_other_files() const { return false; }

    // Reads elements [first, first+n) of the C-order linearisation: split
    // into at most 2*rank boxes, each read with one read() call.
    void read_linear(uint64_t first, uint64_t n, ByteOrder order, void* out) const;

    uint64_t element_count() const;
};

// A flag of the current thread, set for the life of a scope (a nested
// scope restores what it found); Tag tells the flags apart.
template <class Tag>
class ThreadFlagScope {
public:
    ThreadFlagScope() : before_(set_) { set_ = true; }
    ~ThreadFlagScope() { set_ = before_; }
    ThreadFlagScope(const ThreadFlagScope&) = delete;
    ThreadFlagScope& operator=(const ThreadFlagScope&) = delete;
    static bool active() { return set_; }

private:
    inline static thread_local bool set_ = false;
    bool before_;
};

// Set on the threads computing a view's bytes for a reader going forward
// whose next bytes the caller computes ahead itself (fs/view_block_cache.hpp):
// a source does not then decode ahead of the read on its own
// (NetcdfVariableSource's chunks after a miss), which would decode the
// same chunks a second time, or keep them for nothing.
using ForwardReaderScope = ThreadFlagScope<struct ForwardReaderTag>;

// Checks start/count against shape; throws UsageError naming `what`.
void check_box(const std::vector<uint64_t>& shape, std::span<const uint64_t> start, std::span<const uint64_t> count,
               const char* what);

// Calls f(start, count, element_offset) for each box of the decomposition of
// the linear run [first, first+n) of an array of the given shape into
// row-aligned boxes (at most 2*rank-1 boxes).
using LinearBoxFn = std::function<void(std::span<const uint64_t> start, std::span<const uint64_t> count,
                                        uint64_t elements_before)>;
void for_each_linear_box(const std::vector<uint64_t>& shape, uint64_t first, uint64_t n, const LinearBoxFn& f);

}  // namespace ncafs
