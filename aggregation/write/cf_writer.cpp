#include "aggregation/write/cf_writer.hpp"

#include <filesystem>

#include "aggregation/read/path_policy.hpp"
#include "aggregation/write/fragment_placement.hpp"
#include "aggregation/write/input_comparison.hpp"
#include "aggregation/write/input_reading.hpp"
#include "aggregation/write/output_description.hpp"
#include "aggregation/write/output_names.hpp"
#include "aggregation/write/writer_state.hpp"
#include "codecs/netcdf/netcdf_writer.hpp"
#include "io/percent_encode.hpp"
#include "io/private_folder.hpp"

namespace ncafs::agg {

// ncafs aggregate, one step per file; write_cf_aggregation runs them in
// order over a cf_write::WriterState they share (writer_state.hpp):
//   1 read_inputs                  headers, aggregated-dim coordinates, small non-aggregated values, URIs;
//                                  file 0 is the reference (input_reading.hpp, compared by input_comparison.hpp)
//   2 report_metadata_differences  global attributes and per-file encodings, as warnings (input_comparison.hpp)
//   3 place_fragments              order along each aggregated dimension, then tile the grid (fragment_placement.hpp)
//   4 plan_names                   the output's names, one signature per dimension list (output_names.hpp)
//   5 write_output                 describe the output (output_description.hpp), written by the netcdf-c
//                                  gateway into a temporary file renamed into place

std::string uri_path_encode(const std::string& path) { return percent_encode(path, "-._~!$&'()*+,;=:@/"); }

namespace {

using cf_write::WriterState;

// The current directory; empty when it cannot be known (then each relative
// input path is made absolute on its own, and fails as it did).
std::string current_directory() {
    std::error_code ec;
    std::string cwd = std::filesystem::current_path(ec).string();
    return ec ? std::string() : cwd;
}

// Step 5: write (to a temporary name, renamed at the end: nothing on error).
void write_output(WriterState& st) {
    // The first fragment in aggregation order lends its attributes (its own metadata was released when read).
    const cf_write::FileInfo& lead_file = st.files[static_cast<size_t>(st.grid[0])];
    const std::vector<cf_write::VarInfo> lead_vars =
        st.grid[0] == 0 ? st.files[0].vars : cf_write::read_variables(lead_file.path);
    // Written in a private folder beside OUT, held by descriptor, so no planted
    // link can redirect it; renamed into place at the end (the folder goes
    // with its destructor).
    const PrivateFolder folder(st.out_path);
    const std::string name = std::filesystem::path(st.out_path).filename().string();
    const netcdf::OutputFile description = cf_write::describe_output(st, lead_vars);
    netcdf::write_netcdf_file(folder.path_of(name), st.opt.output, description);
    folder.publish(name);
}

}  // namespace

AggregateSummary write_cf_aggregation(const std::vector<std::string>& files_in, const AggregateWriterOptions& opt) {
    if (files_in.empty()) throw UsageError("no input files");
    if (opt.output.empty()) throw UsageError("no output file (-o OUT.nc)");
    WriterState st{opt, lexically_normal_absolute(opt.output), current_directory()};
    st.summary.files = files_in.size();
    cf_write::read_inputs(st, files_in);
    cf_write::report_metadata_differences(st);
    cf_write::place_fragments(st);
    cf_write::plan_names(st);
    write_output(st);
    return st.summary;
}

}  // namespace ncafs::agg
