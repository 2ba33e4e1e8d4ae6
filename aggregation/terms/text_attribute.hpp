// The text of a char attribute, as the aggregation conventions read it.
#pragma once

#include <string>
#include <string_view>

#include "codecs/dataset.hpp"

namespace ncafs::agg {

// Value of char attribute `name` of v without trailing NULs; empty when the
// attribute is absent or not of type char.
std::string text_attribute(const Variable& v, const char* name);
// The same, viewed in place (valid while v lives): no copy of a huge JSON.
std::string_view text_attribute_view(const Variable& v, const char* name);

}  // namespace ncafs::agg
