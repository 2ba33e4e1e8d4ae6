// The values of one Zarr array of a reference set, read chunk by chunk on
// demand: each chunk a box needs is located (inline or a byte range of a
// referenced object), read, decoded through the array's codec chain
// (codecs/zarr) and copied into the box; a chunk absent from the refs reads
// as the array's fill value (0 for fill_value null). Decoded chunks are
// shared through a process-wide cache bounded in bytes. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aggregation/reference_set/reference_store.hpp"
#include "codecs/array_source.hpp"
#include "codecs/zarr/zarr_array.hpp"

namespace ncafs::agg {

// The bound of the decoded chunks kept for every reference set (cache_mem=; default 256 MiB).
void set_decoded_chunk_capacity(uint64_t bytes);

class ReferenceArraySource final : public ArraySource {
public:
    ReferenceArraySource(std::shared_ptr<const ReferenceStore> store, std::string name, zarr::ZarrArray array);

    NcType type() const override { return array_.dtype.type; }
    const std::vector<uint64_t>& shape() const override { return array_.shape; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override;

    // True when a chunk of this array is a reference to another object (not inline).
    bool draws_on_other_files() const override;
    const ReferenceStore& store() const { return *store_; }

private:
    struct Box;
    // The decoded chunk at index (dtype byte order); null when absent.
    std::shared_ptr<const std::vector<uint8_t>> chunk(const std::vector<uint64_t>& index) const;
    void copy_chunk(const Box& box, const std::vector<uint64_t>& index, const uint8_t* chunk, bool swap,
                    uint8_t* out) const;
    std::shared_ptr<const ReferenceStore> store_;
    std::string name_;
    zarr::ZarrArray array_;
    std::vector<uint8_t> fill_;  // one element, the dtype's byte order
    uint64_t id_;                // tells this source's chunks apart in the shared cache
};

}  // namespace ncafs::agg
