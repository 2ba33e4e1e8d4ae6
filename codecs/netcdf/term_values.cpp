#include "codecs/netcdf/term_values.hpp"

namespace ncafs::netcdf {

uint64_t TermArray::size() const {
    uint64_t n = 1;
    for (uint64_t s : shape) n *= s;
    return n;
}

std::optional<std::string_view> TermArray::text_at(uint64_t i) const {
    if (i >= text_end.size() || masked[i]) return std::nullopt;
    const uint64_t begin = i ? text_end[i - 1] : 0;
    return std::string_view(text_bytes).substr(begin, text_end[i] - begin);
}

std::optional<int64_t> TermArray::integer_at(uint64_t i) const {
    if (i >= ints.size() || masked[i]) return std::nullopt;
    return ints[i];
}

const uint8_t* TermArray::raw_at(uint64_t i) const {
    if (!numeric_type || i >= masked.size() || masked[i]) return nullptr;
    return bytes.data() + i * type_size(*numeric_type);
}

std::optional<std::string> TermArray::text_attribute(const std::string& name) const {
    for (const auto& [k, v] : text_attributes)
        if (k == name) return v;
    return std::nullopt;
}

uint64_t term_bytes(const TermArray& a) {
    return a.text_bytes.size() + a.text_end.size() * sizeof(uint64_t) + a.masked.size() / 8 + a.bytes.size() +
           a.ints.size() * sizeof(int64_t);
}

}  // namespace ncafs::netcdf
