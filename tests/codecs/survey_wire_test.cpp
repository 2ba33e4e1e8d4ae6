// A helper process's answer as the daemon decodes it (codecs/netcdf/
// survey_wire.hpp): the round trip keeps every field (the survey, a group's
// description, values, requests), and bytes written by a helper the file
// may have subverted - truncated, with counts beyond the bytes or the
// bounds, a chunk index of the wrong length, a chunk length of zero, a
// dimension index beyond those described, any word replaced by a hostile
// value - are an error, never a large allocation or a survey that reads wrong.
// The same for the term variables of aggregation files (an inventory, rows
// of a term, the inventory with the first rows of several terms): what
// decodes is then checked by TermReader::read, whose result always holds
// together (ends within the text, one mask an element); rows answered with
// the inventory that lie (counts, another variable's, twice, too many
// elements) are refused before any is kept.
#include <gtest/gtest.h>

#include <cstring>

#include "codecs/netcdf/netcdf_terms.hpp"
#include "codecs/netcdf/raw_chunks.hpp"
#include "codecs/netcdf/survey_wire.hpp"
#include "io/error.hpp"

namespace ncafs::netcdf {
namespace {

HelperAnswer sample() {
    auto storage = std::make_shared<Hdf5Storage>();
    storage->pipeline = {Hdf5Storage::Filter::Shuffle, Hdf5Storage::Filter::Deflate};
    storage->shuffle_size = 4;
    storage->type_size = 4;
    storage->dims = {5, 6};
    storage->chunk = {2, 6};
    storage->chunks = {{100, 40}, {0, 0}, {200, 44}};
    Hdf5Survey survey;
    survey.file_size = 4096;
    survey.storage["/tas"] = storage;
    Hdf5Indirections::Datasets datasets;
    datasets["/tas"] = std::nullopt;
    Hdf5Indirections::Finding link{Hdf5IndirectionKind::ExternalLink, "/x", "other.h5:/y"};
    datasets["/x"] = link;
    survey.indirections = Hdf5Indirections::from_parts(std::move(datasets), {link});
    HelperAnswer answer;
    answer.survey = std::move(survey);
    answer.diagnostic = "note";
    return answer;
}

void put_u64(std::vector<uint8_t>& bytes, size_t at, uint64_t v) { std::memcpy(bytes.data() + at, &v, 8); }

// Where the first occurrence of an 8-byte value lies in bytes.
size_t find_u64(const std::vector<uint8_t>& bytes, uint64_t v, size_t from = 0) {
    for (size_t i = from; i + 8 <= bytes.size(); ++i)
        if (std::memcmp(bytes.data() + i, &v, 8) == 0) return i;
    ADD_FAILURE() << "value not found";
    return 0;
}

TEST(SurveyWire, RoundTripKeepsEveryField) {
    const HelperAnswer back = decode_answer(encode_answer(sample()));
    ASSERT_TRUE(back.survey);
    EXPECT_EQ(back.diagnostic, "note");
    EXPECT_EQ(back.survey->file_size, 4096u);
    const Hdf5Storage& s = *back.survey->storage.at("/tas");
    EXPECT_EQ(s.dims, (std::vector<uint64_t>{5, 6}));
    EXPECT_EQ(s.chunk, (std::vector<uint64_t>{2, 6}));
    ASSERT_EQ(s.chunks.size(), 3u);
    EXPECT_EQ(s.chunks[2].address, 200u);
    EXPECT_EQ(s.pipeline.size(), 2u);
    ASSERT_TRUE(back.survey->indirections);
    EXPECT_FALSE(back.survey->indirections->refusal("/", "tas"));
    EXPECT_EQ(back.survey->indirections->findings().size(), 1u);
}

// Deflate or fletcher32 without the shuffle (h5netcdf's gzip, netCDF4-python's
// shuffle=False): no shuffle size, and the file's storage still travels.
TEST(SurveyWire, APipelineWithoutShuffleTravels) {
    for (auto pipeline : {std::vector{Hdf5Storage::Filter::Deflate}, std::vector{Hdf5Storage::Filter::Fletcher32},
                          std::vector{Hdf5Storage::Filter::Fletcher32, Hdf5Storage::Filter::Deflate}}) {
        HelperAnswer answer = sample();
        auto s = std::make_shared<Hdf5Storage>(*answer.survey->storage.at("/tas"));
        s->pipeline = pipeline;
        s->shuffle_size = 0;
        answer.survey->storage["/tas"] = s;
        const HelperAnswer back = decode_answer(encode_answer(answer));
        EXPECT_EQ(back.survey->storage.at("/tas")->pipeline, pipeline);
    }
    // With a shuffle, a shuffle size of 0 stays an error.
    HelperAnswer answer = sample();
    auto s = std::make_shared<Hdf5Storage>(*answer.survey->storage.at("/tas"));
    s->shuffle_size = 0;
    answer.survey->storage["/tas"] = s;
    EXPECT_THROW(decode_answer(encode_answer(answer)), std::runtime_error);
}

TEST(SurveyWire, AnErrorTravels) {
    HelperAnswer answer;
    answer.error = "netcdf-c cannot open: NetCDF: HDF error";
    EXPECT_EQ(*decode_answer(encode_answer(answer)).error, *answer.error);
}

TEST(SurveyWire, EveryTruncationIsAnError) {
    const auto bytes = encode_answer(sample());
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(decode_answer(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)), std::runtime_error) << n;
    auto longer = bytes;
    longer.push_back(0);
    EXPECT_THROW(decode_answer(longer), std::runtime_error);
}

TEST(SurveyWire, HostileCountsAndShapesAreRefused) {
    const auto bytes = encode_answer(sample());
    // The chunk index's count (3) claimed as 2^40: beyond the bytes and the bound.
    const size_t count_at = find_u64(bytes, 3, find_u64(bytes, 6, find_u64(bytes, 2)));
    auto huge = bytes;
    put_u64(huge, count_at, uint64_t{1} << 40);
    EXPECT_THROW(decode_answer(huge), std::runtime_error);
    // A chunk length of 0 (a division by zero when reading): the chunk
    // list follows the dimensions (5, 6) as its count (2), then 2 and 6.
    auto zero = bytes;
    put_u64(zero, find_u64(bytes, 2, find_u64(bytes, 5)) + 8, 0);
    EXPECT_THROW(decode_answer(zero), std::runtime_error);
    // A dimension of 7 with the same 3 chunks: an index of the wrong length.
    auto longer_dim = bytes;
    put_u64(longer_dim, find_u64(bytes, 5), 7);
    EXPECT_THROW(decode_answer(longer_dim), std::runtime_error);
}

TEST(SurveyWire, AChunkPlaceBeyondTheFileIsAnErrorWhenRead) {
    HelperAnswer answer = sample();
    auto s = std::make_shared<Hdf5Storage>(*answer.survey->storage.at("/tas"));
    s->chunks[0] = {4000, 200};  // ends past the 4096-byte file
    answer.survey->storage["/tas"] = s;
    const HelperAnswer back = decode_answer(encode_answer(answer));
    auto plan = plan_raw_chunks(*back.survey, "/", "tas", NcType::Float, {5, 6}, 1 << 20);
    ASSERT_TRUE(plan);
    const std::vector<uint64_t> first{0, 0}, none{2, 0};
    EXPECT_THROW(locate_chunk(*plan, first, "f.nc"), SourceError);
    EXPECT_FALSE(locate_chunk(*plan, none, "f.nc"));  // never written: netcdf-c reads it
    const std::vector<uint64_t> between{1, 0};
    EXPECT_THROW(locate_chunk(*plan, between, "f.nc"), SourceError);  // not where a chunk starts
}

HelperAnswer described() {
    HelperAnswer answer = sample();
    NetcdfDescription d;
    d.group_path = "/";
    d.group_id = 0;
    d.dimensions = {{"time", 5, true}, {"x", 6, false}};
    d.attributes = {Attribute::text("title", "t")};
    VariableDescription v;
    v.name = "tas";
    v.type = NcType::Float;
    v.varid = 3;
    v.dimids = {0, 1};
    v.attributes = {Attribute::numeric<float>("scale", NcType::Float, {2.5f})};
    v.chunk_lengths = {2, 6};
    v.filtered = true;
    v.fill = {0, 0, 0x80, 0x3f};
    d.variables = {v};
    d.notes = {{true, false, "x", "an external link"}};
    d.skipped = {"variable s skipped"};
    answer.description = d;
    answer.survey->contiguous["/contiguous"] = Hdf5Contiguous{8, true, {512, 240}};
    return answer;
}

TEST(SurveyWire, ADescriptionTravelsWhole) {
    const HelperAnswer back = decode_answer(encode_answer(described()));
    ASSERT_TRUE(back.description);
    const NetcdfDescription& d = *back.description;
    EXPECT_EQ(d.group_path, "/");
    ASSERT_EQ(d.dimensions.size(), 2u);
    EXPECT_TRUE(d.dimensions[0].unlimited);
    EXPECT_EQ(d.dimensions[1].length, 6u);
    ASSERT_EQ(d.variables.size(), 1u);
    const VariableDescription& v = d.variables[0];
    EXPECT_EQ(v.varid, 3);
    EXPECT_EQ(v.dimids, (std::vector<size_t>{0, 1}));
    EXPECT_EQ(v.attributes.at(0).as_double(), 2.5);
    EXPECT_EQ(v.chunk_lengths, (std::vector<uint64_t>{2, 6}));
    EXPECT_EQ(v.fill.size(), 4u);
    EXPECT_EQ(d.notes.at(0).text, "an external link");
    EXPECT_EQ(d.skipped.at(0), "variable s skipped");
    EXPECT_EQ(back.survey->contiguous.at("/contiguous").at.address, 512u);
    EXPECT_TRUE(back.survey->contiguous.at("/contiguous").big_endian);
}

TEST(SurveyWire, EveryTruncationOfADescriptionIsAnError) {
    const auto bytes = encode_answer(described());
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(decode_answer(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)), std::runtime_error) << n;
}

