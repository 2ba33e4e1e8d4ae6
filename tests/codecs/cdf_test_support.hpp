// Shared helpers of the CDF codec tests: the CDL corpus turned into .nc files
// by ncgen (in a temp dir, once per process), file I/O, and small netcdf-c
// wrappers that hold the netcdf-c mutex.
#pragma once

#include <gtest/gtest.h>
#include <netcdf.h>

#include <cstdint>
#include <string>
#include <vector>

// Asserts that a netcdf-c call returns NC_NOERR, naming the call and netcdf-c's reason.
#define NC_OK(call)                                                                   \
    do {                                                                              \
        int nc_status_ = (call);                                                      \
        ASSERT_EQ(nc_status_, NC_NOERR) << #call << ": " << nc_strerror(nc_status_); \
    } while (0)

namespace ncafs::cdftest {

struct CorpusFile {
    std::string cdl;      // base name of the CDL file
    std::string kind;     // ncgen -k argument: nc3, nc6 or nc5
    int version = 1;      // CDF version ncgen writes for that kind
    std::string path;     // the generated .nc
    std::string label() const { return cdl + "." + kind; }
};

// A fresh directory removed at process exit.
const std::string& temp_dir();
// The whole corpus (tests/data/cdl/*.cdl in every applicable kind), generated on first use.
const std::vector<CorpusFile>& corpus();
const CorpusFile& corpus_file(const std::string& cdl, const std::string& kind);

std::vector<uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

// Runs a shell command; returns its exit status.
int run(const std::string& command);

}  // namespace ncafs::cdftest
