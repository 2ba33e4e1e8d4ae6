// netCDF-4/HDF5 files are first read by a helper process, never by the
// process that asks: a crash, a loop or a memory blow-up in HDF5 or
// netcdf-c on a hostile file then costs that file's reads, nothing else.
//
// A zygote is forked at the start of main, while the process is still
// single-threaded (forking a multithreaded process and running HDF5 in the
// child is not sound). For each file the daemon sends it the file's
// descriptor (SCM_RIGHTS: the file the daemon opened through its confined
// walk) and one end of a fresh socket pair; the zygote forks a helper that
// confines itself (helper_confinement.hpp: that one file readable, nothing
// else), surveys the file with HDF5 (hdf5_survey.hpp), has netcdf-c open it
// and describe the group asked for (netcdf_description.hpp), and writes
// both back (survey_wire.hpp); or, asked for the values of a box that
// ncafs does not read itself, has netcdf-c read them and writes them back;
// or, for an aggregation file, lists its variables or reads rows of a term
// variable (netcdf_terms.hpp). The zygote reports how the helper ended on the same
// socket, and kills a helper past its deadline. Helpers run side by side,
// one per file being opened, each fresh: none is reused after a file.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codecs/netcdf/hdf5_survey.hpp"
#include "codecs/netcdf/netcdf_description.hpp"
#include "io/open_file.hpp"

namespace ncafs::netcdf {

// Forks the zygote. Call once, from main, before any thread starts. A
// process that never calls it (the unit tests) reads every file in-process.
void start_netcdf_helpers();
bool netcdf_helpers_started();

// What a helper answered about one group of a file: the file's survey
// (nullopt: not HDF5) and the group's description.
struct HelperDescription {
    std::optional<Hdf5Survey> survey;
    NetcdfDescription description;
};

// The survey of `file` (local: fd() >= 0) and the description of `group`
// ("" for the root) read by a fresh helper, kept by file identity and
// group. Throws SourceError naming the file and what happened: netcdf-c's
// or HDF5's refusal, the helper's death (its signal), its deadline passed,
// an answer that does not decode.
HelperDescription describe_in_helper(const OpenFile& file, const std::string& group);
// describe_in_helper(file, "").survey.
std::optional<Hdf5Survey> survey_in_helper(const OpenFile& file);

// The largest box of values one helper reads (callers split larger ones).
inline constexpr uint64_t kMaxHelperBoxBytes = uint64_t{32} << 20;
// The values of the box [start, start + count) of variable `varid` of
// `group`, read by netcdf-c in a fresh helper, into out (native order, C
// order over the box; out.size() its bytes, at most kMaxHelperBoxBytes).
// Throws SourceError as describe_in_helper does.
void values_in_helper(const OpenFile& file, const std::string& group, int varid, std::span<const uint64_t> start,
                      std::span<const uint64_t> count, std::span<uint8_t> out);

// A fresh helper's answer to `request` (survey_wire.hpp) about `file`.
// Throws SourceError as describe_in_helper does, also for the helper's
// refusal; what the answer holds is the caller's to check.
struct HelperAnswer;
struct HelperRequest;
HelperAnswer answer_in_helper(const OpenFile& file, const HelperRequest& request);

// The work of one helper, in the helper (netcdf_dataset.cpp): the survey
// of the file at `path`, netcdf-c's open and description of `group`; or
// the values of a box, read by netcdf-c.
HelperDescription survey_and_describe(const std::string& path, const std::string& shown, const std::string& group);
std::vector<uint8_t> read_values_here(const std::string& path, const std::string& shown, const std::string& group,
                                      int varid, std::span<const uint64_t> start, std::span<const uint64_t> count);

}  // namespace ncafs::netcdf
