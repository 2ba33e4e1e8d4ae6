// Unit tests of the ds header JSON (against Python's json/repr behaviour,
// spelled out from the spec and Python's documentation) and the 441-byte
// example of docs/formats/ds.md ("Worked example"), reproduced byte for byte
// and read back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codecs/array_source.hpp"
#include "codecs/ds/ds_json.hpp"
#include "codecs/ds/ds_layout.hpp"
#include "codecs/ds/ds_reader.hpp"
#include "codecs/error.hpp"
#include "ds_test_support.hpp"

using namespace ncafs;
using namespace ncafs::ds;

TEST(PythonFloatRepr, MatchesPythonRepr) {
    // Values and strings as CPython 3 prints repr(float).
    const std::pair<double, const char*> cases[] = {
        {250.0, "250.0"}, {0.5, "0.5"}, {1e-05, "1e-05"}, {1e16, "1e+16"}, {-0.0, "-0.0"},
        {0.0001, "0.0001"}, {1e15, "1000000000000000.0"}, {123456789012345680.0, "1.2345678901234568e+17"},
        {0.1f, "0.10000000149011612"}, {1.5e-7, "1.5e-07"}, {1e100, "1e+100"}, {-2.5, "-2.5"},
        {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"}, {273.1499938964844, "273.1499938964844"},
        {9.999999747378752e-06, "9.999999747378752e-06"}, {1.0, "1.0"}, {100.0, "100.0"}, {0.001, "0.001"}};
    for (const auto& [v, s] : cases) EXPECT_EQ(python_float_repr(v), s) << s;
}

TEST(PythonJsonDumps, SeparatorsEscapesAndNonFinite) {
    Json o = Json::object();
    o["b"] = Json::array({1, 2.0, "x"});
    o["a"] = "caf\xc3\xa9 \xf0\x9d\x84\x9e \x01\x7f\t\n\"\\/";
    o["n"] = std::nan("");
    o["i"] = HUGE_VAL;
    o["j"] = -HUGE_VAL;
    o["e"] = Json::object();
    o["l"] = Json::array();
    o["u"] = 18446744073709551615ull;
    o["k"] = -9223372036854775807ll;
    o["z"] = nullptr;
    o["t"] = true;
    EXPECT_EQ(python_json_dumps(o),
              R"({"b": [1, 2.0, "x"], "a": "caf\u00e9 \ud834\udd1e \u0001\u007f\t\n\"\\/", "n": NaN, "i": Infinity, )"
              R"("j": -Infinity, "e": {}, "l": [], "u": 18446744073709551615, "k": -9223372036854775807, "z": null, "t": true})");
}

