#include "codecs/vds/vds_layout.hpp"

#include <cmath>

#include "codecs/error.hpp"
#include "codecs/json_depth.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::vds {
namespace {

using Json = nlohmann::json;

}  // namespace

void check_json_shape(std::string_view text, const std::string& file) {
    size_t depth = 0;
    uint64_t units = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth) throw FormatError(file, i, "JSON nested deeper than 256 levels");
            units += 8;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        } else if (c == ',') {
            ++units;
        }
        if (units > kMaxJsonUnits)
            throw FormatError(file, i, "JSON holds too many values (over " + std::to_string(kMaxJsonUnits) +
                                           " units: 8 per object or array, 1 per further element)");
    }
}

namespace {

struct Reader {
    const std::string& file;
    [[noreturn]] void fail(const std::string& where, const std::string& reason) const {
        throw FormatError(file, 0, "VolumeDataLayout: " + where + ": " + reason);
    }
    const Json& member(const Json& o, const char* key, const std::string& where) const {
        if (!o.is_object()) fail(where, "not an object");
        auto it = o.find(key);
        if (it == o.end()) fail(where, std::string("missing '") + key + "'");
        return *it;
    }
    std::string text(const Json& o, const char* key, const std::string& where, bool required = true) const {
        if (!required && (!o.is_object() || !o.contains(key))) return {};
        const Json& v = member(o, key, where);
        if (!v.is_string()) fail(where + "." + key, "not a string");
        return v.get<std::string>();
    }
    double number(const Json& o, const char* key, const std::string& where, double fallback, bool required) const {
        if (!required && (!o.is_object() || !o.contains(key))) return fallback;
        const Json& v = member(o, key, where);
        if (!v.is_number()) fail(where + "." + key, "not a number");
        return v.get<double>();
    }
    int64_t integer(const Json& o, const char* key, const std::string& where, int64_t lo, int64_t hi,
                    int64_t fallback, bool required) const {
        const double d = number(o, key, where, static_cast<double>(fallback), required);
        if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != std::floor(d))
            fail(where + "." + key, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
        return static_cast<int64_t>(d);
    }
    // A float32 field (OpenVDS parses every scalar as float32).
    float real32(const Json& o, const char* key, const std::string& where, float fallback) const {
        const double d = number(o, key, where, fallback, false);
        if (!(std::fabs(d) <= 3.4028234663852886e38)) fail(where + "." + key, "outside the float32 range");
        return static_cast<float>(d);
    }
    bool flag(const Json& o, const char* key, const std::string& where) const {
        if (!o.contains(key)) return false;
        const Json& v = o[key];
        if (!v.is_boolean()) fail(where + "." + key, "not a boolean");
        return v.get<bool>();
    }
    // "Prefix_N" -> N, or the position of the name in `names`.
    int64_t enum_suffix(const std::string& s, const std::string& prefix, const std::string& where) const {
        if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() || s.size() > prefix.size() + 4) fail(where, "'" + s + "' unknown");
        int64_t v = 0;
        for (char c : s.substr(prefix.size())) {
            if (c < '0' || c > '9') fail(where, "'" + s + "' unknown");
            v = v * 10 + (c - '0');
        }
        return v;
    }
};

void parse_descriptor(const Reader& r, const Json& d, Layout& l) {
    const std::string w = "layoutDescriptor";
    const int64_t brick = r.enum_suffix(r.text(d, "brickSize", w), "BrickSize_", w + ".brickSize");
    int log2 = 0;
    while ((int64_t{1} << log2) < brick && log2 < 13) ++log2;
    if ((int64_t{1} << log2) != brick || log2 < 5 || log2 > 12) r.fail(w + ".brickSize", "not 32..4096, a power of two");
    l.brick_log2 = log2;
    l.negative_margin = static_cast<int>(r.integer(d, "negativeMargin", w, 0, 1024, 0, false));
    l.positive_margin = static_cast<int>(r.integer(d, "positiveMargin", w, 0, 1024, 0, false));
    if (l.negative_margin + l.positive_margin >= brick) r.fail(w, "margins leave no interior in the brick");
    l.multiplier_2d = static_cast<int>(r.integer(d, "brickSize2DMultiplier", w, 1, 1024, 4, false));
    const std::string lods = r.text(d, "lodLevels", w, false);
    l.lod_levels = (lods.empty() || lods == "LODLevels_None")
                       ? 0 : static_cast<int>(r.enum_suffix(lods, "LODLevels_", w + ".lodLevels"));
    if (l.lod_levels > 12) r.fail(w + ".lodLevels", "more than 12");
    if (r.flag(d, "forceFullResolutionDimension", w))
        l.full_resolution_dimension = static_cast<int>(r.integer(d, "fullResolutionDimension", w, 0, 5, 0, true));
}

