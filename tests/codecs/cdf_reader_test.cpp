// The CDF header reader, layout and CdfVariableSource against netcdf-c on the
// ncgen-generated corpus.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <random>

#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/cdf_variable_source.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "tests/codecs/cdf_test_support.hpp"

namespace ncafs::cdf {
namespace {

using cdftest::corpus;
using cdftest::CorpusFile;

// netcdf-c's view of one attribute: type, length and native values.
void expect_attribute_matches(int ncid, int varid, int attnum, const Attribute& ours, const std::string& where) {
    char name[NC_MAX_NAME + 1] = {};
    NC_OK(nc_inq_attname(ncid, varid, attnum, name));
    EXPECT_EQ(ours.name, name) << where;
    nc_type type;
    size_t len;
    NC_OK(nc_inq_att(ncid, varid, name, &type, &len));
    EXPECT_EQ(static_cast<int>(ours.type), type) << where << " " << name;
    EXPECT_EQ(ours.length(), len) << where << " " << name;
    std::vector<uint8_t> values(len * type_size(static_cast<NcType>(type)) + 1);
    NC_OK(nc_get_att(ncid, varid, name, values.data()));
    values.resize(len * type_size(static_cast<NcType>(type)));
    EXPECT_EQ(ours.values, values) << where << " attribute " << name;
}

std::vector<uint64_t> unravel(uint64_t i, const std::vector<uint64_t>& shape) {
    std::vector<uint64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    return idx;
}

TEST(CdfReader, MetadataAgreesWithNetcdfC) {
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        auto file = OpenFile::open(f.path);
        CdfHeader h = read_cdf_header(*file);
        Dataset ds = open_cdf_dataset(f.path);
        std::lock_guard lock(netcdf_library_mutex());
        int ncid;
        NC_OK(nc_open(f.path.c_str(), NC_NOWRITE, &ncid));
        int format;
        NC_OK(nc_inq_format(ncid, &format));
        EXPECT_EQ(h.version, format == NC_FORMAT_CLASSIC ? 1 : format == NC_FORMAT_64BIT_OFFSET ? 2 : 5);
        EXPECT_EQ(h.version, f.version);
        int ndims, nvars, natts, unlimdim;
        NC_OK(nc_inq(ncid, &ndims, &nvars, &natts, &unlimdim));
        ASSERT_EQ(ds.dimensions.size(), static_cast<size_t>(ndims));
        ASSERT_EQ(ds.variables.size(), static_cast<size_t>(nvars));
        ASSERT_EQ(ds.attributes.size(), static_cast<size_t>(natts));
        auto ours_unlim = ds.unlimited_dimension();
        EXPECT_EQ(ours_unlim ? static_cast<int>(*ours_unlim) : -1, unlimdim);
        for (int d = 0; d < ndims; ++d) {
            char name[NC_MAX_NAME + 1] = {};
            size_t len;
            NC_OK(nc_inq_dim(ncid, d, name, &len));
            EXPECT_EQ(ds.dimensions[d].name, name);
            EXPECT_EQ(ds.dimensions[d].length, len) << name;
            EXPECT_EQ(ds.dimensions[d].unlimited, d == unlimdim);
        }
        if (unlimdim >= 0) {
            size_t numrecs;
            NC_OK(nc_inq_dimlen(ncid, unlimdim, &numrecs));
            EXPECT_EQ(h.numrecs, numrecs);
        }
        for (int a = 0; a < natts; ++a) expect_attribute_matches(ncid, NC_GLOBAL, a, ds.attributes[a], "global");
        for (int v = 0; v < nvars; ++v) {
            char name[NC_MAX_NAME + 1] = {};
            nc_type type;
            int vndims, vnatts;
            int dimids[NC_MAX_VAR_DIMS];
            NC_OK(nc_inq_var(ncid, v, name, &type, &vndims, dimids, &vnatts));
            const Variable& ours = ds.variables[v];
            EXPECT_EQ(ours.name, name);
            EXPECT_EQ(static_cast<int>(ours.type), type) << name;
            ASSERT_EQ(ours.dimids.size(), static_cast<size_t>(vndims)) << name;
            for (int d = 0; d < vndims; ++d) EXPECT_EQ(ours.dimids[d], static_cast<size_t>(dimids[d])) << name;
            ASSERT_EQ(ours.attributes.size(), static_cast<size_t>(vnatts)) << name;
            for (int a = 0; a < vnatts; ++a) expect_attribute_matches(ncid, v, a, ours.attributes[a], name);
            EXPECT_EQ(ours.source->shape(), ds.shape(ours)) << name;
            EXPECT_EQ(ours.source->type(), ours.type) << name;
        }
        NC_OK(nc_close(ncid));
    }
}

TEST(CdfReader, ValuesAtComputedOffsetsEqualNcGetVar1) {
    std::mt19937_64 rng(7);
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        auto file = OpenFile::open(f.path);
        CdfHeader h = read_cdf_header(*file);
        CdfLayout layout = compute_layout(h, f.path);
        std::lock_guard lock(netcdf_library_mutex());
        int ncid;
        NC_OK(nc_open(f.path.c_str(), NC_NOWRITE, &ncid));
        for (size_t v = 0; v < layout.variables.size(); ++v) {
            const VariableLayout& vl = layout.variables[v];
            const uint64_t n = vl.element_count();
            std::vector<uint64_t> samples;
            if (n <= 300) {
                for (uint64_t i = 0; i < n; ++i) samples.push_back(i);
            } else {
                samples = {0, n - 1};
                for (int k = 0; k < 300; ++k) samples.push_back(rng() % n);
            }
            for (uint64_t i : samples) {
                auto idx = unravel(i, vl.shape);
                const uint64_t off = layout.element_offset(v, idx);
                ASSERT_EQ(off, layout.linear_element_offset(v, i));
                uint8_t ours[8], theirs[8];
                file->pread_exact(ours, vl.element_size, off);
                swap_from_big_endian(vl.type, ours, 1);
                std::vector<size_t> index(idx.begin(), idx.end());
                NC_OK(nc_get_var1(ncid, static_cast<int>(v), index.data(), theirs));
                ASSERT_EQ(0, std::memcmp(ours, theirs, vl.element_size))
                    << h.variables[v].name << " element " << i << " at offset " << off;
            }
        }
        NC_OK(nc_close(ncid));
    }
}

