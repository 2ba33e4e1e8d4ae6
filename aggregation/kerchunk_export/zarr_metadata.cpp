#include "aggregation/kerchunk_export/zarr_metadata.hpp"

#include <algorithm>

#include "aggregation/kerchunk_export/zarr_values.hpp"
#include "codecs/zarr/zarr_dtype.hpp"

namespace ncafs::agg::kerchunk {

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

void append_json_string(std::string& out, const std::string& s) {
    // What the serializer escapes: quote, backslash, control characters;
    // invalid UTF-8 is replaced. Bytes outside 0x20-0x7e go through it.
    const bool as_is = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; });
    if (!as_is) {
        out += json_text(s);
        return;
    }
    out += '"';
    out += s;
    out += '"';
}

std::string zgroup_text() { return json_text({{"zarr_format", 2}}); }

std::string zattrs_text(const std::vector<Attribute>& attributes, const std::vector<std::string>* dimensions) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& a : attributes)
        if (a.name != "_FillValue") j[a.name] = attribute_json(a);
    if (dimensions) j["_ARRAY_DIMENSIONS"] = *dimensions;
    return json_text(j);
}

std::string zarray_text(const std::vector<uint64_t>& shape, const ChunkGrid& grid, NcType type,
                        const nlohmann::json& fill, const nlohmann::json& compressor) {
    nlohmann::json filters = nullptr;
    if (!grid.filters.empty()) {
        filters = nlohmann::json::array();
        for (const auto& f : grid.filters) filters.push_back(codec_json(f));
    }
    nlohmann::json j = {{"zarr_format", 2},
                        {"shape", shape},
                        {"chunks", grid.chunk},
                        {"dtype", zarr::zarr_dtype_of(type, grid.big_endian)},
                        {"fill_value", fill},
                        {"order", "C"},
                        {"compressor", compressor},
                        {"filters", filters}};
    return json_text(j);
}

}  // namespace ncafs::agg::kerchunk