void parse_axes(const Reader& r, const Json& axes, Layout& l) {
    if (!axes.is_array() || axes.size() < 2 || axes.size() > kMaxAxes) r.fail("axisDescriptors", "must list 2..6 axes");
    for (size_t i = 0; i < axes.size(); ++i) {
        const std::string w = "axisDescriptors[" + std::to_string(i) + "]";
        Axis a;
        a.name = r.text(axes[i], "name", w);
        a.unit = r.text(axes[i], "unit", w, false);
        a.samples = r.integer(axes[i], "numSamples", w, 1, int64_t{1} << 31, 0, true);
        a.min = r.real32(axes[i], "coordinateMin", w, 0);
        a.max = r.real32(axes[i], "coordinateMax", w, 0);
        l.axes.push_back(std::move(a));
    }
    if (l.full_resolution_dimension >= static_cast<int>(l.axes.size()))
        r.fail("layoutDescriptor.fullResolutionDimension", "not an axis");
}

Format parse_format(const Reader& r, const std::string& s, const std::string& w) {
    static const char* names[] = {"Format_1Bit", "Format_U8", "Format_U16", "Format_R32",
                                  "Format_U32", "Format_R64", "Format_U64"};
    for (int i = 0; i < 7; ++i)
        if (s == names[i]) return static_cast<Format>(i);
    r.fail(w, "unknown format '" + s + "'");
}

void parse_channels(const Reader& r, const Json& channels, Layout& l) {
    if (!channels.is_array() || channels.empty() || channels.size() > 1024)
        r.fail("channelDescriptors", "must list 1..1024 channels");
    for (size_t i = 0; i < channels.size(); ++i) {
        const std::string w = "channelDescriptors[" + std::to_string(i) + "]";
        const Json& j = channels[i];
        Channel c;
        c.name = r.text(j, "name", w);
        c.unit = r.text(j, "unit", w, false);
        c.format = parse_format(r, r.text(j, "format", w), w + ".format");
        const std::string comp = r.text(j, "components", w, false);
        c.components = comp.empty() ? 1 : static_cast<int>(r.enum_suffix(comp, "Components_", w + ".components"));
        if (c.components != 1 && c.components != 2 && c.components != 4) r.fail(w + ".components", "not 1, 2 or 4");
        c.per_trace = r.text(j, "channelMapping", w, false) == "PerTrace";
        c.use_no_value = r.flag(j, "useNoValue", w);
        c.no_value = c.use_no_value ? r.real32(j, "noValue", w, 0) : 0.0f;
        c.scale = r.real32(j, "integerScale", w, 1);
        c.offset = r.real32(j, "integerOffset", w, 0);
        l.channels.push_back(std::move(c));
    }
}

// What a metadata entry becomes: a global attribute in the dataset and in
// every view's header (.nc, .ds, .ncs, .vds); about 4.5 KiB in all in the
// ASan build once the four views are built, 3 KiB counted.
constexpr uint64_t kMetadataEntryCost = 3 << 10;

void parse_metadata(const Reader& r, const Json& metadata, Layout& l) {
    if (metadata.is_null()) return;
    if (!metadata.is_array()) r.fail("metadata", "not an array");
    charge_metadata(metadata.size(), kMetadataEntryCost, "metadata entries");
    for (size_t i = 0; i < metadata.size(); ++i) {
        const std::string w = "metadata[" + std::to_string(i) + "]";
        MetadataEntry m;
        m.category = r.text(metadata[i], "category", w, false);
        m.name = r.text(metadata[i], "name", w);
        m.type = r.text(metadata[i], "type", w, false);
        m.value = r.member(metadata[i], "value", w);
        l.metadata.push_back(std::move(m));
    }
}

}  // namespace

Layout parse_layout(std::string_view text, const std::string& file) {
    check_json_shape(text, file);
    charge_parsed_json(text, "VolumeDataLayout JSON");
    Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded()) throw FormatError(file, 0, "VolumeDataLayout is not valid JSON");
    Reader r{file};
    Layout l;
    parse_descriptor(r, r.member(doc, "layoutDescriptor", "VolumeDataLayout"), l);
    parse_axes(r, r.member(doc, "axisDescriptors", "VolumeDataLayout"), l);
    parse_channels(r, r.member(doc, "channelDescriptors", "VolumeDataLayout"), l);
    parse_metadata(r, doc.contains("metadata") ? doc["metadata"] : Json(), l);
    return l;
}

}  // namespace ncafs::vds