// Each 8-byte word of the answer replaced by each hostile value: an error
// or an answer whose every dimension index and size still holds; never a
// crash or an allocation beyond the answer's bytes (AddressSanitizer).
TEST(SurveyWire, HostileWordsInADescriptionAreRefusedOrHarmless) {
    const auto bytes = encode_answer(described());
    for (uint64_t hostile : {~uint64_t{0}, uint64_t{1} << 40, uint64_t{1} << 20, uint64_t{12}, uint64_t{0}}) {
        for (size_t at = 0; at + 8 <= bytes.size(); ++at) {
            auto changed = bytes;
            put_u64(changed, at, hostile);
            try {
                const HelperAnswer back = decode_answer(changed);
                if (!back.description) continue;
                for (const auto& v : back.description->variables) {
                    for (size_t id : v.dimids) EXPECT_LT(id, back.description->dimensions.size());
                    EXPECT_TRUE(v.fill.empty() || v.fill.size() == type_size(v.type));
                    EXPECT_TRUE(v.chunk_lengths.empty() || v.chunk_lengths.size() == v.dimids.size());
                    for (const auto& a : v.attributes) EXPECT_EQ(a.values.size() % type_size(a.type), 0u);
                }
            } catch (const std::runtime_error&) {
            }
        }
    }
}

