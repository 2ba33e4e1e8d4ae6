#include "aggregation/zarr_view/zarr_v3_metadata.hpp"

#include <nlohmann/json.hpp>

#include "aggregation/kerchunk_export/zarr_metadata.hpp"
#include "aggregation/kerchunk_export/zarr_values.hpp"

namespace ncafs::agg::zarr_view {

std::string v3_group_json(const std::string& attributes) {
    return "{\"attributes\":" + attributes + ",\"node_type\":\"group\",\"zarr_format\":3}";
}

std::string v3_data_type(NcType type) {
    switch (type) {
        case NcType::Byte: return "int8";
        case NcType::Char: return "uint8";
        case NcType::Short: return "int16";
        case NcType::Int: return "int32";
        case NcType::Float: return "float32";
        case NcType::Double: return "float64";
        case NcType::UByte: return "uint8";
        case NcType::UShort: return "uint16";
        case NcType::UInt: return "uint32";
        case NcType::Int64: return "int64";
        case NcType::UInt64: return "uint64";
    }
    return "uint8";
}

std::string v3_array_json(const Variable& v, const std::vector<std::string>& dimensions, const ZarrGrid& grid,
                          bool big_endian, const std::vector<uint8_t>& fill_native, const std::string& attributes,
                          const DeflatedChunks* stored) {
    nlohmann::json bytes = {{"name", "bytes"}};
    if (type_size(v.type) > 1) bytes["configuration"] = {{"endian", big_endian ? "big" : "little"}};
    nlohmann::json codecs = nlohmann::json::array({bytes});
    if (stored && stored->shuffle_size() > 0)
        codecs.push_back({{"name", "numcodecs.shuffle"}, {"configuration", {{"elementsize", stored->shuffle_size()}}}});
    if (stored) codecs.push_back({{"name", "numcodecs.zlib"}, {"configuration", {{"level", kStoredZlibLevel}}}});
    const nlohmann::json fill = v.type == NcType::Char ? nlohmann::json(fill_native.at(0))
                                                       : kerchunk::zarr_fill_value(v.type, fill_native.data());
    nlohmann::json j = {
        {"zarr_format", 3},
        {"node_type", "array"},
        {"shape", grid.shape},
        {"data_type", v3_data_type(v.type)},
        {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", grid.chunk}}}}},
        {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
        {"fill_value", fill},
        {"codecs", codecs},
        {"dimension_names", dimensions},
        {"attributes", nlohmann::json::parse(attributes)},
    };
    return kerchunk::json_text(j);
}

}  // namespace ncafs::agg::zarr_view