TEST(CdfReader, HyperslabReadsEqualNcGetVara) {
    std::mt19937_64 rng(11);
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        Dataset ds = open_cdf_dataset(f.path);
        std::lock_guard lock(netcdf_library_mutex());
        int ncid;
        NC_OK(nc_open(f.path.c_str(), NC_NOWRITE, &ncid));
        for (size_t v = 0; v < ds.variables.size(); ++v) {
            const auto& src = *ds.variables[v].source;
            const auto shape = src.shape();
            const size_t esize = type_size(src.type());
            for (int k = 0; k < 25; ++k) {
                std::vector<uint64_t> start(shape.size()), count(shape.size());
                std::vector<size_t> nstart(shape.size()), ncount(shape.size());
                uint64_t total = 1;
                for (size_t d = 0; d < shape.size(); ++d) {
                    if (shape[d] == 0) {
                        start[d] = count[d] = 0;
                    } else if (k % 3 == 0) {  // full boxes exercise the coalesced runs
                        start[d] = 0;
                        count[d] = shape[d];
                    } else {
                        start[d] = rng() % shape[d];
                        count[d] = 1 + rng() % (shape[d] - start[d]);
                    }
                    nstart[d] = start[d];
                    ncount[d] = count[d];
                    total *= count[d];
                }
                std::vector<uint8_t> ours(total * esize + 1), theirs(total * esize + 1);
                src.read(start, count, ByteOrder::Native, ours.data());
                if (total > 0) NC_OK(nc_get_vara(ncid, static_cast<int>(v), nstart.data(), ncount.data(), theirs.data()));
                ASSERT_EQ(ours, theirs) << ds.variables[v].name << " box " << k;
                std::vector<uint8_t> big(total * esize + 1);
                src.read(start, count, ByteOrder::Big, big.data());
                swap_from_big_endian(src.type(), big.data(), total);
                ASSERT_EQ(big, theirs) << ds.variables[v].name << " big-endian box " << k;
            }
        }
        NC_OK(nc_close(ncid));
    }
}

