#include "codecs/ncstream/schema_mapping.hpp"


#include "codecs/error.hpp"

namespace ncafs::ncstream {

pb::DataType to_pb_type(NcType t) {
    switch (t) {
        case NcType::Byte: return pb::BYTE;
        case NcType::Char: return pb::CHAR;
        case NcType::Short: return pb::SHORT;
        case NcType::Int: return pb::INT;
        case NcType::Float: return pb::FLOAT;
        case NcType::Double: return pb::DOUBLE;
        case NcType::UByte: return pb::UBYTE;
        case NcType::UShort: return pb::USHORT;
        case NcType::UInt: return pb::UINT;
        case NcType::Int64: return pb::LONG;
        case NcType::UInt64: return pb::ULONG;
    }
    throw UsageError("ncstream: unknown element type");
}

pb::Attribute_Type to_old_attribute_type(NcType t) {
    switch (t) {
        case NcType::Char: return pb::Attribute_Type_STRING;
        case NcType::Byte:
        case NcType::UByte: return pb::Attribute_Type_BYTE;
        case NcType::Short:
        case NcType::UShort: return pb::Attribute_Type_SHORT;
        case NcType::Int:
        case NcType::UInt: return pb::Attribute_Type_INT;
        case NcType::Int64:
        case NcType::UInt64: return pb::Attribute_Type_LONG;
        case NcType::Float: return pb::Attribute_Type_FLOAT;
        case NcType::Double: return pb::Attribute_Type_DOUBLE;
    }
    throw UsageError("ncstream: unknown element type");
}

std::optional<NcType> nc_type_from_pb(pb::DataType t, bool unsigned_flag) {
    switch (t) {
        case pb::CHAR: return NcType::Char;
        case pb::BYTE:
        case pb::ENUM1: return unsigned_flag ? NcType::UByte : NcType::Byte;
        case pb::SHORT:
        case pb::ENUM2: return unsigned_flag ? NcType::UShort : NcType::Short;
        case pb::INT:
        case pb::ENUM4: return unsigned_flag ? NcType::UInt : NcType::Int;
        case pb::LONG: return unsigned_flag ? NcType::UInt64 : NcType::Int64;
        case pb::FLOAT: return NcType::Float;
        case pb::DOUBLE: return NcType::Double;
        case pb::UBYTE: return NcType::UByte;
        case pb::USHORT: return NcType::UShort;
        case pb::UINT: return NcType::UInt;
        case pb::ULONG: return NcType::UInt64;
        default: return std::nullopt;
    }
}

std::string to_valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<uint8_t>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = n != 0 && i + n <= s.size();
        for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<uint8_t>(s[i + k]) & 0xc0) == 0x80;
        if (ok && n > 1) {
            // Reject overlong forms, surrogates and values past U+10FFFF.
            uint32_t cp = c & (0x7f >> n);
            for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3f);
            static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= kMin[n] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
        }
        if (ok) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out.push_back(static_cast<char>(0xc0 | (c >> 6)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
            ++i;
        }
    }
    return out;
}

void encode_attribute(const Attribute& a, pb::Attribute* out) {
    out->set_name(to_valid_utf8(a.name));
    out->set_type(to_old_attribute_type(a.type));
    if (a.type == NcType::Char) {
        // A CDM text attribute: one string, len = 1 even when empty (notes 3.3).
        out->set_len(1);
        // Trailing NULs are C terminators or padding (ncgen stores "" as one
        // NUL), not text: dropped, as netcdf-java and netCDF4-python do.
        std::string_view text(reinterpret_cast<const char*>(a.values.data()), a.values.size());
        while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
        out->add_sdata(to_valid_utf8(text));
        out->set_datatype(pb::STRING);
        return;
    }
    const size_t n = a.length();
    if (n > UINT32_MAX) throw UsageError("ncstream: attribute " + a.name + " has more than 2^32-1 values");
    out->set_len(static_cast<uint32_t>(n));
    if (n > 0) {
        std::string data(a.values.begin(), a.values.begin() + static_cast<std::ptrdiff_t>(n * type_size(a.type)));
        swap_to_big_endian(a.type, data.data(), n);
        out->set_data(std::move(data));
    }
    if (is_unsigned_type(a.type)) out->set_unsigned_(true);
    out->set_datatype(to_pb_type(a.type));
}

Attribute decode_attribute(const pb::Attribute& a, const std::string& file, uint64_t offset) {
    // netcdf-java 5.x NcStream.decodeAtt: dataType unless CHAR; else the old
    // type unless STRING; else STRING when there are strings, else CHAR.
    pb::DataType dt;
    if (a.has_datatype() && a.datatype() != pb::CHAR) {
        dt = a.datatype();
    } else if (a.type() != pb::Attribute_Type_STRING) {
        dt = static_cast<pb::DataType>(static_cast<int>(a.type()));  // BYTE..DOUBLE share values
    } else {
        dt = a.sdata_size() > 0 ? pb::STRING : pb::CHAR;
    }
    const std::string where = "attribute " + a.name() + ": ";
    if (dt == pb::STRING) {
        // Several strings have no classic counterpart; we join them with
        // newlines rather than drop any (a choice, not a convention).
        std::string text;
        for (int i = 0; i < a.sdata_size(); ++i) {
            if (i) text.push_back('\n');
            text += a.sdata(i);
        }
        return Attribute::text(a.name(), text);
    }
    if (dt == pb::CHAR) return Attribute::text(a.name(), a.data());
    auto t = nc_type_from_pb(dt, a.unsigned_());
    if (!t) throw FormatError(file, offset, where + "type " + pb::DataType_Name(dt) + " has no netCDF classic counterpart");
    const size_t es = type_size(*t);
    if (a.data().size() != uint64_t{a.len()} * es)
        throw FormatError(file, offset, where + "len " + std::to_string(a.len()) + " needs " +
                                            std::to_string(uint64_t{a.len()} * es) + " data bytes, found " +
                                            std::to_string(a.data().size()));
    Attribute out{a.name(), *t, std::vector<uint8_t>(a.data().begin(), a.data().end())};
    swap_from_big_endian(*t, out.values.data(), a.len());
    return out;
}

std::string escape_name(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (char c : name) {
        if (c == '.' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    return out;
}

std::string unescape_name(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '\\' && i + 1 < name.size()) ++i;
        out.push_back(name[i]);
    }
    return out;
}

}  // namespace ncafs::ncstream
