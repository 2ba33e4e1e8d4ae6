#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncafs::agg {

// A shape or index for a message: "[3, 4]", or "(3, 4)" with open '(' and
// close ')' as the CF readers quote shapes (the way netCDF tools print them).
std::string shape_text(const std::vector<uint64_t>& shape, char open = '[', char close = ']');

}  // namespace ncafs::agg
