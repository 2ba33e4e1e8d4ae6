#include "aggregation/terms/text_attribute.hpp"

namespace ncafs::agg {

std::string text_attribute(const Variable& v, const char* name) {
    return std::string(text_attribute_view(v, name));
}

std::string_view text_attribute_view(const Variable& v, const char* name) {
    const Attribute* a = v.find_attribute(name);
    if (!a || a->type != NcType::Char) return {};
    std::string_view t(reinterpret_cast<const char*>(a->values.data()), a->values.size());
    while (!t.empty() && t.back() == '\0') t.remove_suffix(1);
    return t;
}

}  // namespace ncafs::agg
