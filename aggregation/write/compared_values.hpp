// Attribute and variable values as `ncafs aggregate` compares and reports
// them: char attributes as text, attributes in messages, whole variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg::cf_write {

// A char attribute's text without trailing NULs; empty when absent or not char.
std::string attribute_text(const Attribute* a);
// A char attribute's bytes as stored (trailing NULs included).
std::string stored_text(const Attribute& a);
// An attribute as a message shows it: "text", 1,2,3 or (none).
std::string value_text(const Attribute* a);
// Equal values (char attributes as text); two absent attributes are equal.
bool same_attribute(const Attribute* a, const Attribute* b);
// Every element of a variable, native byte order.
std::vector<uint8_t> read_whole(const ArraySource& s);

}  // namespace ncafs::agg::cf_write
