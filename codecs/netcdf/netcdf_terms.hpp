// The term variables of an aggregation file (term_values.hpp) as the daemon
// gets them: from helper processes where they run (netcdf-c never opens the
// file in this process; netcdf_helpers.hpp), else from netcdf-c here (the
// CLI's commands, unit tests), as open_netcdf_dataset chooses. Either way
// every answer is checked (a helper subverted by the file may lie about
// any count) and charged to the metadata budget (io/metadata_budget.hpp)
// before it is kept.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codecs/netcdf/term_values.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

class TermReader {
public:
    virtual ~TermReader() = default;
    // Every variable of the file, of any type, in any group.
    const TermInventory& inventory() const { return inventory_; }
    // The variable at `full` (a path of the inventory) whole, gathered from
    // answers of rows (the first ones perhaps come with the inventory).
    // Throws SourceError naming the file and the variable.
    TermArray read(const std::string& full) const;

protected:
    explicit TermReader(std::string shown) : shown_(std::move(shown)) {}
    // Rows of the variable from `first_row` on (term_reading.hpp), unchecked.
    virtual TermArray rows(const std::string& full, uint64_t first_row) const = 0;
    // Keeps rows from row 0 of variables of `asked`, answered with the
    // inventory, each checked and charged as read() does with its own.
    // Throws SourceError for rows of a variable not asked for or given twice.
    void keep_first_rows(const std::vector<std::string>& asked, std::vector<TermArray> parts);
    std::string shown_;
    TermInventory inventory_;

private:
    // A variable's rows so far.
    struct Gathering {
        TermArray whole;
        uint64_t done = 0, next_row = 0;
        bool started = false;
        bool complete() const { return started && done == whole.size(); }
    };
    // Checks `part` against the rows before, charges and appends it.
    void take_rows(Gathering& g, const std::string& full, TermArray&& part) const;
    mutable std::map<std::string, Gathering> kept_;  // from keep_first_rows, until read (parsing is one thread)
};

// The term reader of `file` (opened confined). `wanted`: full paths of the
// variables about to be read, whose first rows a helper answers with the
// inventory (one helper instead of one each; netcdf_helpers.hpp).
// Throws SourceError.
std::unique_ptr<TermReader> open_term_reader(std::shared_ptr<const OpenFile> file,
                                             const std::vector<std::string>& wanted = {});

// A helper's work (netcdf_helpers.cpp): netcdf-c's inventory of the file at
// `path`, or rows of one of its variables (refused for HDF5 external
// storage or a virtual layout); or the inventory with the first rows of
// the variables of `wanted` it holds, in that order, within one answer of
// rows (a variable refused or failing is left out: asked alone, its
// refusal is then told). `shown` names the file in errors.
TermInventory term_inventory_here(const std::string& path, const std::string& shown);
TermArray term_rows_here(const std::string& path, const std::string& shown, const std::string& full,
                         uint64_t first_row);
std::pair<TermInventory, std::vector<TermArray>> term_inventory_and_rows_here(const std::string& path,
                                                                             const std::string& shown,
                                                                             const std::vector<std::string>& wanted);

}  // namespace ncafs::netcdf
