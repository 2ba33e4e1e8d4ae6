#include "aggregation/zarr_store/zarr_v3.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "codecs/zarr/zarr_array.hpp"

namespace ncafs::agg {

namespace {

using json = nlohmann::json;

[[noreturn]] void refuse_v3(const std::string& why) { throw std::runtime_error(why); }

// What a codec list comes to.
struct Chain {
    bool fortran = false, big_endian = false, crc32c = false;
    json filters = json::array();  // v2 codec objects, in encoding order
    std::optional<json> sharding;  // the sharding_indexed configuration
};

// A JSON integer >= 0 (parsed texts give unsigned numbers, built JSON signed ones).
bool is_count(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

std::string codec_name(const json& c) {
    if (c.is_string()) return c.get<std::string>();
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) refuse_v3("a codec without a name: " + c.dump());
    return c["name"].get<std::string>();
}

json codec_config(const json& c) {
    if (!c.is_object() || !c.contains("configuration")) return json::object();
    if (!c["configuration"].is_object()) refuse_v3("a codec configuration is not an object");
    return c["configuration"];
}

// transpose: the identity or the reversal (order "F"); other permutations are refused.
bool is_reversal(const json& config, size_t rank) {
    const json order = config.value("order", json());
    if (!order.is_array() || order.size() != rank) refuse_v3("transpose order " + order.dump() + " does not fit the rank");
    bool identity = true, reversal = true;
    for (size_t k = 0; k < rank; ++k) {
        if (!is_count(order[k])) refuse_v3("transpose order " + order.dump() + " is not a permutation");
        const uint64_t v = order[k].get<uint64_t>();
        identity &= v == k;
        reversal &= v == rank - 1 - k;
    }
    if (!identity && !reversal)
        refuse_v3("transpose order " + order.dump() + " (only the identity and the reversal are supported)");
    return reversal && !identity;
}

bool big_endian_of(const json& config) {
    const std::string endian = zarr::string_member(config, "endian", "little");
    if (endian != "little" && endian != "big") refuse_v3("bytes endian \"" + endian + "\"");
    return endian == "big";
}

// gzip, zstd, blosc and zlib streams describe themselves: their configurations are not needed to
// decode; numcodecs.shuffle's element size is that of the data type (as zarrita and zarr-python read it).
void add_bytes_codec(Chain& chain, const std::string& name, size_t element_size) {
    if (chain.crc32c) refuse_v3("crc32c is followed by " + name + ": only a last crc32c is supported");
    if (name == "crc32c")
        chain.crc32c = true;
    else if (name == "gzip")
        chain.filters.push_back({{"id", "gzip"}});
    else if (name == "zstd")
        chain.filters.push_back({{"id", "zstd"}});
    else if (name == "blosc")
        chain.filters.push_back({{"id", "blosc"}});
    else if (name == "numcodecs.zlib")
        chain.filters.push_back({{"id", "zlib"}});
    else if (name == "numcodecs.shuffle")
        chain.filters.push_back({{"id", "shuffle"}, {"elementsize", element_size}});
    else
        refuse_v3("the codec \"" + name +
                  "\" is not supported (supported: transpose, bytes, gzip, zstd, blosc, numcodecs.zlib, "
                  "numcodecs.shuffle, crc32c, sharding_indexed)");
}

Chain parse_chain(const json& codecs, size_t rank, bool inner, size_t element_size) {
    if (!codecs.is_array()) refuse_v3("codecs is not a list");
    if (codecs.size() > 8) refuse_v3(std::to_string(codecs.size()) + " codecs (more than 8)");
    Chain chain;
    if (codecs.empty()) return chain;  // zarrita writes [] for unfiltered little-endian chunks, and reads them so
    bool have_bytes = false;
    for (const auto& c : codecs) {
        const std::string name = codec_name(c);
        const json config = codec_config(c);
        if (name == "transpose") {
            if (have_bytes) refuse_v3("transpose after the bytes codec");
            chain.fortran = is_reversal(config, rank) != chain.fortran;
        } else if (name == "bytes" || name == "sharding_indexed") {
            if (have_bytes) refuse_v3("two array-to-bytes codecs");
            have_bytes = true;
            if (name == "bytes")
                chain.big_endian = big_endian_of(config);
            else if (inner)
                refuse_v3("sharding inside a shard is not supported");
            else
                chain.sharding = config;
        } else {
            if (!have_bytes) refuse_v3("the codec \"" + name + "\" comes before the bytes codec");
            add_bytes_codec(chain, name, element_size);
        }
    }
    if (!have_bytes) refuse_v3("no bytes codec");
    if (chain.sharding && (chain.fortran || !chain.filters.empty() || chain.crc32c))
        refuse_v3("codecs around sharding_indexed are not supported");
    return chain;
}

std::vector<uint64_t> lengths(const json& j, const char* what, size_t rank) {
    if (!j.is_array() || j.size() != rank)
        refuse_v3(std::string(what) + " " + j.dump() + " does not fit the rank " + std::to_string(rank));
    std::vector<uint64_t> out;
    for (const auto& v : j) {
        if (!is_count(v) || v.get<uint64_t>() == 0) refuse_v3(std::string(what) + " holds " + v.dump());
        out.push_back(v.get<uint64_t>());
    }
    return out;
}

ShardLayout shard_layout(const json& config, const std::vector<uint64_t>& shard_shape,
                         const std::vector<uint64_t>& inner) {
    ShardLayout s;
    for (size_t k = 0; k < inner.size(); ++k) {
        if (shard_shape[k] % inner[k] != 0)
            refuse_v3("shard shape " + json(shard_shape).dump() + " is not a multiple of the chunk shape " +
                 json(inner).dump());
        s.chunks_per_shard.push_back(shard_shape[k] / inner[k]);
        if (s.chunks_per_shard.back() > kMaxChunksPerShard / s.chunks)
            refuse_v3("more than " + std::to_string(kMaxChunksPerShard) + " chunks per shard");
        s.chunks *= s.chunks_per_shard.back();
    }
    const std::string where = zarr::string_member(config, "index_location", "end");
    if (where != "end" && where != "start") refuse_v3("index_location \"" + where + "\"");
    s.index_at_end = where == "end";
    const Chain index = parse_chain(config.value("index_codecs", json()), inner.size() + 1, true, 8);
    if (index.fortran || !index.filters.empty()) refuse_v3("index codecs other than bytes and crc32c are not supported");
    s.index_big_endian = index.big_endian;
    s.index_crc32c = index.crc32c;
    return s;
}

std::string v2_dtype(const std::string& t, bool big_endian) {
    static const std::pair<const char*, const char*> kTypes[] = {
        {"bool", "b1"},   {"int8", "i1"},  {"uint8", "u1"},  {"int16", "i2"},   {"uint16", "u2"}, {"int32", "i4"},
        {"uint32", "u4"}, {"int64", "i8"}, {"uint64", "u8"}, {"float32", "f4"}, {"float64", "f8"}};
    for (const auto& [name, code] : kTypes)
        if (t == name) return std::string(code[1] == '1' ? "|" : big_endian ? ">" : "<") + code;
    refuse_v3("data_type \"" + t + "\" is not one netCDF can hold");
}

// A v3 fill_value as the v2 reader takes it (hex floats turned into numbers).
json v2_fill(const json& fill, const std::string& type) {
    if (!fill.is_string()) return fill;
    const std::string s = fill.get<std::string>();
    if (s.rfind("0x", 0) != 0) return fill;
    const bool single = type == "float32";
    if (!single && type != "float64") refuse_v3("fill_value " + s + " for " + type);
    if (s.size() != (single ? 10u : 18u) || s.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
        refuse_v3("fill_value " + s + " is not " + type + " bits");
    const uint64_t bits = std::stoull(s.substr(2), nullptr, 16);
    double v;
    if (single) {
        float f;
        const uint32_t b = static_cast<uint32_t>(bits);
        std::memcpy(&f, &b, 4);
        v = f;
    } else {
        std::memcpy(&v, &bits, 8);
    }
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

void parse_key_encoding(const json& node, ZarrKeyLayout& layout) {
    const json enc = node.value("chunk_key_encoding", json{{"name", "default"}});
    const std::string name = codec_name(enc);
    if (name != "default" && name != "v2") refuse_v3("chunk_key_encoding \"" + name + "\"");
    layout.default_encoding = name == "default";
    const std::string sep = zarr::string_member(codec_config(enc), "separator", layout.default_encoding ? "/" : ".");
    if (sep != "/" && sep != ".") refuse_v3("chunk key separator \"" + sep + "\"");
    layout.separator = sep[0];
}

json attributes_of(const json& node, size_t rank) {
    json zattrs = node.value("attributes", json::object());
    if (!zattrs.is_object()) refuse_v3("attributes is not an object");
    const json names = node.value("dimension_names", json());
    if (names.is_array() && names.size() == rank) {
        bool all = true;
        for (const auto& n : names) all &= n.is_string() && !n.get<std::string>().empty();
        if (all) zattrs["_ARRAY_DIMENSIONS"] = names;
    }
    return zattrs;
}

}  // namespace

V3Array translate_v3_array(const json& node) {
    if (node.value("zarr_format", json()) != 3) refuse_v3("zarr_format is not 3");
    if (node.value("node_type", json()) != "array") refuse_v3("node_type is not \"array\"");
    if (const json t = node.value("storage_transformers", json::array()); !t.is_array() || !t.empty())
        refuse_v3("storage transformers are not supported");
    const json shape = node.value("shape", json());
    if (!shape.is_array() || shape.size() > 32) refuse_v3("shape " + shape.dump() + " is not a list of at most 32 lengths");
    const size_t rank = shape.size();
    const json grid = node.value("chunk_grid", json());
    if (codec_name(grid) != "regular") refuse_v3("chunk_grid is not \"regular\"");
    const std::vector<uint64_t> outer = lengths(codec_config(grid).value("chunk_shape", json()), "chunk_shape", rank);
    if (!node.contains("data_type") || !node["data_type"].is_string()) refuse_v3("data_type is not a type name");
    const std::string type = node["data_type"].get<std::string>();
    V3Array out;
    out.layout.v3 = true;
    out.layout.rank = rank;
    parse_key_encoding(node, out.layout);
    const std::string little = v2_dtype(type, false);  // "<f4": its last digit is the element size
    const size_t element_size = static_cast<size_t>(little.back() - '0');
    Chain chain = parse_chain(node.value("codecs", json()), rank, false, element_size);
    std::vector<uint64_t> inner = outer;
    if (chain.sharding) {
        inner = lengths(chain.sharding->value("chunk_shape", json()), "sharding chunk_shape", rank);
        out.layout.shards = shard_layout(*chain.sharding, outer, inner);
        chain = parse_chain(chain.sharding->value("codecs", json()), rank, true, element_size);
    }
    out.layout.chunk_crc32c = chain.crc32c;
    out.zarray = {{"zarr_format", 2},
                  {"shape", shape},
                  {"chunks", inner},
                  {"dtype", v2_dtype(type, chain.big_endian)},
                  {"order", chain.fortran ? "F" : "C"},
                  {"fill_value", v2_fill(node.value("fill_value", json()), type)},
                  {"compressor", nullptr},
                  {"filters", chain.filters.empty() ? json() : chain.filters},
                  {"dimension_separator", "."}};
    out.zattrs = attributes_of(node, rank);
    return out;
}

std::string v3_chunk_key(const ZarrKeyLayout& layout, const std::vector<uint64_t>& index) {
    std::string key = layout.default_encoding ? "c" : "";
    for (size_t k = 0; k < index.size(); ++k) {
        if (!key.empty()) key += layout.separator;
        key += std::to_string(index[k]);
    }
    return key.empty() ? "0" : key;
}

}  // namespace ncafs::agg