TEST(SurveyWire, ValuesAndRequestsTravel) {
    HelperAnswer answer;
    answer.values = std::vector<uint8_t>{1, 2, 3};
    EXPECT_EQ(*decode_answer(encode_answer(answer)).values, (std::vector<uint8_t>{1, 2, 3}));
    HelperRequest request{"f.nc", "/g", true, 4, {1, 2}, {3, 4}};
    const HelperRequest back = decode_request(encode_request(request));
    EXPECT_EQ(back.group, "/g");
    EXPECT_TRUE(back.values);
    EXPECT_EQ(back.varid, 4);
    EXPECT_EQ(back.count, (std::vector<uint64_t>{3, 4}));
    auto bytes = encode_request(request);
    bytes.pop_back();
    EXPECT_THROW(decode_request(bytes), std::runtime_error);
}

HelperAnswer term_rows() {
    TermArray t;
    t.path = "/aggregation/uris";
    t.dims = {"f", "g"};
    t.shape = {2, 2};
    t.is_text = true;
    t.text_bytes = "a.ncbb.nc";
    t.text_end = {4, 4, 9, 9};
    t.masked = {false, true, false, true};
    t.text_attributes = {{"long_name", "uris"}};
    HelperAnswer answer;
    answer.term = std::move(t);
    return answer;
}

