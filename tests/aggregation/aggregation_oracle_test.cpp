// Random aggregations (generate_aggregation.py) read through open_aggregation
// and compared element for element with netcdf-c reads of the oracle file the
// generator wrote from the master array it generated.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/read/dataset_cache.hpp"
#include "codecs/array_source.hpp"
#include "tests/aggregation/aggregation_test_util.hpp"

using namespace ncafs;

namespace {

struct Generated {
    std::string dir;
    nlohmann::json manifest;
};

const Generated& generated() {
    static Generated g = [] {
        Generated r;
        r.dir = test::fresh_dir("oracle");
        test::run_generator(r.dir, "--cases 60 --seed 20261121");
        std::ifstream in(r.dir + "/manifest.json");
        r.manifest = nlohmann::json::parse(in);
        return r;
    }();
    return g;
}

// Element-wise comparison; floating values within a tiny relative tolerance
// (units conversions go through double), integers exactly.
void expect_same(NcType t, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    const size_t n = got.size() / type_size(t);
    size_t bad = 0;
    for (size_t i = 0; i < n && bad < 5; ++i) {
        if (t == NcType::Float || t == NcType::Double) {
            double a = element_as_double(t, got.data(), i), b = element_as_double(t, want.data(), i);
            if (!(std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)))) {
                ADD_FAILURE() << what << " element " << i << ": got " << a << " want " << b;
                ++bad;
            }
        } else if (std::memcmp(got.data() + i * type_size(t), want.data() + i * type_size(t), type_size(t)) != 0) {
            ADD_FAILURE() << what << " element " << i << ": got " << element_as_double(t, got.data(), i) << " want "
                          << element_as_double(t, want.data(), i);
            ++bad;
        }
    }
}

}  // namespace

TEST(AggregationOracle, RandomHyperslabsMatchTheOracle) {
    const auto& g = generated();
    ASSERT_GE(g.manifest.size(), 50u);
    std::mt19937_64 rng(7);
    size_t slabs = 0;
    for (const auto& c : g.manifest) {
        const std::string nca = c["nca"], oracle = c["oracle"];
        SCOPED_TRACE(nca);
        std::shared_ptr<const Dataset> ds;
        ASSERT_NO_THROW(ds = open_aggregation(nca, AggregationOptions{}, agg::DatasetCache::shared())) << nca;
        const Variable* v = ds->find_variable("v");
        ASSERT_NE(v, nullptr);
        auto oshape = test::nc_shape(oracle, "v");
        auto shape = ds->shape(*v);
        ASSERT_EQ(shape, std::vector<uint64_t>(oshape.begin(), oshape.end()));
        ASSERT_EQ(v->source->shape(), shape);
        // Whole array, then random hyperslabs.
        for (int k = 0; k < 12; ++k, ++slabs) {
            std::vector<uint64_t> start(shape.size()), count(shape.size());
            for (size_t d = 0; d < shape.size(); ++d) {
                if (k == 0) {
                    start[d] = 0, count[d] = shape[d];
                    continue;
                }
                start[d] = rng() % shape[d];
                count[d] = 1 + rng() % (shape[d] - start[d]);
            }
            NcType t;
            auto want = test::nc_read(oracle, "v", std::vector<size_t>(start.begin(), start.end()),
                                      std::vector<size_t>(count.begin(), count.end()), &t);
            ASSERT_EQ(t, v->type);
            std::vector<uint8_t> got(want.size());
            ASSERT_NO_THROW(v->source->read(start, count, ByteOrder::Native, got.data()));
            expect_same(t, got, want, nca + " slab " + std::to_string(k));
            if (k <= 1) {  // big-endian reads are the native ones swapped (the whole array: every fragment kind)
                std::vector<uint8_t> big(want.size());
                v->source->read(start, count, ByteOrder::Big, big.data());
                swap_from_big_endian(t, big.data(), big.size() / type_size(t));
                EXPECT_EQ(big, got);
            }
        }
        // Linear runs (what a classic layout asks for).
        const uint64_t total = v->source->element_count();
        for (int k = 0; k < 4; ++k) {
            uint64_t first = rng() % total, n = 1 + rng() % (total - first);
            std::vector<uint8_t> got(n * type_size(v->type));
            v->source->read_linear(first, n, ByteOrder::Native, got.data());
            std::vector<size_t> all(shape.begin(), shape.end()), zero(shape.size(), 0);
            auto whole = test::nc_read(oracle, "v", zero, all);
            std::vector<uint8_t> want(whole.begin() + static_cast<long>(first * type_size(v->type)),
                                      whole.begin() + static_cast<long>((first + n) * type_size(v->type)));
            expect_same(v->type, got, want, nca + " linear run");
        }
    }
    EXPECT_GE(slabs, 600u);
}

