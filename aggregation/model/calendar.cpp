#include "aggregation/model/calendar.hpp"

#include <cctype>

namespace ncafs::agg {

namespace {

std::string trimmed_lower(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    std::string out = s.substr(a, b - a);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::string canonical_calendar(const std::string& calendar) {
    const std::string s = trimmed_lower(calendar);
    if (s.empty() || s == "gregorian" || s == "standard") return "standard";
    if (s == "365_day") return "noleap";
    if (s == "366_day") return "all_leap";
    return s;
}

bool same_calendar(const std::string& a, const std::string& b) { return canonical_calendar(a) == canonical_calendar(b); }

}  // namespace ncafs::agg
