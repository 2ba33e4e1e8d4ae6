#include "codecs/zarr/zarr_dtype.hpp"

#include <bit>

namespace ncafs::zarr {

namespace {

// NumPy kind letter and size -> netCDF type.
std::optional<NcType> type_of(char kind, int size) {
    switch (kind) {
        case 'i':
            return size == 1 ? NcType::Byte : size == 2 ? NcType::Short : size == 4 ? NcType::Int
                 : size == 8 ? std::optional(NcType::Int64) : std::nullopt;
        case 'u':
            return size == 1 ? NcType::UByte : size == 2 ? NcType::UShort : size == 4 ? NcType::UInt
                 : size == 8 ? std::optional(NcType::UInt64) : std::nullopt;
        case 'f':
            return size == 4 ? NcType::Float : size == 8 ? std::optional(NcType::Double) : std::nullopt;
        case 'S':
            return size == 1 ? std::optional(NcType::Char) : std::nullopt;
        case 'b':
            return size == 1 ? std::optional(NcType::Byte) : std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace

std::optional<ZarrDtype> parse_zarr_dtype(std::string_view text, std::string& why) {
    why.clear();
    if (text.size() < 3 || text.size() > 4 || (text[0] != '<' && text[0] != '>' && text[0] != '|' && text[0] != '=')) {
        why = "dtype \"" + std::string(text) + "\" is not a simple NumPy type string (structured types are not supported)";
        return std::nullopt;
    }
    int size = 0;
    for (char c : text.substr(2)) {
        if (c < '0' || c > '9') {
            why = "dtype \"" + std::string(text) + "\": bad item size";
            return std::nullopt;
        }
        size = size * 10 + (c - '0');
    }
    const auto type = type_of(text[1], size);
    if (!type) {
        why = "dtype \"" + std::string(text) + "\" has no netCDF counterpart";
        return std::nullopt;
    }
    ZarrDtype d;
    d.type = *type;
    d.boolean = text[1] == 'b';
    if (size > 1) {
        if (text[0] == '|') {
            why = "dtype \"" + std::string(text) + "\": multi-byte type without a byte order";
            return std::nullopt;
        }
        d.big_endian = text[0] == '>' || (text[0] == '=' && std::endian::native == std::endian::big);
    }
    return d;
}

std::string zarr_dtype_of(NcType type, bool big_endian) {
    const size_t size = type_size(type);
    const char order = size == 1 ? '|' : big_endian ? '>' : '<';
    char kind = 'i';
    if (type == NcType::Char) kind = 'S';
    else if (type == NcType::Float || type == NcType::Double) kind = 'f';
    else if (is_unsigned_type(type)) kind = 'u';
    return std::string(1, order) + kind + std::to_string(size);
}

}  // namespace ncafs::zarr