TEST(PythonJsonParse, AcceptsBareNonFiniteTokensOutsideStrings) {
    const Json v = parse_python_json(R"({"a": [NaN, Infinity, -Infinity], "s": "NaN Infinity", "x": -1.5})");
    ASSERT_TRUE(v["a"][0].is_number_float());
    EXPECT_TRUE(std::isnan(v["a"][0].get<double>()));
    EXPECT_EQ(v["a"][1].get<double>(), HUGE_VAL);
    EXPECT_EQ(v["a"][2].get<double>(), -HUGE_VAL);
    EXPECT_EQ(v["s"], "NaN Infinity");
    EXPECT_EQ(v["x"].get<double>(), -1.5);
    // Round trip of the dumps output.
    EXPECT_EQ(python_json_dumps(v), R"({"a": [NaN, Infinity, -Infinity], "s": "NaN Infinity", "x": -1.5})");
    EXPECT_THROW(parse_python_json(R"({"a": NaNx})"), JsonSyntaxError);
    EXPECT_THROW(parse_python_json(R"({"a": nan})"), JsonSyntaxError);
    EXPECT_THROW(parse_python_json(R"({"a": "unterminated)"), JsonSyntaxError);
}

namespace {

// The example of docs/formats/ds.md ("Worked example"), as ds-format 5.0.2 writes it.
const char* kExampleHeader =
    R"({"name": {".dims": ["k"], ".size": [2], ".offset": 0, ".len": 20, ".type": "unicode", ".missing": false, ".endian": "l"}, )"
    R"("t": {".dims": ["n"], "_FillValue": -1, ".size": [3], ".offset": 20, ".len": 5, ".type": "int16", ".missing": true, ".endian": "l"}, )"
    R"("z": {".dims": [], "units": "m", ".size": [], ".offset": 25, ".len": 4, ".type": "float32", ".missing": false, ".endian": "l"}, )"
    R"(".": {"title": "ex"}})";

std::vector<uint8_t> example_file_bytes() {
    std::string s = std::string("ds-1.0\n") + kExampleHeader + "\n";
    std::vector<uint8_t> b(s.begin(), s.end());
    const uint8_t body[] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x62, 0xc3, 0xa9,
                            0x40, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0xc0, 0x3f};
    b.insert(b.end(), std::begin(body), std::end(body));
    return b;
}

// The example's dataset as ds-format holds it in Python (".dims" first,
// then the attributes), each block encoded from the values by hand here.
std::shared_ptr<const VirtualFile> example_from_dataset() {
    std::vector<DsLayoutVariable> vars;
    {   // name: unicode ["a", "bé"]
        DsLayoutVariable v;
        v.name = "name";
        v.meta[".dims"] = Json::array({"k"});
        v.size = std::vector<uint64_t>{2};
        v.type = "unicode";
        v.endian = "l";
        std::vector<uint8_t> b;
        const std::string strings[] = {"a", "b\xc3\xa9"};
        for (const auto& s : strings) {
            uint64_t len = s.size();  // little-endian host: bytes as "l"
            const auto* p = reinterpret_cast<const uint8_t*>(&len);
            b.insert(b.end(), p, p + 8);
        }
        for (const auto& s : strings) b.insert(b.end(), s.begin(), s.end());
        v.block = std::make_shared<BytesBlock>(b);
        vars.push_back(v);
    }
    {   // t: int16 [1, masked, 3], _FillValue -1
        DsLayoutVariable v;
        v.name = "t";
        v.meta[".dims"] = Json::array({"n"});
        v.meta["_FillValue"] = -1;
        v.size = std::vector<uint64_t>{3};
        v.type = "int16";
        v.missing = true;
        v.endian = "l";
        std::vector<uint8_t> b = {0b01000000};
        for (int16_t x : {int16_t{1}, int16_t{3}}) {
            const auto* p = reinterpret_cast<const uint8_t*>(&x);
            b.insert(b.end(), p, p + 2);
        }
        v.block = std::make_shared<BytesBlock>(b);
        vars.push_back(v);
    }
    {   // z: float32 scalar 1.5, units "m"
        DsLayoutVariable v;
        v.name = "z";
        v.meta[".dims"] = Json::array();
        v.meta["units"] = "m";
        v.size = std::vector<uint64_t>{};
        v.type = "float32";
        v.endian = "l";
        float x = 1.5f;
        const auto* p = reinterpret_cast<const uint8_t*>(&x);
        v.block = std::make_shared<BytesBlock>(std::vector<uint8_t>(p, p + 4));
        vars.push_back(v);
    }
    Json global = Json::object();
    global["title"] = "ex";
    return make_ds_layout(vars, global);
}

}  // namespace

TEST(DsExample, ReproducedByteForByte) {
    const auto expected = example_file_bytes();
    ASSERT_EQ(expected.size(), 441u);
    const auto f = example_from_dataset();
    ASSERT_EQ(f->size(), 441u);
    const auto ours = ds_test::read_all(*f);
    EXPECT_EQ(ours, expected) << ds_test::describe_difference(ours, expected);
}

