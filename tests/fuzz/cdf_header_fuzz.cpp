// libFuzzer target: any bytes given to the CDF header reader end in a parsed
// header or a FormatError; anything else (crash, other exception, sanitizer
// report) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto header = ncafs::cdf::parse_cdf_header(std::span<const uint8_t>(data, size), "fuzz.nc");
        auto layout = ncafs::cdf::compute_layout(header, "fuzz.nc");
        // Exercise the offset arithmetic on the last element of every variable.
        for (size_t v = 0; v < layout.variables.size(); ++v) {
            uint64_t n = layout.variables[v].element_count();
            if (n > 0) (void)layout.linear_element_offset(v, n - 1);
        }
    } catch (const ncafs::FormatError&) {
    }
    return 0;
}
