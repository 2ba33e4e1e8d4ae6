// 10,000 one-value datasets: read through our ds reader (open + read the
// value) versus the same values in classic .nc files through netcdf-c
// (nc_open + nc_get_var + nc_close). Prints both times and the ratio.
// The .ds files are our cf ds view of the .nc files, so both hold the same
// dataset. Usage: ds_tiny_bench [DIR] [COUNT]
#include <netcdf.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codecs/ds/ds_reader.hpp"
#include "codecs/ds/ds_view.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "codecs/open_dataset.hpp"

using namespace ncafs;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : "/tmp/ds_tiny_bench";
    const int count = argc > 2 ? std::stoi(argv[2]) : 10000;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (int i = 0; i < count; ++i) {
        const std::string nc = dir + "/f" + std::to_string(i) + ".nc";
        {
            std::lock_guard lock(netcdf_library_mutex());
            int id, var;
            nc_create(nc.c_str(), NC_CLOBBER, &id);
            nc_def_var(id, "v", NC_DOUBLE, 0, nullptr, &var);
            nc_put_att_text(id, var, "units", 1, "K");
            nc_enddef(id);
            const double x = i * 0.5;
            nc_put_var_double(id, var, &x);
            nc_close(id);
        }
        auto d = std::make_shared<const Dataset>(open_dataset(nc));
        auto view = make_ds_view(d, DsViewOptions{DsViewOptions::Values::Cf});
        std::vector<uint8_t> bytes(view->size());
        view->read(0, bytes);
        std::ofstream(dir + "/f" + std::to_string(i) + ".ds", std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }

    // Files changed within the last second are read twice, 2 ms apart
    // (io/open_file.cpp): let them settle, or that wait is what is timed.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    double sum_ds = 0, sum_nc = 0;
    auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
        const Dataset d = ds::open_ds_dataset(dir + "/f" + std::to_string(i) + ".ds");
        double x = 0;
        d.variables.at(0).source->read_linear(0, 1, ByteOrder::Native, &x);
        sum_ds += x;
    }
    auto t1 = Clock::now();
    for (int i = 0; i < count; ++i) {
        std::lock_guard lock(netcdf_library_mutex());
        int id, var;
        double x = 0;
        if (nc_open((dir + "/f" + std::to_string(i) + ".nc").c_str(), NC_NOWRITE, &id) != NC_NOERR) return 1;
        nc_inq_varid(id, "v", &var);
        nc_get_var_double(id, var, &x);
        nc_close(id);
        sum_nc += x;
    }
    auto t2 = Clock::now();
    const double ds_s = std::chrono::duration<double>(t1 - t0).count();
    const double nc_s = std::chrono::duration<double>(t2 - t1).count();
    std::printf("files: %d one-value datasets (sums %.1f / %.1f)\n", count, sum_ds, sum_nc);
    std::printf("ds reader (open_ds_dataset + read): %.3f s, %.1f us/file\n", ds_s, 1e6 * ds_s / count);
    std::printf("netcdf-c (nc_open + get + close):   %.3f s, %.1f us/file\n", nc_s, 1e6 * nc_s / count);
    std::printf("ratio netcdf-c / ds: %.2f\n", nc_s / ds_s);
    std::filesystem::remove_all(dir);
    return sum_ds == sum_nc ? 0 : 2;
}
