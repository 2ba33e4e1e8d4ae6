// Zarr v2 array metadata (.zarray), checked: every number in it is hostile.
// Shapes and chunk counts are checked against overflow, one chunk's decoded
// size against a bound, before anything is allocated.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "codecs/zarr/zarr_dtype.hpp"

namespace ncafs::zarr {

struct ZarrLimits {
    uint64_t max_chunk_bytes = uint64_t{256} << 20;  // one decoded chunk
    uint64_t max_array_bytes = uint64_t{1} << 50;    // one whole array (1 PiB)
    size_t max_rank = 32;
    size_t max_filters = 8;  // each one a pass over the chunk: a long chain is CPU amplification
};

// One numcodecs codec: its "id" and its whole configuration object.
struct ZarrCodec {
    std::string id;
    nlohmann::json config;
};

struct ZarrArray {
    ZarrDtype dtype;
    std::vector<uint64_t> shape;
    std::vector<uint64_t> chunks;             // chunk shape (edge chunks stored full size)
    std::vector<uint64_t> chunk_grid;         // chunks along each dimension
    uint64_t chunk_elements = 1;              // product(chunks)
    uint64_t chunk_bytes = 0;                 // chunk_elements * item size: a decoded chunk's exact size
    std::optional<std::vector<uint8_t>> fill;  // one element, native order; nullopt for fill_value null
    std::optional<ZarrCodec> compressor;
    std::vector<ZarrCodec> filters;           // in encoding order
    char separator = '.';                     // between chunk indices in keys
};

// Throws std::runtime_error with the reason (the caller names the array).
// Refuses order "F", unknown fields' bad values, codecs decode_chunk does
// not know (by name).
ZarrArray parse_zarray(const nlohmann::json& zarray, const ZarrLimits& limits = {});

// The chunk key suffix of chunk indices ("0.3.1", or "0/3/1"; "0" for a scalar).
std::string chunk_key(const ZarrArray& array, const std::vector<uint64_t>& index);

}  // namespace ncafs::zarr
