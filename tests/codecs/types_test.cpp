#include "codecs/types.hpp"

#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"
#include "codecs/error.hpp"

#include <gtest/gtest.h>
#include <netcdf.h>

#include <cstring>
#include <limits>

namespace ncafs {
namespace {

// netcdf-c's own constants are the independent reference for tags and fills.
TEST(Types, TagsMatchNetcdfC) {
    EXPECT_EQ(static_cast<int>(NcType::Byte), NC_BYTE);
    EXPECT_EQ(static_cast<int>(NcType::Char), NC_CHAR);
    EXPECT_EQ(static_cast<int>(NcType::Short), NC_SHORT);
    EXPECT_EQ(static_cast<int>(NcType::Int), NC_INT);
    EXPECT_EQ(static_cast<int>(NcType::Float), NC_FLOAT);
    EXPECT_EQ(static_cast<int>(NcType::Double), NC_DOUBLE);
    EXPECT_EQ(static_cast<int>(NcType::UByte), NC_UBYTE);
    EXPECT_EQ(static_cast<int>(NcType::UShort), NC_USHORT);
    EXPECT_EQ(static_cast<int>(NcType::UInt), NC_UINT);
    EXPECT_EQ(static_cast<int>(NcType::Int64), NC_INT64);
    EXPECT_EQ(static_cast<int>(NcType::UInt64), NC_UINT64);
    EXPECT_FALSE(is_valid_type_tag(0));
    EXPECT_FALSE(is_valid_type_tag(12));
}

TEST(Types, SizesAndNamesMatchNetcdfC) {
    for (NcType t : kAllTypes) {
        char name[NC_MAX_NAME + 1];
        size_t size = 0;
        ASSERT_EQ(nc_inq_type(NC_GLOBAL, static_cast<nc_type>(t), name, &size), NC_NOERR);
        EXPECT_EQ(type_size(t), size) << name;
        EXPECT_EQ(type_name(t), std::string_view(name));
        EXPECT_EQ(type_from_name(name), t);
    }
    EXPECT_EQ(type_from_name("float64"), NcType::Double);
    EXPECT_FALSE(type_from_name("complex").has_value());
}

template <typename T>
void expect_fill(NcType t, T expected) {
    auto be = default_fill_big_endian(t);
    ASSERT_EQ(be.size(), sizeof(T));
    uint8_t bytes[8];
    std::memcpy(bytes, be.data(), be.size());
    swap_from_big_endian(t, bytes, 1);
    T got;
    std::memcpy(&got, bytes, sizeof(T));
    EXPECT_EQ(std::memcmp(&got, &expected, sizeof(T)), 0) << type_name(t);
}

TEST(Types, DefaultFillsMatchNetcdfC) {
    expect_fill<signed char>(NcType::Byte, NC_FILL_BYTE);
    expect_fill<char>(NcType::Char, NC_FILL_CHAR);
    expect_fill<short>(NcType::Short, NC_FILL_SHORT);
    expect_fill<int>(NcType::Int, NC_FILL_INT);
    expect_fill<float>(NcType::Float, NC_FILL_FLOAT);
    expect_fill<double>(NcType::Double, NC_FILL_DOUBLE);
    expect_fill<unsigned char>(NcType::UByte, NC_FILL_UBYTE);
    expect_fill<unsigned short>(NcType::UShort, NC_FILL_USHORT);
    expect_fill<unsigned int>(NcType::UInt, NC_FILL_UINT);
    expect_fill<long long>(NcType::Int64, NC_FILL_INT64);
    expect_fill<unsigned long long>(NcType::UInt64, NC_FILL_UINT64);
    EXPECT_EQ(default_fill_as_double(NcType::Float), static_cast<double>(NC_FILL_FLOAT));
}

TEST(Types, BigEndianRoundTrip) {
    uint32_t v[2] = {0x01020304u, 0xA0B0C0D0u};
    swap_to_big_endian(NcType::UInt, v, 2);
    const auto* b = reinterpret_cast<const uint8_t*>(v);
    EXPECT_EQ(b[0], 0x01);
    EXPECT_EQ(b[3], 0x04);
    EXPECT_EQ(b[4], 0xA0);
    swap_from_big_endian(NcType::UInt, v, 2);
    EXPECT_EQ(v[0], 0x01020304u);
}

TEST(Types, ConversionRoundsAndFillsOutOfRange) {
    double in[] = {1.4, 1.5, -2.5, 300.0, std::numeric_limits<double>::quiet_NaN(), -128.0};
    int8_t out[6];
    size_t bad = convert_elements(NcType::Double, in, NcType::Byte, out, 6);
    EXPECT_EQ(bad, 2u);
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[1], 2);
    EXPECT_EQ(out[2], -3);
    EXPECT_EQ(out[3], NC_FILL_BYTE);
    EXPECT_EQ(out[4], NC_FILL_BYTE);
    EXPECT_EQ(out[5], -128);

    int64_t big[] = {-1, std::numeric_limits<int64_t>::max()};
    uint64_t ubig[2];
    EXPECT_EQ(convert_elements(NcType::Int64, big, NcType::UInt64, ubig, 2), 1u);
    EXPECT_EQ(ubig[0], NC_FILL_UINT64);
    EXPECT_EQ(ubig[1], static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));

    uint16_t us[] = {65535};
    float f[1];
    EXPECT_EQ(convert_elements(NcType::UShort, us, NcType::Float, f, 1), 0u);
    EXPECT_EQ(f[0], 65535.0f);
}

TEST(Types, FillElements) {
    int16_t v[7];
    int16_t one = -5;
    fill_elements(v, &one, 2, 7);
    for (int16_t x : v) EXPECT_EQ(x, -5);
}

}  // namespace
}  // namespace ncafs

// codecs/checked_math.hpp and element_count: sizes from files never wrap.
TEST(CheckedMath, OverflowIsDetectedNeverWrapped) {
    constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
    EXPECT_EQ(ncafs::checked::add(max - 1, 1), max);
    EXPECT_EQ(ncafs::checked::add(max, 1), std::nullopt);
    EXPECT_EQ(ncafs::checked::mul(uint64_t{1} << 32, uint64_t{1} << 31), uint64_t{1} << 63);
    EXPECT_EQ(ncafs::checked::mul(uint64_t{1} << 32, uint64_t{1} << 32), std::nullopt);
    // [2^64-1, +1) would pass "start + count <= length" once wrapped to 0.
    EXPECT_FALSE(ncafs::checked::fits_in(max, 1, 4));
    EXPECT_FALSE(ncafs::checked::fits_in(0, 5, 4));
    EXPECT_TRUE(ncafs::checked::fits_in(3, 1, 4));
    EXPECT_TRUE(ncafs::checked::fits_in(4, 0, 4));
    EXPECT_THROW(ncafs::checked::mul_or_throw(max, 2, [](const std::string& r) -> void { throw ncafs::UsageError(r); }),
                 ncafs::UsageError);
    const uint64_t big[] = {uint64_t{1} << 40, uint64_t{1} << 40};
    EXPECT_EQ(ncafs::element_count(big), max);  // saturates
    const uint64_t with_zero[] = {uint64_t{1} << 40, uint64_t{1} << 40, 0};
    EXPECT_EQ(ncafs::element_count(with_zero), 0u);
}
