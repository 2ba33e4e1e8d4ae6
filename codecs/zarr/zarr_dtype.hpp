// Zarr v2 data types (NumPy type strings such as "<f4", ">i2", "|u1", "|S1")
// and the netCDF types they stand for, both directions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "codecs/types.hpp"

namespace ncafs::zarr {

struct ZarrDtype {
    NcType type = NcType::Byte;
    bool big_endian = false;  // byte order of the stored elements (1-byte types: false)
    bool boolean = false;     // "|b1": shown as byte (netCDF has no boolean type)
};

// Parses a dtype string; nullopt with `why` set for types netCDF cannot show
// (float16, complex, strings longer than one byte, structured types...).
std::optional<ZarrDtype> parse_zarr_dtype(std::string_view text, std::string& why);

// The dtype string of a netCDF type in the given byte order ("|" for 1-byte
// types: "|i1", "|u1", "|S1").
std::string zarr_dtype_of(NcType type, bool big_endian);

}  // namespace ncafs::zarr
