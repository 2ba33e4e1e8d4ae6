// Affine conversion between UDUNITS-2 units (partition units -> master
// units), including the shift operator ("K @ 273.15") and reference-time
// units ("days since 2001-01-01") in the CF calendars.
#pragma once

#include <optional>
#include <string>

#include "aggregation/model/aggregate.hpp"

namespace ncafs::agg {

// The affine map taking values in `from` units to `to` units. Empty units on
// either side mean "no conversion" (cf-python's rule). Throws std::runtime_error
// with a readable reason when a unit cannot be parsed, the units are not
// convertible, or calendars of reference-time units differ.
Affine units_converter(const std::string& from, const std::string& from_calendar, const std::string& to,
                       const std::string& to_calendar);

// The date `value` in reference-time `units` ("days since 2000-01-01")
// names in `calendar` ("2000-01-16", a time of day when not midnight);
// nullopt when the units are not reference-time units, or the calendar or
// date is outside what ncafs counts ("standard" is counted as proleptic
// Gregorian: exact from 1582-10-15 on).
std::optional<std::string> decode_time(double value, const std::string& units, const std::string& calendar);

}  // namespace ncafs::agg
