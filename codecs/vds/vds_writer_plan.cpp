#include "codecs/vds/vds_writer_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "codecs/array_source.hpp"
#include "codecs/vds/unit_axis_source.hpp"

namespace ncafs::vds {
namespace {

struct TypeMapping {
    Format format;
    float offset;  // integerOffset: signed types ride on the unsigned formats
};

// The type map of docs/formats/vds-writer.md; nullopt: not representable.
std::optional<TypeMapping> mapping_of(NcType t) {
    switch (t) {
        case NcType::Float: return TypeMapping{Format::R32, 0};
        case NcType::Double: return TypeMapping{Format::R64, 0};
        case NcType::UByte: return TypeMapping{Format::U8, 0};
        case NcType::UShort: return TypeMapping{Format::U16, 0};
        case NcType::UInt: return TypeMapping{Format::U32, 0};
        case NcType::UInt64: return TypeMapping{Format::U64, 0};
        case NcType::Short: return TypeMapping{Format::U16, -32768.0f};
        case NcType::Byte: return TypeMapping{Format::U8, -128.0f};
        case NcType::Int: return TypeMapping{Format::R64, 0};  // exact
        default: return std::nullopt;
    }
}

bool representable_shape(const Dataset& ds, const Variable& v, size_t min_rank) {
    if (v.dimids.size() < min_rank || v.dimids.size() > kMaxAxes || !v.source) return false;
    for (size_t id : v.dimids) {
        const uint64_t n = ds.dimensions[id].length;
        if (n == 0 || n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return false;
    }
    return true;
}

// Evenly spaced 1-D coordinate values: (first, last); nullopt otherwise.
std::optional<std::pair<double, double>> even_coordinates(const Dataset& ds, size_t dimid,
                                                          const std::function<bool(const ArraySource&)>& may_read) {
    const Dimension& dim = ds.dimensions[dimid];
    const Variable* c = ds.find_variable(dim.name);
    if (!c || c->dimids.size() != 1 || c->dimids[0] != dimid || !c->source || !mapping_of(c->type) ||
        dim.length > (1u << 20))  // longer coordinates: index coordinates (bounded memory)
        return std::nullopt;
    if (may_read && !may_read(*c->source)) return std::nullopt;  // remote values: not at a stat
    std::vector<double> v(dim.length);
    try {
        const uint64_t start = 0, count = dim.length;
        std::vector<uint8_t> raw(dim.length * type_size(c->type));
        c->source->read({&start, 1}, {&count, 1}, ByteOrder::Native, raw.data());
        for (size_t i = 0; i < v.size(); ++i) v[i] = element_as_double(c->type, raw.data(), i);
    } catch (const std::exception&) {
        return std::nullopt;  // unreadable coordinates: index coordinates
    }
    if (v.size() == 1) return std::make_pair(v[0], v[0]);
    const double step = (v.back() - v.front()) / static_cast<double>(v.size() - 1);
    for (size_t i = 0; i < v.size(); ++i) {
        const double want = v.front() + step * static_cast<double>(i);
        if (!std::isfinite(v[i]) || std::fabs(v[i] - want) > 1e-6 * std::max(std::fabs(step), 1e-300)) return std::nullopt;
    }
    return std::make_pair(v.front(), v.back());
}

// Axes, VDS order (dim 0 = last netCDF dim); index-coordinate dims listed in *index_dims.
std::vector<Axis> make_axes(const Dataset& ds, const Variable& v, std::string* index_dims,
                            const std::function<bool(const ArraySource&)>& may_read) {
    std::vector<Axis> axes;
    for (size_t k = v.dimids.size(); k-- > 0;) {
        const Dimension& dim = ds.dimensions[v.dimids[k]];
        Axis a;
        a.name = dim.name;
        a.samples = static_cast<int64_t>(dim.length);
        if (const Variable* c = ds.find_variable(dim.name))
            if (const Attribute* u = c->find_attribute("units"); u && u->type == NcType::Char) a.unit = u->as_text();
        if (auto range = even_coordinates(ds, v.dimids[k], may_read)) {
            a.min = static_cast<float>(range->first);
            a.max = static_cast<float>(range->second);
        } else {
            a.min = 0;
            a.max = static_cast<float>(dim.length - 1);
            *index_dims += (index_dims->empty() ? "" : " ") + dim.name;
        }
        axes.push_back(std::move(a));
    }
    return axes;
}

// valueRange is metadata for viewers: from valid_range or actual_range when
// given (no data is read to find it), else the range the format's codes span.
void set_value_range(const Variable& v, const Channel& c, WriterChannel& w) {
    for (const char* name : {"valid_range", "actual_range"})
        if (const Attribute* a = v.find_attribute(name); a && a->type != NcType::Char && a->length() == 2) {
            w.range_min = static_cast<float>(a->as_double(0));
            w.range_max = static_cast<float>(a->as_double(1));
            return;
        }
    if (c.format == Format::U8 || c.format == Format::U16) {
        w.range_min = c.offset;
        w.range_max = c.offset + (c.format == Format::U8 ? 254.0f : 65534.0f);
    }
}

// True when float32 holds an integer fill exactly (compared as integers:
// a double would round 2^64-2 to 2^64 and call it exact).
template <typename T>
bool float32_holds(T value) {
    const float f = static_cast<float>(value);
    const double limit = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;  // 2^32 or 2^64, exact
    return static_cast<double>(f) < limit && static_cast<T>(f) == value;
}

// Whether a _FillValue (one element of `type`, native order) can be the
// channel's noValue (docs/formats/vds-writer.md "NoValue"): the JSON holds a
// finite float32 (never null), so R32/R64 need float32(fill) finite; U8/U16
// hold any fill as their NoValue code; U32/U64 only a fill float32 holds
// exactly. Otherwise the channel has no NoValue and fills are stored as
// values like any other.
bool no_value_holds(NcType type, Format format, const std::vector<uint8_t>& fill) {
    switch (format) {
        case Format::U8:
        case Format::U16: return true;
        case Format::U32: {
            uint32_t u;
            std::memcpy(&u, fill.data(), 4);
            return float32_holds(u);
        }
        case Format::U64: {
            uint64_t u;
            std::memcpy(&u, fill.data(), 8);
            return float32_holds(u);
        }
        default: {
            const double d = element_as_double(type, fill.data(), 0);
            return std::isfinite(d) && std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max());
        }
    }
}

// The channel of one variable; its fill (when _FillValue is set and
// no_value_holds) becomes noValue.
std::pair<Channel, WriterChannel> make_channel(const Variable& v, size_t index, const TypeMapping& m) {
    Channel c;
    c.name = v.name;
    if (const Attribute* u = v.find_attribute("units"); u && u->type == NcType::Char) c.unit = u->as_text();
    c.format = m.format;
    c.offset = m.offset;
    WriterChannel w{index, v.source, v.type, std::nullopt};
    set_value_range(v, c, w);
    const Attribute* fill = v.find_attribute("_FillValue");
    if (fill && fill->type == v.type && fill->length() == 1 && no_value_holds(v.type, m.format, fill->values)) {
        c.use_no_value = true;
        c.no_value = static_cast<float>(fill->as_double());
        w.fill = fill->values;
    }
    return {c, w};
}

// The largest variable of rank 2..6 with a VDS type; without one, the
// largest of rank 1 (held with a unit axis, see kUnitAxis).
std::optional<size_t> primary_variable(const Dataset& ds) {
    for (size_t min_rank : {2, 1}) {
        std::optional<size_t> best;
        uint64_t best_count = 0;
        for (size_t i = 0; i < ds.variables.size(); ++i) {
            const Variable& v = ds.variables[i];
            if (!representable_shape(ds, v, min_rank) || !mapping_of(v.type)) continue;
            const uint64_t n = element_count(ds.shape(v));
            if (!best || n > best_count) best = i, best_count = n;
        }
        if (best) return best;
    }
    return std::nullopt;
}

// VDS dimension 1 of a volume made from 1-D variables: one sample.
constexpr const char* kUnitAxis = "ncafs_unit_axis";

Axis unit_axis() {
    Axis a;
    a.name = kUnitAxis;
    a.samples = 1;
    a.min = a.max = 0;
    return a;
}

std::shared_ptr<const ArraySource> channel_source(const Variable& v) {
    if (v.dimids.size() == 1) return std::make_shared<UnitAxisSource>(v.source);
    return v.source;
}

}  // namespace

std::optional<WriterPlan> plan_vds(const Dataset& ds, int lods, std::string* why,
                                   const std::function<bool(const ArraySource&)>& may_read_coordinates) {
    const auto primary = primary_variable(ds);
    if (!primary) {
        if (why) *why = "no variable of rank 1 to 6 with a VDS type";
        return std::nullopt;
    }
    const Variable& pv = ds.variables[*primary];
    WriterPlan plan;
    plan.layout.brick_log2 = 6;
    plan.layout.multiplier_2d = 4;
    plan.layout.lod_levels = std::clamp(lods, 0, kMaxVdsLods);
    std::string index_dims;
    plan.layout.axes = make_axes(ds, pv, &index_dims, may_read_coordinates);
    if (!index_dims.empty())
        plan.layout.metadata.push_back({"ncafs", "IndexCoordinates", "String", index_dims});
    if (pv.dimids.size() == 1) {
        plan.layout.axes.push_back(unit_axis());
        plan.layout.metadata.push_back({"ncafs", "UnitAxis", "String", kUnitAxis});
    }
    plan.group = plan.layout.axes.size() == 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2};
    for (size_t i = 0; i < ds.variables.size(); ++i) {
        const Variable& v = ds.variables[i];
        if (i != *primary && v.dimids != pv.dimids) continue;
        const auto m = mapping_of(v.type);
        if (!m) {
            plan.omitted.push_back(v.name + ": type " + std::string(type_name(v.type)) + " has no VDS format");
            continue;
        }
        auto [channel, writer] = make_channel(v, i, *m);
        writer.source = channel_source(v);
        plan.layout.channels.push_back(channel);
        plan.channels.push_back(writer);
        if (i == *primary) {  // the primary channel first
            std::rotate(plan.layout.channels.begin(), plan.layout.channels.end() - 1, plan.layout.channels.end());
            std::rotate(plan.channels.begin(), plan.channels.end() - 1, plan.channels.end());
        }
    }
    if (!plan.omitted.empty()) {
        std::string list;
        for (const auto& o : plan.omitted) list += (list.empty() ? "" : "; ") + o;
        plan.layout.metadata.push_back({"ncafs", "OmittedVariables", "String", list});
    }
    return plan;
}

}  // namespace ncafs::vds
