// libFuzzer target for reference sets (aggregation/reference_set) and the
// Zarr codec chain (codecs/zarr): the input is a reference set's JSON, then
// a NUL byte, then the bytes of blob.bin, the one object its references may
// name ("blob.bin" relative to the reference file). Both are written into a
// scratch folder of this process, the set is opened as the mount opens it
// (allowed root: that folder) and every variable's leading and trailing
// elements are read: parse, ranges, decompression and copies all run.
// Expected outcomes: a Dataset, AggregationError or SourceError (reads:
// SourceError); anything else is a bug. Decoded chunks are bounded at
// 256 MiB, so -rss_limit_mb=2048 catches a bomb that is not stopped.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "aggregation/model/error.hpp"
#include "aggregation/reference_set/reference_dataset.hpp"
#include "codecs/error.hpp"
#include "io/open_file.hpp"
#include "fuzz_support.hpp"

namespace {

std::string scratch;  // the folder, for the exit handler

void remove_scratch_folder() {
    for (const char* name : {"/refs.json", "/blob.bin"}) ::unlink((scratch + name).c_str());
    ::rmdir(scratch.c_str());
}

const std::string& scratch_folder() {
    static const std::string& folder = [] () -> const std::string& {
        char name[] = "/tmp/ncafs-refs-fuzz-XXXXXX";
        if (!mkdtemp(name)) std::abort();
        ncafs::set_settling_window(std::chrono::nanoseconds(0));
        std::atexit(remove_scratch_folder);
        scratch = name;
        return scratch;
    }();
    return folder;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& folder = scratch_folder();
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const size_t json_size = nul ? static_cast<size_t>(nul - data) : size;
    write_file(folder + "/refs.json", data, json_size);
    write_file(folder + "/blob.bin", nul ? nul + 1 : data, nul ? size - json_size - 1 : 0);
    ncafs::AggregationOptions options;
    options.allowed_roots = {folder};
    try {
        auto dataset = ncafs::open_reference_set(folder + "/refs.json", options);
        try {
            ncafs::fuzz::read_every_variable(*dataset, 4096);
        } catch (const ncafs::SourceError&) {
        }
    } catch (const ncafs::agg::AggregationError&) {
    } catch (const ncafs::SourceError&) {
    }
    return 0;
}
