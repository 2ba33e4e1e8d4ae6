#include "aggregation/terms/text_attribute.hpp"

namespace ncafs::agg {

std::string text_attribute(const Variable& v, const char* name) {
    const Attribute* a = v.find_attribute(name);
    if (!a || a->type != NcType::Char) return {};
    std::string t = a->as_text();
    while (!t.empty() && t.back() == '\0') t.pop_back();
    return t;
}

}  // namespace ncafs::agg