// A reader whose one answer of rows is given (a helper's, decoded).
class GivenRows final : public TermReader {
public:
    explicit GivenRows(TermArray rows) : TermReader("agg.nc"), rows_(std::move(rows)) {}

private:
    TermArray rows(const std::string&, uint64_t first_row) const override {
        if (first_row > 0) throw SourceError("agg.nc", "no more rows");
        return rows_;
    }
    TermArray rows_;
};

TEST(SurveyWire, TermInventoriesAndRowsTravel) {
    HelperAnswer answer;
    answer.inventory = TermInventory{{{"/pr", {}, {{"aggregated_data", "map: m"}}}, {"/aggregation/m", {"j", "i"}, {}}}};
    const HelperAnswer back = decode_answer(encode_answer(answer));
    ASSERT_TRUE(back.inventory);
    ASSERT_EQ(back.inventory->variables.size(), 2u);
    EXPECT_EQ(back.inventory->variables[1].path, "/aggregation/m");
    EXPECT_EQ(back.inventory->variables[0].text_attributes[0].second, "map: m");
    const TermArray read = GivenRows(*decode_answer(encode_answer(term_rows())).term).read("/aggregation/uris");
    EXPECT_EQ(read.size(), 4u);
    EXPECT_EQ(*read.text_at(2), "bb.nc");
    EXPECT_FALSE(read.text_at(1));
    EXPECT_EQ(*read.text_attribute("long_name"), "uris");
    HelperRequest request{"f.nc", "/aggregation/uris", false, 0, {7}, {1}};
    request.terms = TermAsk::Rows;
    const HelperRequest asked = decode_request(encode_request(request));
    EXPECT_EQ(asked.terms, TermAsk::Rows);
    EXPECT_EQ(asked.start, (std::vector<uint64_t>{7}));
    const auto bytes = encode_answer(term_rows());
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(decode_answer(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)), std::runtime_error) << n;
}

// Each word of an answer of rows replaced by a hostile value: an error when
// decoded or read, or a term that holds together; never a crash or an
// allocation beyond the answer's bytes.
TEST(SurveyWire, HostileWordsInTermRowsAreRefusedOrHarmless) {
    const auto bytes = encode_answer(term_rows());
    for (uint64_t hostile : {~uint64_t{0}, uint64_t{1} << 40, uint64_t{1} << 20, uint64_t{3}, uint64_t{0}}) {
        for (size_t at = 0; at + 8 <= bytes.size(); ++at) {
            auto changed = bytes;
            put_u64(changed, at, hostile);
            try {
                const HelperAnswer back = decode_answer(changed);
                if (!back.term) continue;
                const TermArray t = GivenRows(*back.term).read("/aggregation/uris");
                EXPECT_EQ(t.elements(), t.size());
                EXPECT_EQ(t.text_end.size(), t.elements());
                for (uint64_t i = 0; i < t.elements(); ++i) {
                    EXPECT_LE(t.text_end[i], t.text_bytes.size());
                    (void)t.text_at(i);
                }
            } catch (const std::runtime_error&) {
            }
        }
    }
}

