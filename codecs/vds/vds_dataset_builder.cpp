#include "codecs/vds/vds_dataset_builder.hpp"

#include "codecs/error.hpp"
#include "codecs/memory_source.hpp"

namespace ncafs::vds {
namespace {

// Coordinate of LOD0 sample i: min + i*(max-min)/(n-1) (notes §2.1).
double coordinate(const Axis& a, int64_t i) {
    if (a.samples <= 1) return a.min;
    return static_cast<double>(a.min) +
           static_cast<double>(i) * (static_cast<double>(a.max) - static_cast<double>(a.min)) /
               static_cast<double>(a.samples - 1);
}

std::shared_ptr<const ArraySource> coordinate_source(const Axis& a, int shift, const std::string& name) {
    const int64_t n = ((a.samples - 1) >> shift) + 1;
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t m = 0; m < n; ++m) values[static_cast<size_t>(m)] = coordinate(a, m << shift);
    std::vector<uint8_t> bytes(values.size() * sizeof(double));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return std::make_shared<const MemorySource>(NcType::Double, std::vector<uint64_t>{static_cast<uint64_t>(n)},
                                                std::move(bytes), name);
}

// _FillValue of a channel with useNoValue, in its netCDF type.
Attribute fill_value(const Channel& c) {
    ChunkStatus s{ChunkStatus::Kind::NoValue, 0};
    const auto e = status_element(c, s);
    const NcType t = nc_type_of(c.format);
    return Attribute{"_FillValue", t, std::vector<uint8_t>(e.begin(), e.begin() + static_cast<ptrdiff_t>(type_size(t)))};
}

}  // namespace

std::string legal_name(const std::string& name, const std::string& fallback) {
    std::string out;
    for (char c : name) out += (c == '/' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '_' : c;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.empty() ? fallback : out;
}

DatasetBuilder::DatasetBuilder(std::string path, const Layout& layout)
    : layout_(layout), lod_dims_(static_cast<size_t>(layout.lod_levels) + 1) {
    dataset_.origin = std::move(path);
}

std::string DatasetBuilder::unique_variable_name(std::string name) const {
    auto taken = [&](const std::string& n) {
        return dataset_.find_variable(n) != nullptr || dataset_.find_dimension(n).has_value();
    };
    while (taken(name)) name += "_";
    return name;
}

std::vector<size_t> DatasetBuilder::dimensions_of_lod(int lod) {
    auto& dims = lod_dims_[static_cast<size_t>(lod)];
    if (!dims.empty()) return dims;
    const size_t rank = layout_.axes.size();
    for (size_t k = 0; k < rank; ++k) {
        const int d = static_cast<int>(rank - 1 - k);
        const Axis& a = layout_.axes[static_cast<size_t>(d)];
        const int shift = decimated(layout_, d) ? lod : 0;
        if (lod > 0 && shift == 0) {  // the full-resolution dim: shares the LOD0 dimension
            dims.push_back(dimensions_of_lod(0)[k]);
            continue;
        }
        std::string name = legal_name(a.name, "dim" + std::to_string(d));
        if (lod > 0) name += "_lod" + std::to_string(lod);
        name = unique_variable_name(name);
        dataset_.dimensions.push_back({name, static_cast<uint64_t>(((a.samples - 1) >> shift) + 1), false});
        const size_t dimid = dataset_.dimensions.size() - 1;
        Variable v{name, NcType::Double, {dimid}, {}, coordinate_source(a, shift, name)};
        if (!a.unit.empty()) v.attributes.push_back(Attribute::text("units", a.unit));
        dataset_.variables.push_back(std::move(v));
        dims.push_back(dimid);
    }
    return dims;
}

void DatasetBuilder::add_channel(const Channel& c, int lod, std::shared_ptr<const ArraySource> source) {
    Variable v;
    v.dimids = dimensions_of_lod(lod);
    std::string name = legal_name(c.name, "channel");
    if (lod > 0) name += "_lod" + std::to_string(lod);
    v.name = unique_variable_name(name);
    v.type = source->type();
    v.source = std::move(source);
    if (!c.unit.empty()) v.attributes.push_back(Attribute::text("units", c.unit));
    if (c.format == Format::U8 || c.format == Format::U16) {
        v.attributes.push_back(Attribute::numeric("scale_factor", NcType::Float, std::vector<float>{c.scale}));
        v.attributes.push_back(Attribute::numeric("add_offset", NcType::Float, std::vector<float>{c.offset}));
    }
    if (c.use_no_value) v.attributes.push_back(fill_value(c));
    dataset_.variables.push_back(std::move(v));
}

}  // namespace ncafs::vds
