// Shared by the libFuzzer targets that need a file: the readers take a path
// (they pread through OpenFile), so each input is written to one anonymous
// in-memory file (memfd) reached as /proc/self/fd/N - no disk, no cleanup.
// read_every_variable reads every variable's values (bounded per variable) so
// that the readers' data paths run too, not only their header parsing.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/dataset.hpp"
#include "io/open_file.hpp"
#include "codecs/types.hpp"

namespace ncafs::fuzz {

class MemoryFile {
public:
    MemoryFile() : fd_(memfd_create("ncafs-fuzz", 0)) {
        if (fd_ < 0) std::abort();
        // Each input was written just now: without this every pread would be
        // made twice, 2 ms apart (io/open_file.hpp), for a writer that
        // cannot exist here; it cut executions tenfold.
        set_settling_window(std::chrono::nanoseconds(0));
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    // Replaces the file's contents with data[0, size).
    const std::string& hold(const uint8_t* data, size_t size) {
        if (ftruncate(fd_, 0) != 0 || pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
        return path_;
    }

private:
    int fd_;
    std::string path_;
};

// Reads at most max_elements leading elements of every variable (native and
// big-endian order). Errors are the caller's to catch.
inline void read_every_variable(const Dataset& d, uint64_t max_elements) {
    std::vector<uint8_t> buffer;
    for (const auto& v : d.variables) {
        if (!v.source) continue;
        const uint64_t n = std::min(v.source->element_count(), max_elements);
        if (n == 0) continue;
        buffer.resize(n * type_size(v.source->type()));
        v.source->read_linear(0, n, ByteOrder::Native, buffer.data());
        v.source->read_linear(v.source->element_count() - n, n, ByteOrder::Big, buffer.data());
    }
}

}  // namespace ncafs::fuzz
