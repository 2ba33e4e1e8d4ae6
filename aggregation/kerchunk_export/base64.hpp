// Base64 (RFC 4648, with padding): how a reference set holds bytes inline
// ("base64:" + text) and how Zarr v2 spells a fill value of a bytes type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ncafs::agg::kerchunk {

std::string base64_encode(const uint8_t* data, size_t n);

}  // namespace ncafs::agg::kerchunk