TEST(CdfReader, BigEndianExtentsHoldTheElements) {
    std::mt19937_64 rng(5);
    for (const CorpusFile& f : corpus()) {
        SCOPED_TRACE(f.label());
        Dataset ds = open_cdf_dataset(f.path);
        for (const auto& var : ds.variables) {
            const auto& src = *var.source;
            const uint64_t n = src.element_count();
            if (n == 0) continue;
            const size_t esize = type_size(src.type());
            for (int k = 0; k < 10; ++k) {
                uint64_t first = rng() % n, count = 1 + rng() % (n - first);
                if (k == 0) first = 0, count = n;
                std::vector<uint8_t> expected(count * esize), got;
                src.read_linear(first, count, ByteOrder::Big, expected.data());
                auto extents = src.big_endian_extents(first, count);
                ASSERT_TRUE(extents.has_value());
                for (const auto& e : *extents) {
                    std::vector<uint8_t> part(e.length);
                    e.file->pread_exact(part.data(), e.length, e.offset);
                    got.insert(got.end(), part.begin(), part.end());
                }
                ASSERT_EQ(got, expected) << var.name;
            }
        }
    }
}

TEST(CdfReader, SpecProductVectorExamples) {
    // Spec "Notes on Computing File Offsets": [5 3 2 7] -> [210 42 14 7], vsize 212 (bytes);
    // record [0 2 9 4] -> [. 72 36 4] (the record entry holds the elements per record).
    CdfHeader h;
    h.dimensions = {{"r", 0, true}, {"a", 5}, {"b", 3}, {"c", 2}, {"d", 7}, {"e", 2}, {"f", 9}, {"g", 4}};
    h.variables.push_back({"fixed", {1, 2, 3, 4}, {}, NcType::Byte, 0, 100, 0});
    h.variables.push_back({"rec", {0, 5, 6, 7}, {}, NcType::Byte, 0, 400, 0});
    CdfLayout l = compute_layout(h, "spec");
    EXPECT_EQ(l.variables[0].products, (std::vector<uint64_t>{210, 42, 14, 7}));
    EXPECT_EQ(l.variables[0].padded_bytes, 212u);
    EXPECT_EQ(l.variables[1].products, (std::vector<uint64_t>{72, 72, 36, 4}));
    EXPECT_EQ(l.variables[1].padded_bytes, 72u);
}

TEST(CdfReader, StreamingNumrecsFollowsFromFileSize) {
    for (const char* cdl : {"several_record_vars", "one_record_var_byte", "one_record_var_1d_byte", "fill_values"}) {
        for (const char* kind : {"nc3", "nc5"}) {
            const CorpusFile& f = cdftest::corpus_file(cdl, kind);
            SCOPED_TRACE(f.label());
            auto bytes = cdftest::read_file(f.path);
            CdfHeader original = parse_cdf_header(bytes, f.path);
            ASSERT_GT(original.numrecs, 0u);
            std::fill(bytes.begin() + 4, bytes.begin() + (f.version == 5 ? 12 : 8), 0xFF);
            CdfHeader streamed = parse_cdf_header(bytes, f.path);
            EXPECT_TRUE(streamed.streaming);
            EXPECT_EQ(streamed.numrecs, original.numrecs);
            EXPECT_EQ(streamed.dimensions[*streamed.record_dimension()].length, original.numrecs);
        }
    }
}

// Files of one header layout share one parse (codecs/cdf/shared_headers.hpp):
// each must still get its own numrecs, and a header differing in one byte
// (an attribute) its own parse. Checked against netcdf-c on ncgen's files.
TEST(CdfReader, FilesOfOneLayoutKeepTheirOwnNumrecsAndAttributes) {
    const std::string dir = cdftest::temp_dir();
    auto make = [&](const std::string& name, int records, const std::string& units) {
        const std::string cdl = dir + "/" + name + ".cdl", nc = dir + "/" + name + ".nc";
        std::string text = "netcdf " + name + " {\ndimensions: time = UNLIMITED ; x = 2 ;\nvariables: float v(time, x) ;\n" +
                           "  v:units = \"" + units + "\" ;\ndata: v = ";
        for (int i = 0; i < 2 * records; ++i) text += (i ? ", " : "") + std::to_string(i * records + 0.5);
        text += " ;\n}\n";
        cdftest::write_file(cdl, std::vector<uint8_t>(text.begin(), text.end()));
        EXPECT_EQ(cdftest::run("ncgen -k nc3 -o " + nc + " " + cdl), 0);
        return nc;
    };
    const std::vector<std::string> files = {make("three", 3, "K"), make("five", 5, "K"), make("celsius", 5, "C"),
                                            make("one", 1, "K")};
    for (const auto& path : files) {
        SCOPED_TRACE(path);
        Dataset ds = open_cdf_dataset(path);
        const Variable* v = ds.find_variable("v");
        ASSERT_NE(v, nullptr);
        std::vector<float> ours(v->source->element_count());
        v->source->read_linear(0, ours.size(), ByteOrder::Native, ours.data());
        const Attribute* units = v->find_attribute("units");
        ASSERT_NE(units, nullptr);
        std::lock_guard lock(netcdf_library_mutex());
        int ncid = 0, varid = 0, dimid = 0;
        size_t records = 0, units_length = 0;
        NC_OK(nc_open(path.c_str(), NC_NOWRITE, &ncid));
        NC_OK(nc_inq_varid(ncid, "v", &varid));
        NC_OK(nc_inq_unlimdim(ncid, &dimid));
        NC_OK(nc_inq_dimlen(ncid, dimid, &records));
        NC_OK(nc_inq_attlen(ncid, varid, "units", &units_length));
        std::string their_units(units_length, '\0');
        NC_OK(nc_get_att_text(ncid, varid, "units", their_units.data()));
        std::vector<float> theirs(records * 2);
        NC_OK(nc_get_var_float(ncid, varid, theirs.data()));
        NC_OK(nc_close(ncid));
        EXPECT_EQ(ds.dimensions[0].length, records);
        EXPECT_EQ(v->source->shape().at(0), records);
        EXPECT_EQ(std::string(units->values.begin(), units->values.end()), their_units);
        EXPECT_EQ(ours, theirs);
    }
}

