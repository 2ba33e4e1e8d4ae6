// DatasetBuilder::add_metadata: the layout's metadata entries as global
// attributes named CATEGORY_NAME. Int* -> int, Float* -> float, Double* ->
// double (vectors as several values), String and BLOB (base64 text) -> text.
// Entries whose value does not match their type are left out.
#include <optional>

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
    for (const auto& m : layout_.metadata) {
        std::string name = legal_name(m.category.empty() ? m.name : m.category + "_" + m.name, "metadata");
        while (dataset_.find_attribute(name)) name += "_";
        if (auto a = metadata_attribute(m, name)) dataset_.attributes.push_back(std::move(*a));
    }
}

}  // namespace ncafs::vds