TEST(DsExample, ReadBack) {
    const std::string dir = ds_test::scratch_dir("example");
    ds_test::write_bytes(dir + "/ex.ds", example_file_bytes());
    const Dataset d = open_ds_dataset(dir + "/ex.ds");
    ASSERT_EQ(d.variables.size(), 3u);
    const Variable* name = d.find_variable("name");
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(name->type, NcType::Char);
    ASSERT_EQ(name->source->shape(), (std::vector<uint64_t>{2, 3}));
    std::vector<char> chars(6);
    name->source->read_linear(0, 6, ByteOrder::Native, chars.data());
    EXPECT_EQ(std::string(chars.begin(), chars.end()), std::string("a\0\0b\xc3\xa9", 6));

    const Variable* t = d.find_variable("t");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, NcType::Short);
    std::vector<int16_t> tv(3);
    t->source->read_linear(0, 3, ByteOrder::Native, tv.data());
    EXPECT_EQ(tv, (std::vector<int16_t>{1, -1, 3}));
    const Attribute* fill = t->find_attribute("_FillValue");
    ASSERT_NE(fill, nullptr);
    EXPECT_EQ(fill->type, NcType::Short);
    EXPECT_EQ(fill->as_double(), -1);
    // Big-endian read of a sub-box.
    std::vector<uint8_t> be(4);
    const uint64_t start[] = {1}, count[] = {2};
    t->source->read(start, count, ByteOrder::Big, be.data());
    EXPECT_EQ(be, (std::vector<uint8_t>{0xff, 0xff, 0x00, 0x03}));

    const Variable* z = d.find_variable("z");
    ASSERT_NE(z, nullptr);
    EXPECT_TRUE(z->source->shape().empty());
    float zv = 0;
    z->source->read_linear(0, 1, ByteOrder::Native, &zv);
    EXPECT_EQ(zv, 1.5f);
    ASSERT_NE(z->find_attribute("units"), nullptr);
    EXPECT_EQ(z->find_attribute("units")->as_text(), "m");
    ASSERT_NE(d.find_attribute("title"), nullptr);
    EXPECT_EQ(d.find_attribute("title")->as_text(), "ex");
    // Dimensions k, n from .dims, plus the string length of "name".
    EXPECT_TRUE(d.find_dimension("k").has_value());
    EXPECT_TRUE(d.find_dimension("n").has_value());
    EXPECT_EQ(d.dimensions[*d.find_dimension("name_strlen")].length, 3u);
}

TEST(DsSignature, RecognisesBothLayouts) {
    auto sig = [](const std::string& s) {
        return has_ds_signature(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
    };
    EXPECT_TRUE(sig("ds-1.0\n{"));
    EXPECT_TRUE(sig("{\"x\": {}}"));
    EXPECT_TRUE(sig("{ }"));
    EXPECT_FALSE(sig("CDF\x01"));
    EXPECT_FALSE(sig("\x89HDF\r\n"));
    EXPECT_FALSE(sig("{1"));
    EXPECT_FALSE(sig(""));
}

TEST(DsExperimental, ReadsTheOldLayout) {
    // ds-format 2.0.x: no version line, .type + .dsize, scalar .size 1.
    std::string header =
        R"({"a": {".dims": ["x"], ".size": [3], ".type": "int", ".dsize": 32, ".offset": 0, ".len": 12, ".endian": "b", ".missing": false}, )"
        R"("s": {".dims": [], ".size": 1, ".type": "float", ".dsize": 64, ".offset": 12, ".len": 8, ".endian": "l", ".missing": false, "units": "K"}, )"
        R"("f": {".dims": ["x"], ".size": [3], ".type": "bool", ".dsize": 1, ".offset": 20, ".len": 1, ".endian": "b", ".missing": false}, )"
        R"(".": {"v": [1, 2.5]}})";
    std::vector<uint8_t> b(header.begin(), header.end());
    b.push_back('\n');
    const uint8_t a[] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 0, 0, 1, 0};
    b.insert(b.end(), std::begin(a), std::end(a));
    double s = 273.5;
    const auto* p = reinterpret_cast<const uint8_t*>(&s);
    b.insert(b.end(), p, p + 8);
    b.push_back(0b10100000);
    const std::string dir = ds_test::scratch_dir("experimental");
    ds_test::write_bytes(dir + "/old.ds", b);
    const Dataset d = open_ds_dataset(dir + "/old.ds");
    std::vector<int32_t> av(3);
    d.find_variable("a")->source->read_linear(0, 3, ByteOrder::Native, av.data());
    EXPECT_EQ(av, (std::vector<int32_t>{1, -2, 256}));
    const Variable* sv = d.find_variable("s");
    EXPECT_TRUE(sv->source->shape().empty());
    double sval = 0;
    sv->source->read_linear(0, 1, ByteOrder::Native, &sval);
    EXPECT_EQ(sval, 273.5);
    std::vector<int8_t> fv(3);
    d.find_variable("f")->source->read_linear(0, 3, ByteOrder::Native, fv.data());
    EXPECT_EQ(fv, (std::vector<int8_t>{1, 0, 1}));
    const Attribute* v = d.find_attribute("v");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->type, NcType::Double);
    EXPECT_EQ(v->length(), 2u);
}
