// CF calendar names (CF-1.13 section 4.4.3): several spellings name one
// calendar ("gregorian" is a deprecated alias of "standard"; "noleap" and
// "365_day", "all_leap" and "366_day" are synonyms). Calendars are compared,
// and written, by their canonical name.
#pragma once

#include <string>

namespace ncafs::agg {

// The canonical CF name of `calendar`: case and surrounding blanks ignored;
// an empty name is CF's default, "standard". Unknown names come back
// lower-cased and trimmed, so that they still compare by spelling.
std::string canonical_calendar(const std::string& calendar);

// Whether two calendar attributes (empty: absent) name the same calendar.
bool same_calendar(const std::string& a, const std::string& b);

}  // namespace ncafs::agg
