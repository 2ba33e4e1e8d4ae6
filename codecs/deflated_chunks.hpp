// The chunks of a variable as its own file stores them: each deflated
// (a zlib stream) after an optional byte shuffle, what a Zarr v2 reader
// decodes with compressor `zlib` and filter `shuffle`, so that a view may
// hand them out as they lie (aggregation/zarr_view/). Every place was
// checked, when this was made, against the file's size and the most a
// chunk of its shape may take deflated; places never overlap.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "io/open_file.hpp"

namespace ncafs {

class DeflatedChunks {
public:
    virtual ~DeflatedChunks() = default;
    // The chunk shape (edge chunks are stored whole) and the grid's chunks, C order.
    virtual const std::vector<uint64_t>& chunk_shape() const = 0;
    virtual uint64_t chunk_count() const = 0;
    // The element size the bytes were shuffled with (0: not shuffled).
    virtual uint64_t shuffle_size() const = 0;
    virtual bool big_endian() const = 0;
    // Whether some chunk was never written (it holds the fill value).
    virtual bool has_unwritten() const = 0;
    // The fill value a chunk never written holds (one element, native order).
    virtual const std::vector<uint8_t>& fill() const = 0;
    // The file the chunks lie in.
    virtual const std::shared_ptr<const OpenFile>& file() const = 0;
    // Where chunk `index` lies (offset, length) in file(); nullopt: never written.
    struct Place {
        uint64_t offset = 0, length = 0;
    };
    virtual std::optional<Place> place(uint64_t index) const = 0;
};

}  // namespace ncafs
