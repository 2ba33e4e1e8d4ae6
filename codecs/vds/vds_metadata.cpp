// DatasetBuilder::add_metadata: the layout's metadata entries as global
// attributes named CATEGORY_NAME. Int* -> int, Float* -> float, Double* ->
// double (vectors as several values), String and BLOB (base64 text) -> text.
// Entries whose value does not match their type are left out.
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codecs/vds/vds_dataset_builder.hpp"

namespace ncafs::vds {
namespace {

template <typename T>
std::optional<std::vector<T>> numbers(const nlohmann::json& v) {
    std::vector<T> out;
    auto one = [&](const nlohmann::json& x) {
        if (!x.is_number()) return false;
        const double d = x.get<double>();
        if constexpr (std::is_integral_v<T>) {
            if (!(d >= -2147483648.0 && d <= 2147483647.0)) return false;
        } else if constexpr (std::is_same_v<T, float>) {
            if (!(std::abs(d) <= 3.4028234663852886e38)) return false;
        }
        out.push_back(static_cast<T>(d));
        return true;
    };
    if (v.is_array()) {
        if (v.empty() || v.size() > 4) return std::nullopt;
        for (const auto& x : v)
            if (!one(x)) return std::nullopt;
    } else if (!one(v)) {
        return std::nullopt;
    }
    return out;
}

std::optional<Attribute> metadata_attribute(const MetadataEntry& m, const std::string& name) {
    const std::string& t = m.type;
    if (t == "String" || t == "BLOB") {
        if (!m.value.is_string()) return std::nullopt;
        return Attribute::text(name, m.value.get<std::string>());
    }
    if (t.rfind("Int", 0) == 0) {
        if (auto v = numbers<int32_t>(m.value)) return Attribute::numeric(name, NcType::Int, *v);
    } else if (t.rfind("Float", 0) == 0) {
        if (auto v = numbers<float>(m.value)) return Attribute::numeric(name, NcType::Float, *v);
    } else if (t.rfind("Double", 0) == 0) {
        if (auto v = numbers<double>(m.value)) return Attribute::numeric(name, NcType::Double, *v);
    }
    return std::nullopt;
}

}  // namespace

void DatasetBuilder::add_metadata() {
    // Names taken, and per name the repeats met so far: a repeated name gets
    // one "_", later ones a number ("name_2"), never a rescan of the
    // attributes nor a name growing with every repeat.
    std::unordered_set<std::string> taken;
    for (const auto& a : dataset_.attributes) taken.insert(a.name);
    std::unordered_map<std::string, uint64_t> repeats;
    for (const auto& m : layout_.metadata) {
        const std::string base = legal_name(m.category.empty() ? m.name : m.category + "_" + m.name, "metadata");
        std::string name = base;
        for (uint64_t& k = repeats[base]; taken.count(name); ++k) name = base + (k == 0 ? "_" : "_" + std::to_string(k + 1));
        taken.insert(name);
        if (auto a = metadata_attribute(m, name)) dataset_.attributes.push_back(std::move(*a));
    }
}

}  // namespace ncafs::vds
