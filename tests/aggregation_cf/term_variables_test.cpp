// TermFile / TermArray: term variables of many elements read column-wise
// (netCDF-4 strings in slabs, classic char arrays, integers) with every
// masking rule, checked against the values the test wrote with netcdf-c;
// FragmentProblems keeps only the fragments that have one.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/terms/cf_aggregation_parser.hpp"
#include "aggregation/terms/term_variables.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace fs = std::filesystem;
using namespace ncafs::agg;

namespace {

// Element i of the written term: nullopt where the test writes a value that must read as missing.
std::optional<std::string> expected_name(uint64_t i) {
    if (i % 7 == 3 || i % 11 == 5 || i % 13 == 6) return std::nullopt;
    return "dir/part_" + std::to_string(i) + ".nc";
}

// What the file holds for element i: empty, _FillValue and missing_value text for the masked ones.
std::string written_name(uint64_t i) {
    if (i % 7 == 3) return "";
    if (i % 11 == 5) return "FILL";
    if (i % 13 == 6) return "MISS";
    return *expected_name(i);
}

void ok(int status) { ASSERT_EQ(status, NC_NOERR) << nc_strerror(status); }

fs::path temp_file(const std::string& name) {
    return fs::temp_directory_path() / ("ncafs_term_variables_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

// 3 x 50,001 strings: more than one slab of 65,536 elements, slabs of whole rows.
TEST(CfTermVariables, NetCdf4StringsReadInSlabsWithMasks) {
    const fs::path path = temp_file("strings.nc");
    const size_t rows = 3, cols = 50'001;
    {
        std::lock_guard lock(ncafs::netcdf_library_mutex());
        int nc = -1, dims[2], var = -1;
        ok(nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &nc));
        ok(nc_def_dim(nc, "r", rows, &dims[0]));
        ok(nc_def_dim(nc, "c", cols, &dims[1]));
        ok(nc_def_var(nc, "uris", NC_STRING, 2, dims, &var));
        const char* fill = "FILL";
        const char* missing = "MISS";
        ok(nc_put_att_string(nc, var, "_FillValue", 1, &fill));
        ok(nc_put_att_string(nc, var, "missing_value", 1, &missing));
        ok(nc_enddef(nc));
        std::vector<std::string> text(rows * cols);
        std::vector<const char*> ptrs(rows * cols);
        for (uint64_t i = 0; i < text.size(); ++i) text[i] = written_name(i), ptrs[i] = text[i].c_str();
        ok(nc_put_var_string(nc, var, ptrs.data()));
        ok(nc_close(nc));
    }
    TermArray t = TermFile(path.string()).read("/uris");
    EXPECT_TRUE(t.is_text);
    EXPECT_EQ(t.shape, (std::vector<uint64_t>{rows, cols}));
    ASSERT_EQ(t.elements(), rows * cols);
    for (uint64_t i = 0; i < rows * cols; ++i) {
        auto got = t.text_at(i);
        auto want = expected_name(i);
        ASSERT_EQ(got.has_value(), want.has_value()) << "element " << i;
        if (want) {
            ASSERT_EQ(std::string(*got), *want) << "element " << i;
        }
    }
    EXPECT_FALSE(t.text_at(rows * cols).has_value());  // past the end: missing, not a crash
    fs::remove(path);
}

// Classic char array (fragments x string length) and an int map with _FillValue.
TEST(CfTermVariables, ClassicCharArrayAndIntegerMasks) {
    const fs::path path = temp_file("classic.nc");
    const size_t n = 1'000, width = 24;
    {
        std::lock_guard lock(ncafs::netcdf_library_mutex());
        int nc = -1, dims[2], names = -1, map = -1;
        ok(nc_create(path.c_str(), NC_64BIT_OFFSET | NC_CLOBBER, &nc));
        ok(nc_def_dim(nc, "f", n, &dims[0]));
        ok(nc_def_dim(nc, "strlen", width, &dims[1]));
        ok(nc_def_var(nc, "names", NC_CHAR, 2, dims, &names));
        ok(nc_put_att_text(nc, names, "missing_value", 4, "MISS"));
        ok(nc_def_var(nc, "map", NC_INT, 1, dims, &map));
        const int fill = -1;
        ok(nc_put_att_int(nc, map, "_FillValue", NC_INT, 1, &fill));
        ok(nc_enddef(nc));
        std::string bytes(n * width, '\0');
        for (uint64_t i = 0; i < n; ++i) {
            std::string w = written_name(i) == "FILL" ? "" : written_name(i);  // char storage: no string fill
            if (i % 5 == 0 && !w.empty()) w += "   ";                          // trailing blanks are padding
            bytes.replace(i * width, w.size(), w);
        }
        ok(nc_put_var_text(nc, names, bytes.data()));
        std::vector<int> values(n);
        for (uint64_t i = 0; i < n; ++i) values[i] = i % 9 == 4 ? -1 : static_cast<int>(i * 3);
        ok(nc_put_var_int(nc, map, values.data()));
        ok(nc_close(nc));
    }
    TermFile file(path.string());
    TermArray names = file.read("/names");
    EXPECT_EQ(names.shape, (std::vector<uint64_t>{n}));  // the string-length dimension removed
    for (uint64_t i = 0; i < n; ++i) {
        auto want = expected_name(i);
        auto got = names.text_at(i);
        ASSERT_EQ(got.has_value(), want.has_value()) << "element " << i;
        if (want) {
            ASSERT_EQ(std::string(*got), *want) << "element " << i;
        }
    }
    TermArray map = file.read("/map");
    ASSERT_EQ(map.elements(), n);
    for (uint64_t i = 0; i < n; ++i) {
        if (i % 9 == 4) {
            EXPECT_FALSE(map.integer_at(i).has_value());
            EXPECT_EQ(map.raw_at(i), nullptr);
        } else {
            EXPECT_EQ(map.integer_at(i), std::optional<int64_t>(i * 3));
            int native = 0;
            ASSERT_NE(map.raw_at(i), nullptr);
            std::memcpy(&native, map.raw_at(i), sizeof native);
            EXPECT_EQ(native, static_cast<int>(i * 3));
        }
    }
    fs::remove(path);
}

TEST(CfTermVariables, FragmentProblemsKeepOnlyTheFragmentsWithOne) {
    FragmentProblems p;
    for (int i = 0; i < 1000; ++i) p.push_back(i % 250 == 7 ? "bad " + std::to_string(i) : std::string());
    EXPECT_EQ(p.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(p[i], i % 250 == 7 ? "bad " + std::to_string(i) : std::string()) << i;
    EXPECT_EQ(p[5000], "");  // past the end: no problem known
}
