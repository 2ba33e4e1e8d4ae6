// The daemon's line for a helper's timing marks (codecs/netcdf/
// helper_timing.hpp, NCAFS_HELPER_TIMING=1): the marks come from a helper
// the file may have subverted, so they must not forge a log line (a
// newline, a line of its own), overflow (numbers out of range) or make a
// line of any length (as many marks as it likes): one line, at most 16
// marks, each a name of letters, digits and '_' and a number.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "codecs/netcdf/helper_timing.hpp"

namespace ncafs::netcdf {
namespace {

std::string line_for(const std::string& marks) {
    const auto asked = std::chrono::steady_clock::time_point(std::chrono::milliseconds(1000));
    testing::internal::CaptureStderr();
    helper_timing::report("file.nc (description)", marks, asked, asked + std::chrono::milliseconds(5));
    return testing::internal::GetCapturedStderr();
}

TEST(HelperTiming, HonestMarksAreMillisecondsSinceTheAsk) {
    // 1000 ms is the ask; marks 1.5 and 3 ms after it.
    const std::string line = line_for("forked=1001500000;surveyed=1003000000;");
    EXPECT_NE(line.find("file.nc (description): forked 1.500 surveyed 3.000 answered 5.000\n"), std::string::npos)
        << line;
}

TEST(HelperTiming, HostileMarksCannotForgeALineOrGrowIt) {
    std::string marks = "x\nncafs: error: forged line=1;huge=99999999999999999999999999;low=-9223372036854775808;"
                        "no number=abc;";
    for (int i = 0; i < 100000; ++i) marks += "m=1;";
    marks += std::string(1 << 20, 'a') + "=1;";
    const std::string line = line_for(marks);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line.substr(0, 300);
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find("ncafs: error"), std::string::npos) << line.substr(0, 300);
    EXPECT_NE(line.find(" xncafserrorforgedline "), std::string::npos) << line.substr(0, 300);
    EXPECT_LT(line.size(), 2000u) << "16 marks at most, names of 32 characters at most";
}

}  // namespace
}  // namespace ncafs::netcdf
