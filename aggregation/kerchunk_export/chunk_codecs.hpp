// The codecs a reference set's arrays use, as this writer knows them: the
// HDF5 filters that have a numcodecs counterpart (deflate -> "zlib",
// shuffle -> "shuffle"), as Zarr `filters` entries in the order HDF5 applied
// them on writing; and their encoding, for chunks stored inline in an array
// whose referenced chunks use them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/zarr_codec.hpp"

namespace ncafs::agg::kerchunk {

nlohmann::json codec_json(const ZarrCodec& c);

// The bytes of one chunk encoded by `filters` in order (what a reader
// decodes in reverse order).
std::vector<uint8_t> encode_chunk(std::vector<uint8_t> bytes, const std::vector<ZarrCodec>& filters);

}  // namespace ncafs::agg::kerchunk
