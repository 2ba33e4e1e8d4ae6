#include "aggregation/write/compared_values.hpp"

#include <sstream>

namespace ncafs::agg::cf_write {

std::string attribute_text(const Attribute* a) {
    if (!a || a->type != NcType::Char) return {};
    std::string t = a->as_text();
    while (!t.empty() && t.back() == '\0') t.pop_back();
    return t;
}

std::string stored_text(const Attribute& a) { return {reinterpret_cast<const char*>(a.values.data()), a.values.size()}; }

std::string value_text(const Attribute* a) {
    if (!a) return "(none)";
    if (a->type == NcType::Char) return "\"" + attribute_text(a) + "\"";
    std::ostringstream o;
    for (size_t i = 0; i < a->length(); ++i) o << (i ? "," : "") << a->as_double(i);
    return o.str();
}

bool same_attribute(const Attribute* a, const Attribute* b) {
    if (!a || !b) return a == b;
    if (a->type == NcType::Char && b->type == NcType::Char) return attribute_text(a) == attribute_text(b);
    return a->type == b->type && a->values == b->values;
}

std::vector<uint8_t> read_whole(const ArraySource& s) {
    std::vector<uint8_t> out(s.element_count() * type_size(s.type()));
    std::vector<uint64_t> start(s.shape().size(), 0);
    if (!out.empty()) s.read(start, s.shape(), ByteOrder::Native, out.data());
    return out;
}

}  // namespace ncafs::agg::cf_write