// Files of one header and numrecs share the layout checked for the first
// (shared_headers.hpp); its check still holds for each: a copy short of
// its last data bytes is refused, a longer one reads the same values.
TEST(CdfReader, ASharedLayoutIsCheckedAgainstEachFileSize) {
    const std::string dir = cdftest::temp_dir();
    const std::string cdl = dir + "/alike.cdl", nc = dir + "/alike.nc";
    const std::string text =
        "netcdf alike {\ndimensions: time = UNLIMITED ; x = 2 ;\nvariables: float v(time, x) ;\n"
        "data: v = 1, 2, 3, 4, 5, 6 ;\n}\n";
    cdftest::write_file(cdl, std::vector<uint8_t>(text.begin(), text.end()));
    ASSERT_EQ(cdftest::run("ncgen -k nc3 -o " + nc + " " + cdl), 0);
    auto bytes = cdftest::read_file(nc);
    auto values = [](const std::string& path) {
        Dataset ds = open_cdf_dataset(path);
        std::vector<float> out(ds.find_variable("v")->source->element_count());
        ds.find_variable("v")->source->read_linear(0, out.size(), ByteOrder::Native, out.data());
        return out;
    };
    const std::vector<float> want = {1, 2, 3, 4, 5, 6};
    EXPECT_EQ(values(nc), want);
    auto shorter = bytes, longer = bytes;
    shorter.resize(bytes.size() - 4);
    longer.resize(bytes.size() + 8, 0xAB);
    cdftest::write_file(dir + "/shorter.nc", shorter);
    cdftest::write_file(dir + "/longer.nc", longer);
    for (int round = 0; round < 2; ++round) {  // before and after a longer file shares the layout
        try {
            open_cdf_dataset(dir + "/shorter.nc");
            FAIL() << "a file short of its data was opened";
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find("beyond the end of the file"), std::string::npos) << e.what();
        }
        EXPECT_EQ(values(dir + "/longer.nc"), want);
    }
}

TEST(CdfReader, FileThatShrinksGivesSourceError) {
    const CorpusFile& f = cdftest::corpus_file("several_record_vars", "nc6");
    std::string copy = cdftest::temp_dir() + "/shrinking.nc";
    auto bytes = cdftest::read_file(f.path);
    cdftest::write_file(copy, bytes);
    Dataset ds = open_cdf_dataset(copy);
    const Variable* rf = ds.find_variable("rf");
    ASSERT_NE(rf, nullptr);
    std::vector<float> values(rf->source->element_count());
    rf->source->read_linear(0, values.size(), ByteOrder::Native, values.data());
    ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(bytes.size() - 20)), 0);
    EXPECT_THROW(rf->source->read_linear(0, values.size(), ByteOrder::Native, values.data()), SourceError);
    // The read above saw the change: extents of that file are refused too.
    EXPECT_THROW((void)rf->source->big_endian_extents(0, 1), SourceError);
    // Back to the same size but rewritten: still an error, never other bytes.
    bytes[bytes.size() - 1] ^= 1;
    cdftest::write_file(copy, bytes);
    EXPECT_THROW(rf->source->read_linear(0, values.size(), ByteOrder::Native, values.data()), SourceError);
}

