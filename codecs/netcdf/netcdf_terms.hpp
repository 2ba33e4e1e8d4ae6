// The term variables of an aggregation file (term_values.hpp) as the daemon
// gets them: from helper processes where they run (netcdf-c never opens the
// file in this process; netcdf_helpers.hpp), else from netcdf-c here (the
// CLI's commands, unit tests), as open_netcdf_dataset chooses. Either way
// every answer is checked (a helper subverted by the file may lie about
// any count) and charged to the metadata budget (io/metadata_budget.hpp)
// before it is kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/netcdf/term_values.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

class TermReader {
public:
    virtual ~TermReader() = default;
    // Every variable of the file, of any type, in any group.
    const TermInventory& inventory() const { return inventory_; }
    // The variable at `full` (a path of the inventory) whole, gathered from
    // answers of rows. Throws SourceError naming the file and the variable.
    TermArray read(const std::string& full) const;

protected:
    explicit TermReader(std::string shown) : shown_(std::move(shown)) {}
    // Rows of the variable from `first_row` on (term_reading.hpp), unchecked.
    virtual TermArray rows(const std::string& full, uint64_t first_row) const = 0;
    std::string shown_;
    TermInventory inventory_;
};

// The term reader of `file` (opened confined). Throws SourceError.
std::unique_ptr<TermReader> open_term_reader(std::shared_ptr<const OpenFile> file);

// A helper's work (netcdf_helpers.cpp): netcdf-c's inventory of the file at
// `path`, or rows of one of its variables (refused for HDF5 external
// storage or a virtual layout). `shown` names the file in errors.
TermInventory term_inventory_here(const std::string& path, const std::string& shown);
TermArray term_rows_here(const std::string& path, const std::string& shown, const std::string& full,
                         uint64_t first_row);

}  // namespace ncafs::netcdf
