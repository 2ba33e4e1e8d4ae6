// Step 1's comparisons and step 2 of `ncafs aggregate`: every input against
// the reference (file 0): dimensions, variables, attributes, the values of
// small non-aggregated variables; then what differs without refusing the
// inputs (global attributes, per-file encodings), said as warnings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aggregation/write/writer_state.hpp"

namespace ncafs::agg::cf_write {

// Non-aggregated variables up to this many elements are compared across all
// files; larger ones only by their metadata (said in a warning).
constexpr uint64_t kCompareLimit = uint64_t{1} << 20;

// What one file's comparisons found, merged into the WriterState in file
// order (a reader thread finds, the merge records: the same lines, in the
// same order, as reading one file after another).
struct Findings {
    struct Encoding {
        const std::string* var;        // the reference's variable name
        const std::string* attribute;  // an element of kEncodingAttributes
        std::string value;
    };
    std::vector<std::string> problems;
    std::vector<std::string> warnings;
    std::vector<Encoding> encodings;
    std::vector<const std::string*> differing_globals;  // the reference's attribute names
};

// What the reference decided: the aggregated dimensions and the variables spanning one.
struct Reference {
    const std::vector<std::string>& agg_dims;
    const std::set<std::string>& aggregated_vars;
};

// Differences of F's dimensions, variables and attributes from the
// reference file R: problems, warnings (units converted on read), per-file
// encodings and the differing global attributes.
void compare_with_reference(const FileInfo& R, const FileInfo& F, const Reference& ref, Findings& found);

// Non-aggregated variables of another file (ds, at path) compared with the reference's values.
void compare_non_aggregated_values(const WriterState& st, const std::string& path, const Dataset& ds, Findings& found);

// Step 2: metadata that differs from the reference (compared as each file was
// read), and per-file encodings, as warnings; fills st.unpack.
void report_metadata_differences(WriterState& st);

}  // namespace ncafs::agg::cf_write