TEST(AggregationOracle, PresentedDatasetHidesMachineryAndKeepsOrdinaryVariables) {
    const auto& g = generated();
    for (const auto& c : g.manifest) {
        const std::string nca = c["nca"];
        auto ds = open_aggregation(nca, AggregationOptions{}, agg::DatasetCache::shared());
        const Variable* v = ds->find_variable("v");
        ASSERT_NE(v, nullptr);
        for (const auto& a : v->attributes) {
            EXPECT_NE(a.name.rfind("nca_", 0), 0u) << nca << " " << a.name;
            EXPECT_NE(a.name.rfind("cfa_", 0), 0u) << nca << " " << a.name;
            EXPECT_NE(a.name, "cf_role") << nca;
        }
        EXPECT_NE(v->find_attribute("long_name"), nullptr);
        for (const auto& var : ds->variables) EXPECT_EQ(var.name.rfind("nca_p", 0), std::string::npos) << nca << " shows private " << var.name;
        for (const auto& d : ds->dimensions) EXPECT_EQ(d.name.find("nca_p"), std::string::npos) << nca << " shows private dim " << d.name;
        ASSERT_NE(ds->find_variable("time"), nullptr);  // ordinary variables read from the file itself
        auto tvals = test::nc_read(nca, "time", {0}, {1});
        double t0;
        ds->find_variable("time")->source->read(std::vector<uint64_t>{0}, std::vector<uint64_t>{1}, ByteOrder::Native, &t0);
        EXPECT_EQ(std::memcmp(&t0, tvals.data(), 8), 0);
        const Attribute* conv = ds->find_attribute("Conventions");
        ASSERT_NE(conv, nullptr);
        EXPECT_EQ(conv->as_text().find("NCA"), std::string::npos);
        EXPECT_EQ(conv->as_text().find("CFA"), std::string::npos);
        EXPECT_TRUE(is_aggregation_file(nca));
        EXPECT_FALSE(is_aggregation_file(c["oracle"].get<std::string>()));
    }
}

TEST(AggregationOracle, ConstructionOpensNoPartitionAndReadsOpenLazily) {
    const auto& g = generated();
    for (const auto& c : g.manifest) {
        agg::DatasetCache cache(8);
        auto loaded = agg::load_aggregation(c["nca"], AggregationOptions{}, cache);
        // No partition; the aggregation file itself is opened for the load alone (its JSON is not kept).
        EXPECT_EQ(cache.opens(), 0u);
        const Variable* v = loaded.dataset->find_variable("v");
        std::vector<uint8_t> all(v->source->element_count() * type_size(v->type));
        v->source->read_linear(0, v->source->element_count(), ByteOrder::Native, all.data());
        EXPECT_LE(cache.size(), 8u);
    }
}

// extents_would_open decides whether a read's pieces get helper threads:
// true for a partition not opened yet, false once it is resolved and open,
// true again once the cache is told paths may have changed.
TEST(AggregationOracle, ExtentsWouldOpenOnlyWhatIsNotOpen) {
    const auto& c = generated().manifest.front();
    agg::DatasetCache cache(8);
    auto loaded = agg::load_aggregation(c["nca"], AggregationOptions{}, cache);
    const Variable* v = loaded.dataset->find_variable("v");
    const uint64_t last = v->source->element_count() - 1;
    const auto* source = dynamic_cast<const agg::AggregatedSource*>(v->source.get());
    ASSERT_TRUE(source != nullptr);
    EXPECT_TRUE(source->extents_would_open(0));
    EXPECT_TRUE(source->extents_would_open(last));
    std::vector<uint8_t> one(type_size(v->type));
    v->source->read_linear(0, 1, ByteOrder::Native, one.data());
    EXPECT_EQ(cache.opens(), 1u);
    EXPECT_FALSE(source->extents_would_open(0));
    EXPECT_TRUE(source->extents_would_open(last));  // another partition, not opened
    cache.paths_may_have_changed();  // what was opened is opened again
    EXPECT_TRUE(source->extents_would_open(0));
}

// One aggregation per master type: threads reading it at once get, bit for
// bit, what one serial read gave (itself checked against the oracle).
TEST(AggregationOracle, ConcurrentReadsAgree) {
    const auto& g = generated();
    std::set<NcType> types;
    for (const auto& c : g.manifest) {
        const auto all = test::nc_shape(c["oracle"], "v");
        const std::vector<size_t> zero(all.size(), 0);
        NcType type;
        const auto want = test::nc_read(c["oracle"], "v", zero, all, &type);
        if (!types.insert(type).second) continue;  // one case per master type
        SCOPED_TRACE(std::string(c["nca"]) + " (" + std::string(type_name(type)) + ")");
        auto ds = open_aggregation(c["nca"], AggregationOptions{}, agg::DatasetCache::shared());
        const Variable* v = ds->find_variable("v");
        ASSERT_NE(v, nullptr);
        ASSERT_EQ(v->type, type);
        const uint64_t n = v->source->element_count();
        std::vector<uint8_t> serial(n * type_size(v->type));
        v->source->read_linear(0, n, ByteOrder::Native, serial.data());
        expect_same(v->type, serial, want, "serial read");
        std::atomic<int> differing{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&] {
                std::vector<uint8_t> got(serial.size());
                for (int k = 0; k < 10; ++k) {
                    std::fill(got.begin(), got.end(), uint8_t{0xA5});
                    v->source->read_linear(0, n, ByteOrder::Native, got.data());
                    if (got != serial) ++differing;
                }
            });
        for (auto& th : threads) th.join();
        EXPECT_EQ(differing.load(), 0) << "concurrent reads differ from the serial read";
    }
    EXPECT_GE(types.size(), 6u) << "the generated cases cover too few types";
}

TEST(AggregationOracle, OpenFilesStayBoundedByTheCache) {
    auto count_fds = [] {
        size_t n = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
        return n;
    };
    const auto& g = generated();
    const size_t before = count_fds();
    {
        agg::DatasetCache cache(2);
        std::vector<agg::LoadedAggregation> all;
        for (const auto& c : g.manifest) {
            all.push_back(agg::load_aggregation(c["nca"], AggregationOptions{}, cache));
            const Variable* v = all.back().dataset->find_variable("v");
            std::vector<uint8_t> buf(v->source->element_count() * type_size(v->type));
            v->source->read_linear(0, v->source->element_count(), ByteOrder::Native, buf.data());
        }
        // Datasets referenced by the presented datasets (the aggregation files'
        // own ordinary variables) stay open; partitions only through the cache.
        EXPECT_LE(count_fds(), before + g.manifest.size() * 2 + 4);
    }
}
