#include "aggregation/model/units_conversion.hpp"

#include "aggregation/model/calendar.hpp"

#include <udunits2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "io/mutex.hpp"

namespace ncafs::agg {

namespace {

// UDUNITS-2 is not thread-safe and loading its XML database is slow: one
// system, loaded on first use, every call under this mutex.
Mutex& udunits_mutex() {
    static Mutex m;  // lock order: a leaf (UDUNITS-2 only)
    return m;
}

ut_system* udunits_system() {
    static ut_system* sys = [] {
        ut_set_error_message_handler(ut_ignore);
        ut_system* s = ut_read_xml(nullptr);
        return s;
    }();
    if (!sys) throw std::runtime_error("cannot load the UDUNITS-2 database");
    return sys;
}

struct UnitDeleter {
    void operator()(ut_unit* u) const { ut_free(u); }
};
using UnitPtr = std::unique_ptr<ut_unit, UnitDeleter>;

std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

UnitPtr parse_unit(const std::string& text) {
    UnitPtr u(ut_parse(udunits_system(), text.c_str(), UT_UTF8));
    if (!u) throw std::runtime_error("units \"" + text + "\" are not valid UDUNITS-2 units");
    return u;
}

// Affine map between two non-calendar units, caller holds the mutex.
Affine udunits_affine(const std::string& from, const std::string& to) {
    UnitPtr f = parse_unit(from), t = parse_unit(to);
    if (!ut_are_convertible(f.get(), t.get()))
        throw std::runtime_error("units \"" + from + "\" cannot be converted to \"" + to + "\"");
    cv_converter* cv = ut_get_converter(f.get(), t.get());
    if (!cv) throw std::runtime_error("no converter from \"" + from + "\" to \"" + to + "\"");
    double b = cv_convert_double(cv, 0.0);
    double a = cv_convert_double(cv, 1.0) - b;
    cv_free(cv);
    return Affine{a, b};
}

struct ReferenceTime {
    std::string unit;  // "days", "hours", ...
    int64_t year = 0, month = 1, day = 1;
    double seconds = 0;  // time of day
};

// Calendar arithmetic multiplies years by 366 days in int64_t: years are
// bounded first (documented in docs/security.md "Hostile input") so nothing can wrap.
constexpr double kMaxReferenceYear = 1e9;

void check_date_range(const std::string& units, double year, double month, double day) {
    if (!(std::fabs(year) <= kMaxReferenceYear))
        throw std::runtime_error("units \"" + units + "\": reference year out of range (at most " +
                                 std::to_string(static_cast<int64_t>(kMaxReferenceYear)) + " years from year 0)");
    if (!(month >= 1 && month <= 12)) throw std::runtime_error("units \"" + units + "\": month out of range 1..12");
    if (!(day >= 1 && day <= 31)) throw std::runtime_error("units \"" + units + "\": day out of range 1..31");
}

// "UNIT since YYYY-MM-DD[ T]hh:mm:ss" (time of day and zone "Z"/"UTC" optional).
// Hand-written rather than std::regex (which trips GCC 12 warnings).
std::optional<ReferenceTime> parse_reference_time(const std::string& text) {
    size_t i = 0;
    auto skip = [&] { while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i; };
    auto number = [&](bool allow_sign, bool allow_fraction, double& v) {
        size_t j = i;
        if (allow_sign && j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
        size_t d = j;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        if (j == d) return false;
        if (allow_fraction && j < text.size() && text[j] == '.') {
            ++j;
            while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        }
        v = std::strtod(text.substr(i, j - i).c_str(), nullptr);  // HUGE_VAL past double: range-checked later
        i = j;
        return true;
    };
    ReferenceTime r;
    skip();
    size_t u = i;
    while (i < text.size() && (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    if (i == u) return std::nullopt;
    r.unit = text.substr(u, i - u);
    skip();
    if (lower(text.substr(i, 5)) != "since") return std::nullopt;
    i += 5;
    skip();
    double y, mo, d;
    if (!number(true, false, y) || i >= text.size() || text[i++] != '-' || !number(false, false, mo) ||
        i >= text.size() || text[i++] != '-' || !number(false, false, d))
        return std::nullopt;
    check_date_range(text, y, mo, d);
    r.year = static_cast<int64_t>(y), r.month = static_cast<int64_t>(mo), r.day = static_cast<int64_t>(d);
    while (i < text.size() && (text[i] == ' ' || text[i] == 'T')) ++i;
    double h, mi, sec = 0;
    size_t save = i;
    if (number(false, false, h) && i < text.size() && text[i] == ':') {
        ++i;
        if (!number(false, false, mi)) return std::nullopt;
        if (i < text.size() && text[i] == ':') {
            ++i;
            if (!number(false, true, sec)) return std::nullopt;
        }
        r.seconds = h * 3600 + mi * 60 + sec;
    } else {
        i = save;
    }
    skip();
    std::string rest = lower(text.substr(i));
    if (!rest.empty() && rest != "z" && rest != "utc") return std::nullopt;
    return r;
}

bool is_leap(const std::string& cal, int64_t y) {
    if (cal == "julian") return y % 4 == 0;
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;  // proleptic_gregorian
}

// Days since year 0, month 1, day 1 in a non-standard CF calendar.
double days_from_epoch(const std::string& cal, const ReferenceTime& t) {
    static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    if (t.month < 1 || t.month > 12) throw std::runtime_error("month out of range in reference time");
    if (cal == "360_day") return static_cast<double>(t.year * 360 + (t.month - 1) * 30 + (t.day - 1));
    if (cal == "noleap") return static_cast<double>(t.year * 365 + cum[t.month - 1] + (t.day - 1));
    if (cal == "all_leap")
        return static_cast<double>(t.year * 366 + cum[t.month - 1] + (t.month > 2 ? 1 : 0) + (t.day - 1));
    if (cal == "julian" || cal == "proleptic_gregorian") {
        int64_t days = 0;
        // Whole years before t.year (years counted from 0; negative years handled by sign).
        auto leap_days_before = [&](int64_t y) -> int64_t {  // leap years in [0, y)
            if (y <= 0) return 0;
            int64_t n = (y + 3) / 4;
            if (cal == "proleptic_gregorian") n = n - (y + 99) / 100 + (y + 399) / 400;
            return n;
        };
        if (t.year < 0) throw std::runtime_error("negative years are not supported in calendar " + cal);
        days = t.year * 365 + leap_days_before(t.year);
        days += cum[t.month - 1] + ((t.month > 2 && is_leap(cal, t.year)) ? 1 : 0) + (t.day - 1);
        return static_cast<double>(days);
    }
    throw std::runtime_error("unknown calendar \"" + cal + "\"");
}

Affine convert_units(const std::string& from_in, const std::string& from_calendar, const std::string& to_in,
                     const std::string& to_calendar) {
    const std::string from = trim(from_in), to = trim(to_in);
    if (from.empty() || to.empty()) return Affine{};
    const std::string fcal = canonical_calendar(from_calendar), tcal = canonical_calendar(to_calendar);
    auto fref = parse_reference_time(from), tref = parse_reference_time(to);
    if (fref.has_value() != tref.has_value())
        throw std::runtime_error("units \"" + from + "\" cannot be converted to \"" + to + "\"");
    if (fref && fcal != tcal)
        throw std::runtime_error("calendar \"" + from_calendar + "\" differs from the master's \"" + to_calendar + "\"");
    if (from == to) return Affine{};
    MutexLock lock(udunits_mutex());
    if (!fref || fcal == "standard") return udunits_affine(from, to);  // udunits: mixed Julian/Gregorian
    // Non-standard calendar: scale from the unit part, offset from the
    // reference dates counted in that calendar.
    Affine scale = udunits_affine(fref->unit, tref->unit);
    Affine day_to_to = udunits_affine("day", tref->unit);
    double diff_days = days_from_epoch(fcal, *fref) - days_from_epoch(tcal, *tref) +
                       (fref->seconds - tref->seconds) / 86400.0;
    // value_to = value_from * a + (difference between references, in `to` units)
    return Affine{scale.scale, day_to_to.scale * diff_days};
}

}  // namespace

Affine units_converter(const std::string& from, const std::string& from_calendar, const std::string& to,
                       const std::string& to_calendar) {
    // Every fragment of an aggregation asks one of a few conversions (a CF
    // family completes each fragment from its file): the last answers of
    // this thread are kept (the answer depends on the four texts alone;
    // a failure is not kept, it is raised again).
    struct Known {
        bool set = false;
        std::string from, from_calendar, to, to_calendar;
        Affine affine;
    };
    thread_local std::array<Known, 4> known;
    thread_local size_t next = 0;
    for (const Known& k : known)
        if (k.set && k.from == from && k.to == to && k.from_calendar == from_calendar && k.to_calendar == to_calendar)
            return k.affine;
    const Affine affine = convert_units(from, from_calendar, to, to_calendar);
    known[next++ % known.size()] = Known{true, from, from_calendar, to, to_calendar, affine};
    return affine;
}

namespace {

// The date `days` (since year 0-01-01, may hold a fraction) names in `cal`.
std::string date_of_days(const std::string& cal, double days) {
    const double whole = std::floor(days);
    ReferenceTime t;
    t.month = 1, t.day = 1;
    t.year = std::max<int64_t>(0, static_cast<int64_t>(whole / 365.2425));
    while (t.year > 0 && days_from_epoch(cal, t) > whole) --t.year;
    auto starts_by = [&](ReferenceTime next) { return days_from_epoch(cal, next) <= whole; };
    while (starts_by({t.unit, t.year + 1, 1, 1, 0})) ++t.year;
    while (t.month < 12 && starts_by({t.unit, t.year, t.month + 1, 1, 0})) ++t.month;
    t.day = 1 + static_cast<int64_t>(whole - days_from_epoch(cal, t));
    char text[64];
    std::snprintf(text, sizeof text, "%04lld-%02lld-%02lld", static_cast<long long>(t.year),
                  static_cast<long long>(t.month), static_cast<long long>(t.day));
    std::string out = text;
    const auto seconds = static_cast<int64_t>(std::llround((days - whole) * 86400.0));
    if (seconds > 0 && seconds < 86400) {
        std::snprintf(text, sizeof text, " %02lld:%02lld:%02lld", static_cast<long long>(seconds / 3600),
                      static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60));
        out += text;
    }
    return out;
}

}  // namespace

std::optional<std::string> decode_time(double value, const std::string& units, const std::string& calendar) {
    auto ref = parse_reference_time(trim(units));
    if (!ref || !std::isfinite(value)) return std::nullopt;
    std::string cal = canonical_calendar(calendar);
    if (cal == "standard") cal = "proleptic_gregorian";  // the same from 1582-10-15 on
    try {
        double unit_days;
        {
            MutexLock lock(udunits_mutex());
            unit_days = udunits_affine(ref->unit, "day").scale;
        }
        const double days = days_from_epoch(cal, *ref) + ref->seconds / 86400.0 + value * unit_days;
        if (!(days >= 0) || days > 366.0 * 1e6) return std::nullopt;
        return date_of_days(cal, days);
    } catch (const std::exception&) {
        return std::nullopt;  // unknown calendar or unit: shown as numbers
    }
}

}  // namespace ncafs::agg
