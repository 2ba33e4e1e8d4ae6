#include "codecs/dataset.hpp"

#include "codecs/checked_math.hpp"

namespace ncafs {

Attribute Attribute::text(std::string name, std::string_view value) {
    return Attribute{std::move(name), NcType::Char, std::vector<uint8_t>(value.begin(), value.end())};
}

const Attribute* Variable::find_attribute(std::string_view wanted) const {
    for (const auto& a : attributes)
        if (a.name == wanted) return &a;
    return nullptr;
}

std::optional<size_t> Dataset::unlimited_dimension() const {
    for (size_t i = 0; i < dimensions.size(); ++i)
        if (dimensions[i].unlimited) return i;
    return std::nullopt;
}

std::vector<uint64_t> Dataset::shape(const Variable& v) const {
    std::vector<uint64_t> s;
    s.reserve(v.dimids.size());
    for (size_t id : v.dimids) s.push_back(dimensions.at(id).length);
    return s;
}

const Variable* Dataset::find_variable(std::string_view wanted) const {
    for (const auto& v : variables)
        if (v.name == wanted) return &v;
    return nullptr;
}

const Attribute* Dataset::find_attribute(std::string_view wanted) const {
    for (const auto& a : attributes)
        if (a.name == wanted) return &a;
    return nullptr;
}

std::optional<size_t> Dataset::find_dimension(std::string_view wanted) const {
    for (size_t i = 0; i < dimensions.size(); ++i)
        if (dimensions[i].name == wanted) return i;
    return std::nullopt;
}

uint64_t element_count(std::span<const uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) {
        if (d == 0) return 0;
        n = checked::mul(n, d).value_or(UINT64_MAX);  // saturates: never a small wrapped count
    }
    return n;
}

}  // namespace ncafs
