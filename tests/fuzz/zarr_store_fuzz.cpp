// libFuzzer target for Zarr v3 directory stores (aggregation/zarr_store):
// the input is an array's zarr.json, then a NUL byte, then the bytes stored
// as its first chunk (or shard) under every key a rank-1 array may use
// (c/0, c.0, 0). The store is opened as the mount opens it (confined to the
// scratch folder) and every variable's leading and trailing elements are
// read: metadata translation, shard indexes, crc32c, codecs and copies all
// run. Expected outcomes: a Dataset, AggregationError or SourceError;
// anything else is a bug.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "aggregation/model/error.hpp"
#include "aggregation/zarr_store/zarr_store_dataset.hpp"
#include "codecs/error.hpp"
#include "fuzz_support.hpp"
#include "io/open_file.hpp"

namespace {

std::string scratch;  // the folder, for the exit handler

const char* const kFiles[] = {"/s.zarr/v/c/0", "/s.zarr/v/c.0", "/s.zarr/v/0", "/s.zarr/v/zarr.json",
                              "/s.zarr/zarr.json"};

void remove_scratch_folder() {
    for (const char* name : kFiles) ::unlink((scratch + name).c_str());
    for (const char* name : {"/s.zarr/v/c", "/s.zarr/v", "/s.zarr", ""}) ::rmdir((scratch + name).c_str());
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

const std::string& scratch_folder() {
    static const std::string& folder = []() -> const std::string& {
        char name[] = "/tmp/ncafs-zarr-fuzz-XXXXXX";
        if (!mkdtemp(name)) std::abort();
        ncafs::set_settling_window(std::chrono::nanoseconds(0));
        std::atexit(remove_scratch_folder);
        scratch = name;
        for (const char* sub : {"/s.zarr", "/s.zarr/v", "/s.zarr/v/c"}) ::mkdir((scratch + sub).c_str(), 0700);
        const std::string group = R"({"zarr_format": 3, "node_type": "group", "attributes": {"a": 1}})";
        write_file(scratch + "/s.zarr/zarr.json", reinterpret_cast<const uint8_t*>(group.data()), group.size());
        return scratch;
    }();
    return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& folder = scratch_folder();
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    const size_t json_size = nul ? static_cast<size_t>(nul - data) : size;
    write_file(folder + "/s.zarr/v/zarr.json", data, json_size);
    for (const char* chunk : {"/s.zarr/v/c/0", "/s.zarr/v/c.0", "/s.zarr/v/0"})
        write_file(folder + chunk, nul ? nul + 1 : data, nul ? size - json_size - 1 : 0);
    ncafs::AggregationOptions options;
    options.allowed_roots = {folder};
    const ncafs::ConfinedRoots confined(options.allowed_roots);
    try {
        auto dataset = ncafs::open_zarr_store(folder + "/s.zarr", confined, options);
        try {
            ncafs::fuzz::read_every_variable(*dataset, 4096);
        } catch (const ncafs::SourceError&) {
        }
    } catch (const ncafs::agg::AggregationError&) {
    } catch (const ncafs::SourceError&) {
    }
    return 0;
}
