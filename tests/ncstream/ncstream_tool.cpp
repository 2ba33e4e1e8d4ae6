// Test driver for the Python checks: writes our ncstream output of a dataset
// file so that an independent decoder can compare it with netcdf-c's values.
//   ncstream_tool view IN OUT         the view's bytes, read in scattered odd-sized pieces
//   ncstream_tool export IN OUT [L]   export_ncstream, deflate level L when given
// IN is any netCDF file (ncafs::open_dataset) or, with suffix .ncs, an
// ncstream file read back with our reader.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codecs/error.hpp"
#include "codecs/ncstream/ncstream_export.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "codecs/ncstream/ncstream_view.hpp"
#include "codecs/open_dataset.hpp"

namespace {

ncafs::Dataset open_any(const std::string& path) {
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".ncs") == 0)
        return ncafs::ncstream::open_ncstream_dataset(path);
    return ncafs::open_dataset(path);
}

int write_view(const std::string& in, const std::string& out) {
    auto ds = std::make_shared<const ncafs::Dataset>(open_any(in));
    auto view = ncafs::make_ncstream_view(ds, "ncstream_tool/" + in.substr(in.find_last_of('/') + 1));
    std::vector<uint8_t> bytes(view->size());
    // Odd-sized pieces in shuffled order: every read starts cold at an
    // arbitrary offset, as FUSE reads do.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    std::mt19937_64 rng(12345);
    for (uint64_t at = 0; at < bytes.size();) {
        uint64_t n = std::min<uint64_t>(1 + rng() % 37, bytes.size() - at);
        ranges.emplace_back(at, n);
        at += n;
    }
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (auto [at, n] : ranges) view->read(at, std::span<uint8_t>(bytes.data() + at, n));
    FILE* f = std::fopen(out.c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
        std::perror(out.c_str());
        return 1;
    }
    return 0;
}

int write_export(const std::string& in, const std::string& out, std::optional<int> level) {
    const ncafs::Dataset ds = open_any(in);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::perror(out.c_str());
        return 1;
    }
    uint64_t last_done = 0, calls = 0;
    auto stats = ncafs::ncstream::export_ncstream(ds, fd, level, [&](uint64_t done, uint64_t total) {
        if (done < last_done || done > total) throw ncafs::Error("progress goes backwards or past the total");
        last_done = done;
        ++calls;
    }, "ncstream_tool/" + in.substr(in.find_last_of('/') + 1));
    ::close(fd);
    std::printf("%llu bytes, %llu data messages, %llu payload bytes, %llu progress calls\n",
                static_cast<unsigned long long>(stats.bytes_written),
                static_cast<unsigned long long>(stats.data_messages),
                static_cast<unsigned long long>(stats.payload_bytes), static_cast<unsigned long long>(calls));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string cmd = argc > 1 ? argv[1] : "";
        if (cmd == "view" && argc == 4) return write_view(argv[2], argv[3]);
        if (cmd == "export" && (argc == 4 || argc == 5))
            return write_export(argv[2], argv[3], argc == 5 ? std::optional<int>(std::stoi(argv[4])) : std::nullopt);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ncstream_tool: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: ncstream_tool view IN OUT | export IN OUT [LEVEL]\n");
    return 2;
}
