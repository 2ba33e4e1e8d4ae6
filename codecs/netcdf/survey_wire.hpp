// A helper process's answer about one file (netcdf_helpers.hpp), as bytes:
// the file's survey (hdf5_survey.hpp; "none" for a file that is not HDF5)
// with the description of the group asked for (netcdf_description.hpp),
// the values of a box asked for, the inventory of the file's variables,
// rows of a term variable (term_values.hpp), the inventory with the first
// rows of several term variables at once, or the message of the error
// that refused it. Both sides are one program (the zygote is forked from
// the daemon); the magic word still names the version of the format. The
// daemon decodes what a helper that may have been subverted by the file
// wrote: every count is
// checked against the bytes left and every bound a survey obeys, so that a
// hostile answer costs an error, never memory or a wrong read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/netcdf/hdf5_survey.hpp"
#include "codecs/netcdf/netcdf_description.hpp"
#include "codecs/netcdf/term_values.hpp"

namespace ncafs::netcdf {

struct HelperAnswer {
    std::optional<std::string> error;     // the file is refused, with this reason
    std::optional<Hdf5Survey> survey;     // else its survey (nullopt: not HDF5)
    std::optional<NetcdfDescription> description;  // and the group's description
    std::optional<std::vector<uint8_t>> values;    // or the values of the box asked for
    std::optional<TermInventory> inventory;        // or every variable of the file
    std::optional<TermArray> term;                 // or rows of a term variable
    // With the inventory, for TermAsk::InventoryAndRows: rows from row 0 of
    // some of the variables asked for, each at most once (see HelperRequest).
    std::vector<TermArray> terms;
    std::string diagnostic;               // test switches only (NCAFS_TEST_HELPER_TRY_OPEN)
};

// What a helper is asked of term variables (term_values.hpp).
enum class TermAsk : uint64_t { None = 0, Inventory = 1, Rows = 2, InventoryAndRows = 3 };
// The variables one InventoryAndRows request names at most.
inline constexpr uint64_t kMaxBatchedTerms = 256;

// What the asking side wants of a helper: the survey and the description
// of `group` of the file, or the values of one box of variable `varid` of
// `group` (native order, C order over the box); or (`terms`) the inventory
// of the file's variables, or the rows of the term variable whose full path
// is `group` from row start[0] on; or the inventory with rows from row 0 of
// the variables of `term_paths` the file holds, in that order, as many as
// fit in one answer of rows (kTermRowsBytes; a variable the helper cannot
// read is left out, to be asked alone).
struct HelperRequest {
    std::string shown;  // the file's name, for messages
    std::string group;  // "" for the root group
    bool values = false;
    int varid = 0;
    std::vector<uint64_t> start, count;
    TermAsk terms = TermAsk::None;
    std::vector<std::string> term_paths;  // full paths, for InventoryAndRows
};
// Requests are at most this long (a box of the largest rank included).
inline constexpr size_t kMaxRequestBytes = 32768;
std::vector<uint8_t> encode_request(const HelperRequest& request);
// Throws std::runtime_error naming what is wrong with the bytes.
HelperRequest decode_request(const std::vector<uint8_t>& bytes);

// Answers hold at most this many bytes (a box of values asked for included).
inline constexpr uint64_t kMaxAnswerBytes = uint64_t{64} << 20;

std::vector<uint8_t> encode_answer(const HelperAnswer& answer);
// Throws std::runtime_error naming what is wrong with the bytes.
HelperAnswer decode_answer(const std::vector<uint8_t>& bytes);

}  // namespace ncafs::netcdf
