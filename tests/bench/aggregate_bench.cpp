// `ncafs aggregate` over many partition files (default 10,000): prints the
// time it takes against a baseline measured in the same run (nc_open +
// nc_close of every partition, the floor any header-reading tool pays), and
// the time to parse the resulting aggregation file. No thresholds: numbers.
// Usage: aggregate_bench [N] [DIR]
#include <netcdf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/read/dataset_cache.hpp"

namespace fs = std::filesystem;

static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static void make_partition(const std::string& path, int index) {
    int ncid, t, y, x, tv, yv, v;
    nc_create(path.c_str(), NC_CLOBBER, &ncid);
    nc_def_dim(ncid, "time", NC_UNLIMITED, &t);
    nc_def_dim(ncid, "lat", 2, &y);
    nc_def_dim(ncid, "lon", 3, &x);
    nc_def_var(ncid, "time", NC_DOUBLE, 1, &t, &tv);
    nc_put_att_text(ncid, tv, "units", 21, "days since 2000-01-01");
    nc_def_var(ncid, "lat", NC_FLOAT, 1, &y, &yv);
    int dims[3] = {t, y, x};
    nc_def_var(ncid, "tas", NC_FLOAT, 3, dims, &v);
    nc_put_att_text(ncid, v, "units", 1, "K");
    nc_enddef(ncid);
    size_t start = 0, count = 1;
    double time = index;
    nc_put_vara_double(ncid, tv, &start, &count, &time);
    float lat[2] = {-45, 45};
    nc_put_var_float(ncid, yv, lat);
    float tas[6] = {1, 2, 3, 4, 5, static_cast<float>(index)};
    size_t s3[3] = {0, 0, 0}, c3[3] = {1, 2, 3};
    nc_put_vara_float(ncid, v, s3, c3, tas);
    nc_close(ncid);
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::stoi(argv[1]) : 10000;
    const fs::path dir = argc > 2 ? fs::path(argv[2]) : fs::temp_directory_path() / ("ncafs_aggregate_bench_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::vector<std::string> files;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        files.push_back((dir / ("part_" + std::to_string(i) + ".nc")).string());
        if (!fs::exists(files.back())) make_partition(files.back(), i);
    }
    std::printf("files: %d (made in %.2f s) in %s\n", n, seconds_since(t0), dir.c_str());

    t0 = std::chrono::steady_clock::now();
    for (const auto& f : files) {
        int ncid, nvars;
        nc_open(f.c_str(), NC_NOWRITE, &ncid);
        nc_inq_nvars(ncid, &nvars);
        nc_close(ncid);
    }
    const double baseline = seconds_since(t0);

    std::vector<std::string> args{"-o", (dir / "aggregation.nc").string()};
    // Reverse order: the writer has to sort by time.
    for (auto it = files.rbegin(); it != files.rend(); ++it) args.push_back(*it);
    std::ostringstream out, err;
    t0 = std::chrono::steady_clock::now();
    int rc = ncafs::cli::run_aggregate(args, out, err);
    const double aggregate = seconds_since(t0);
    if (rc != 0) {
        std::cerr << err.str();
        return 1;
    }

    t0 = std::chrono::steady_clock::now();
    ncafs::agg::DatasetCache cache;
    auto path = (dir / "aggregation.nc").string();
    ncafs::agg::PathPolicy paths(path, {}, {});
    auto parsed = ncafs::agg::parse_cf_file(path, *cache.get(path), paths);
    const double parse = seconds_since(t0);

    std::printf("baseline nc_open+nc_close of every file: %.3f s\n", baseline);
    std::printf("ncafs aggregate: %.3f s (%.2f x baseline)\n", aggregate, aggregate / baseline);
    std::printf("parse the aggregation (%zu fragments): %.3f s (%.2f x baseline)\n",
                parsed.aggregates.empty() ? size_t{0} : parsed.aggregates[0].aggregate.fragments.size(), parse, parse / baseline);
    if (argc <= 2) fs::remove_all(dir);
    return 0;
}
