// Base64 (RFC 4648, standard alphabet, '=' padding): inline chunks of
// reference sets ("base64:..."), and byte-type fill values of Zarr arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ncafs::zarr {

// nullopt for text that is not base64 (bad character, bad length or padding).
std::optional<std::vector<uint8_t>> base64_decode(std::string_view text);
std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace ncafs::zarr
