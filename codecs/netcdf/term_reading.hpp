// netcdf-c's reading of the term variables of an aggregation file
// (term_values.hpp), under the library lock: in a helper process where they
// run, in this process where none do (netcdf_terms.hpp chooses).
#pragma once

#include <cstdint>
#include <string>

#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/netcdf/term_values.hpp"

namespace ncafs::netcdf {

// Every variable of every group of the file netcdf-c holds open as `ncid`.
// `shown` names the file in errors. Throws SourceError (also for more than
// kMaxTermInventory variables or groups nested deeper than 64).
TermInventory read_term_inventory(int ncid, const std::string& shown) NCAFS_REQUIRES(library_mutex);
inline constexpr uint64_t kMaxTermInventory = uint64_t{1} << 20;

// The variable at `full` ("/g/name") with the values of its rows (indices
// of its first dimension; a scalar is one row) from `first_row` on: as many
// whole rows as fit in about kTermRowsBytes, at least one. Masks elements
// equal to _FillValue / missing_value (and the netCDF default fill of
// numeric types when no _FillValue is set, as netCDF4-python does; empty
// strings for text). A char variable's last dimension is its string length.
// Throws SourceError naming the file and the variable.
TermArray read_term_rows(int ncid, const std::string& shown, const std::string& full, uint64_t first_row)
    NCAFS_REQUIRES(library_mutex);
// The same, as many whole rows as fit in about most_bytes (at least one).
TermArray read_term_rows(int ncid, const std::string& shown, const std::string& full, uint64_t first_row,
                         uint64_t most_bytes) NCAFS_REQUIRES(library_mutex);
// The bytes of one answer of rows: kTermRowsBytes, or the test-only
// NCAFS_TEST_TERM_ROWS_BYTES (tests/README.md: many answers from a small file).
uint64_t term_rows_bytes();

}  // namespace ncafs::netcdf
