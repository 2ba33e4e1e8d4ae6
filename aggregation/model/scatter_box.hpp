// Placing a read box into a larger result array (both C order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ncafs::agg {

// Copies the C-order box `len` (contiguous at src) into the box at offset `at`
// of a C-order array of shape `outer` at dst; elements are esize bytes.
void scatter_box(const uint8_t* src, const std::vector<uint64_t>& len, const std::vector<uint64_t>& at,
                 const std::vector<uint64_t>& outer, size_t esize, uint8_t* dst);

}  // namespace ncafs::agg