HelperAnswer batched_rows() {
    HelperAnswer answer;
    answer.inventory = TermInventory{{{"/aggregation/uris", {"f", "g"}, {}}, {"/aggregation/map", {"f"}, {}}}};
    answer.terms.push_back(std::move(*term_rows().term));
    TermArray map;
    map.path = "/aggregation/map";
    map.dims = {"f"};
    map.shape = {3};
    map.numeric_type = NcType::Int;
    for (int32_t v : {4, 5, 6}) {
        map.bytes.insert(map.bytes.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
        map.ints.push_back(v);
        map.masked.push_back(false);
    }
    answer.terms.push_back(std::move(map));
    return answer;
}

// A reader whose rows all came with its inventory: asking for more fails.
class BatchedRows final : public TermReader {
public:
    BatchedRows(const std::vector<std::string>& asked, std::vector<TermArray> parts) : TermReader("agg.nc") {
        keep_first_rows(asked, std::move(parts));
    }

private:
    TermArray rows(const std::string& full, uint64_t) const override {
        throw SourceError("agg.nc", "asked again for " + full);
    }
};

const std::vector<std::string> kAsked = {"/aggregation/map", "/aggregation/uris"};

TEST(SurveyWire, InventoryWithRowsOfSeveralTermsTravels) {
    const HelperAnswer back = decode_answer(encode_answer(batched_rows()));
    ASSERT_TRUE(back.inventory);
    EXPECT_EQ(back.inventory->variables.size(), 2u);
    ASSERT_EQ(back.terms.size(), 2u);
    const BatchedRows reader(kAsked, back.terms);
    const TermArray map = reader.read("/aggregation/map");
    EXPECT_EQ(map.size(), 3u);
    EXPECT_EQ(*map.integer_at(2), 6);
    EXPECT_EQ(*reader.read("/aggregation/uris").text_at(2), "bb.nc");
    EXPECT_THROW(reader.read("/aggregation/map"), SourceError);  // given once: read again, it is asked for
    HelperRequest request{"f.nc", ""};
    request.terms = TermAsk::InventoryAndRows;
    request.term_paths = kAsked;
    const HelperRequest asked = decode_request(encode_request(request));
    EXPECT_EQ(asked.terms, TermAsk::InventoryAndRows);
    EXPECT_EQ(asked.term_paths, kAsked);
    const auto bytes = encode_answer(batched_rows());
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(decode_answer(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)), std::runtime_error) << n;
    auto old = bytes;
    old[0] = '1';  // the magic word of version 1 ("NCH1"): another format
    EXPECT_THROW(decode_answer(old), std::runtime_error);
    request.term_paths.assign(kMaxBatchedTerms + 1, "/v");
    EXPECT_THROW(decode_request(encode_request(request)), std::runtime_error);
}

// The message a reader of the batched rows is refused with ("" if none).
std::string refusal_of_batch(const std::vector<std::string>& asked, std::vector<TermArray> parts) {
    try {
        BatchedRows reader(asked, std::move(parts));
    } catch (const SourceError& e) {
        return e.what();
    }
    return "";
}

TEST(SurveyWire, LyingRowsWithTheInventoryAreRefused) {
    const std::vector<TermArray> good = batched_rows().terms;
    EXPECT_EQ(refusal_of_batch(kAsked, good), "");
    auto ends = good;  // text ends past the text
    ends[0].text_end.assign(4, uint64_t{1} << 40);
    auto counts = good;  // more numbers than masks
    counts[1].bytes.resize(counts[1].bytes.size() * 2);
    auto extra = good;  // more rows than its shape holds, each part agreeing
    extra[1].masked.push_back(false), extra[1].ints.push_back(7), extra[1].bytes.resize(16);
    auto other = good;  // rows of a variable not asked for
    other[1].path = "/aggregation/secret";
    auto twice = good;  // the same variable twice
    twice.push_back(good[1]);
    auto huge = good;  // more elements than a term variable holds
    huge[1].shape = {uint64_t{1} << 20, uint64_t{1} << 20};
    huge[1].dims = {"f", "g"};
    for (const auto& [parts, why] : {std::pair{ends, "text ends"}, {counts, "element count"}, {extra, "continue"},
                                     {other, "not asked for"}, {twice, "answered twice"}, {huge, "too many elements"}}) {
        const std::string message = refusal_of_batch(kAsked, parts);
        EXPECT_NE(message.find("malformed rows of a term variable"), std::string::npos) << why << ": " << message;
        EXPECT_NE(message.find(why), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace ncafs::netcdf
