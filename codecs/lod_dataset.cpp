#include "codecs/lod_dataset.hpp"

#include <algorithm>
#include <cstdint>

#include "codecs/error.hpp"
#include "codecs/strided_source.hpp"

namespace ncafs {

namespace {

// The dimensions LOD views leave whole, by index (see the header).
std::vector<bool> kept_dimensions(const Dataset& d, const std::vector<std::string>& keep) {
    std::vector<bool> kept(d.dimensions.size(), false);
    for (size_t i = 0; i < d.dimensions.size(); ++i)
        kept[i] = d.dimensions[i].unlimited ||
                  std::find(keep.begin(), keep.end(), d.dimensions[i].name) != keep.end();
    for (const auto& v : d.variables) {
        if (v.type == NcType::Char && !v.dimids.empty() && v.dimids.back() < kept.size()) kept[v.dimids.back()] = true;
        const Attribute* bounds = v.find_attribute("bounds");
        if (!bounds || bounds->type != NcType::Char) continue;
        const Variable* b = d.find_variable(bounds->as_text());
        if (b && b->dimids.size() > v.dimids.size() && b->dimids.back() < kept.size()) kept[b->dimids.back()] = true;
    }
    return kept;
}

std::string kept_names(const Dataset& d, const std::vector<bool>& kept) {
    std::string names;
    for (size_t i = 0; i < kept.size(); ++i)
        if (kept[i]) names += (names.empty() ? "" : " ") + d.dimensions[i].name;
    return names;
}

void set_attribute(std::vector<Attribute>& attributes, Attribute a) {
    for (auto& old : attributes)
        if (old.name == a.name) {
            old = std::move(a);
            return;
        }
    attributes.push_back(std::move(a));
}

}  // namespace

bool has_lod_views(const Dataset& dataset) {
    return std::any_of(dataset.variables.begin(), dataset.variables.end(),
                       [](const Variable& v) { return v.dimids.size() >= 2; });
}

Dataset make_lod_dataset(const Dataset& full, int level, const std::vector<std::string>& keep) {
    if (level < 1 || level > kMaxLodLevel)
        throw UsageError("LOD level " + std::to_string(level) + " out of range 1.." + std::to_string(kMaxLodLevel));
    const uint64_t factor = uint64_t{1} << level;
    const std::vector<bool> kept = kept_dimensions(full, keep);
    Dataset lod = full;
    for (size_t i = 0; i < lod.dimensions.size(); ++i) {
        const uint64_t n = lod.dimensions[i].length;
        if (!kept[i]) lod.dimensions[i].length = n / factor + (n % factor != 0 ? 1 : 0);
    }
    for (auto& v : lod.variables) {
        std::vector<uint64_t> strides;
        bool decimated = false;
        for (size_t id : v.dimids) {
            const bool keep_whole = id >= kept.size() || kept[id];
            strides.push_back(keep_whole ? 1 : factor);
            decimated = decimated || !keep_whole;
        }
        if (decimated && v.source) v.source = std::make_shared<const StridedSource>(v.source, std::move(strides));
    }
    set_attribute(lod.attributes, Attribute::numeric("ncafs_lod_level", NcType::Int, std::vector<int32_t>{level}));
    set_attribute(lod.attributes,
                  Attribute::numeric("ncafs_lod_factor", NcType::Int,
                                     std::vector<int32_t>{static_cast<int32_t>(factor)}));
    set_attribute(lod.attributes, Attribute::text("ncafs_lod_kept_dimensions", kept_names(full, kept)));
    return lod;
}

}  // namespace ncafs
