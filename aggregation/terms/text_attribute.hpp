// The text of a char attribute, as the aggregation conventions read it.
#pragma once

#include <string>

#include "codecs/dataset.hpp"

namespace ncafs::agg {

// Value of char attribute `name` of v without trailing NULs; empty when the
// attribute is absent or not of type char.
std::string text_attribute(const Variable& v, const char* name);

}  // namespace ncafs::agg