TEST(CdfReader, FileAndMemoryParsesAgree) {
    for (const CorpusFile& f : corpus()) {
        auto file = OpenFile::open(f.path);
        CdfHeader a = read_cdf_header(*file);
        CdfHeader b = parse_cdf_header(cdftest::read_file(f.path), f.path);
        EXPECT_EQ(a.header_size, b.header_size) << f.label();
        EXPECT_EQ(a.variables.size(), b.variables.size()) << f.label();
    }
}


// Attributes far larger than the first read (a million-partition NCA JSON in
// the middle of a header, more header after it) are read straight from the
// file: values, names and offsets as netcdf-c reads them; with
// AttributeValues::Skip the same names and layout without values; a file cut
// inside the big value is refused either way.
TEST(CdfReader, LargeAttributeInTheMiddleOfTheHeader) {
    const std::string path = cdftest::temp_dir() + "/large_attribute.nc";
    std::string big;
    for (int i = 0; big.size() < 700 * 1024; ++i) big += "{\"index\": [" + std::to_string(i) + "]}, ";
    {
        std::lock_guard lock(netcdf_library_mutex());
        int ncid, dim, v1, v2;
        NC_OK(nc_create(path.c_str(), NC_CLOBBER, &ncid));
        NC_OK(nc_def_dim(ncid, "x", 3, &dim));
        NC_OK(nc_def_var(ncid, "tas", NC_FLOAT, 1, &dim, &v1));
        NC_OK(nc_put_att_text(ncid, v1, "nca_array", big.size(), big.data()));
        const double scale = 2.5;
        NC_OK(nc_put_att_double(ncid, v1, "scale_factor", NC_DOUBLE, 1, &scale));
        NC_OK(nc_def_var(ncid, "x", NC_INT, 1, &dim, &v2));
        NC_OK(nc_put_att_text(ncid, v2, "units", 1, "m"));
        NC_OK(nc_enddef(ncid));
        const int xs[3] = {7, 8, 9};
        NC_OK(nc_put_var_int(ncid, v2, xs));
        NC_OK(nc_close(ncid));
    }
    CdfLayout layout_read, layout_skipped;
    const CdfHeader read = read_cdf_header(*OpenFile::open(path), &layout_read);
    const CdfHeader skipped = read_cdf_header(*OpenFile::open(path), &layout_skipped, AttributeValues::Skip);
    std::lock_guard lock(netcdf_library_mutex());
    int ncid;
    NC_OK(nc_open(path.c_str(), NC_NOWRITE, &ncid));
    ASSERT_EQ(read.variables.size(), 2u);
    for (int v = 0; v < 2; ++v) {
        const auto& ours = read.variables[static_cast<size_t>(v)];
        ASSERT_EQ(ours.attributes.size(), skipped.variables[static_cast<size_t>(v)].attributes.size());
        for (size_t a = 0; a < ours.attributes.size(); ++a) {
            expect_attribute_matches(ncid, v, static_cast<int>(a), ours.attributes[a], ours.name);
            const Attribute& names_only = skipped.variables[static_cast<size_t>(v)].attributes[a];
            EXPECT_EQ(names_only.name, ours.attributes[a].name);
            EXPECT_EQ(names_only.type, ours.attributes[a].type);
            EXPECT_TRUE(names_only.values.empty());
        }
        EXPECT_EQ(skipped.variables[static_cast<size_t>(v)].begin, ours.begin);
    }
    NC_OK(nc_close(ncid));
    EXPECT_EQ(read.header_size, skipped.header_size);
    EXPECT_EQ(read.variables[0].attributes[0].as_text(), big);
    const auto bytes = cdftest::read_file(path);
    EXPECT_EQ(parse_cdf_header(bytes, path).header_size, read.header_size);
    const std::string cut = cdftest::temp_dir() + "/large_attribute_cut.nc";
    // Cut inside the big value, then in the entries after it.
    for (size_t size : {size_t{400 * 1024}, static_cast<size_t>(read.header_size - 10)}) {
        cdftest::write_file(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(size)));
        for (auto mode : {AttributeValues::Read, AttributeValues::Skip}) {
            try {
                (void)read_cdf_header(*OpenFile::open(cut), nullptr, mode);
                ADD_FAILURE() << "a header cut at " << size << " was accepted";
            } catch (const FormatError& e) {
                EXPECT_NE(std::string(e.what()).find("large_attribute_cut.nc"), std::string::npos) << e.what();
            }
        }
    }
}

}  // namespace
}  // namespace ncafs::cdf
