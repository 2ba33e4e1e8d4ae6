// Header parse time of CDF files with 1, 100 and 10,000 variables (written by
// our header writer, data left sparse), against netcdf-c's nc_open as the
// baseline measured in the same run. A program, not a test: prints numbers.
#include <netcdf.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/header_writer.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

using namespace ncafs;
using Clock = std::chrono::steady_clock;

namespace {

std::string make_file(const std::string& dir, size_t nvars) {
    Dataset ds;
    ds.origin = "bench";
    ds.dimensions = {{"time", 2, true}, {"lat", 10, false}, {"lon", 20, false}};
    ds.attributes = {Attribute::text("title", "header benchmark")};
    for (size_t i = 0; i < nvars; ++i) {
        Variable v;
        v.name = "variable_" + std::to_string(i);
        v.type = i % 3 == 0 ? NcType::Float : i % 3 == 1 ? NcType::Short : NcType::Double;
        v.dimids = i % 2 ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{1, 2};
        v.attributes = {Attribute::text("units", "K"), Attribute::numeric<float>("scale_factor", NcType::Float, {0.5f})};
        ds.variables.push_back(std::move(v));
    }
    auto enc = cdf::encode_cdf_header(ds);
    std::string path = dir + "/bench_" + std::to_string(nvars) + ".nc";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(enc.bytes.data()), static_cast<std::streamsize>(enc.bytes.size()));
    }
    std::filesystem::resize_file(path, cdf::compute_layout(enc.header, path).file_size);
    return path;
}

double cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Median wall time; on a loaded machine the median thread CPU time (also
// recorded, in last_cpu_ms) is the steadier number.
double last_cpu_ms = 0;
template <typename F>
double median_ms(int runs, F&& f) {
    std::vector<double> t, c;
    for (int i = 0; i < runs; ++i) {
        auto a = Clock::now();
        double ca = cpu_ms();
        f();
        c.push_back(cpu_ms() - ca);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    std::sort(c.begin(), c.end());
    last_cpu_ms = c[c.size() / 2];
    return t[t.size() / 2];
}

}  // namespace

int main() {
    std::string dir = (std::filesystem::temp_directory_path() / "ncafs-cdf-bench-XXXXXX").string();
    if (!::mkdtemp(dir.data())) return 1;
    std::printf("%8s %10s %15s %15s %12s %16s %14s %8s\n", "vars", "header B", "read_header ms", "(cpu ms)",
                "per var us", "open_dataset ms", "nc_open ms", "ratio");
    for (size_t n : {size_t{1}, size_t{100}, size_t{10000}}) {
        std::string path = make_file(dir, n);
        // Files changed within the last second are read twice, 2 ms apart
        // (io/open_file.cpp): let it settle, or that wait is what is timed.
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        const int runs = n >= 10000 ? 9 : 51;
        uint64_t header_size = 0;
        double parse = median_ms(runs, [&] {
            auto f = OpenFile::open(path);
            header_size = cdf::read_cdf_header(*f).header_size;
        });
        const double parse_cpu = last_cpu_ms;
        double open = median_ms(runs, [&] { (void)cdf::open_cdf_dataset(path); });
        double nc = median_ms(runs, [&] {
            std::lock_guard lock(netcdf_library_mutex());
            int ncid;
            if (nc_open(path.c_str(), NC_NOWRITE, &ncid) == NC_NOERR) nc_close(ncid);
        });
        std::printf("%8zu %10llu %15.3f %15.3f %12.3f %16.3f %14.3f %8.2f\n", n,
                    static_cast<unsigned long long>(header_size), parse, parse_cpu,
                    parse * 1000.0 / static_cast<double>(n), open, nc, parse / nc);
    }
    std::filesystem::remove_all(dir);
    return 0;
}
