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
    bool fortran_order = false;               // order "F": chunks stored column-major (decode_chunk turns them)
};

// Throws std::runtime_error with the reason (the caller names the array).
// Refuses orders other than "C" and "F", unknown fields' bad values, codecs
// decode_chunk does not know (by name) or configurations it cannot decode.
ZarrArray parse_zarray(const nlohmann::json& zarray, const ZarrLimits& limits = {});

// object[key] when it is a string, fallback when it is absent;
// std::runtime_error naming key when it is anything else (nlohmann's own
// value() would throw a type_error no caller expects).
std::string string_member(const nlohmann::json& object, const char* key, const std::string& fallback);

// The chunk key suffix of chunk indices ("0.3.1", or "0/3/1"; "0" for a scalar).
std::string chunk_key(const ZarrArray& array, const std::vector<uint64_t>& index);

}  // namespace ncafs::zarr
