// Unit tests of the daemon's pieces that need no mount: option parsing, the
// aggregation pre-check, and the catalog's lazy classification (with a fake
// backend, so that what is asked of the layers below can be counted).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "codecs/error.hpp"
#include "fs/aggregation_precheck.hpp"
#include "fs/catalog.hpp"
#include "fs/options.hpp"
#include "fs/read_path.hpp"

namespace stdfs = std::filesystem;
using namespace ncafs;
using namespace ncafs::fs;

namespace {

// A minimal CDF-1 header: no dims, one global text attribute `name`, no vars.
std::string classic_with_attribute(const std::string& name) {
    auto be32 = [](uint32_t v) {
        std::string s(4, '\0');
        s[0] = char(v >> 24), s[1] = char(v >> 16), s[2] = char(v >> 8), s[3] = char(v);
        return s;
    };
    auto padded = [](std::string s) {
        s.resize((s.size() + 3) / 4 * 4, '\0');
        return s;
    };
    std::string h = "CDF\x01" + be32(0) + be32(0) + be32(0);  // numrecs, dim_list ABSENT
    h += be32(0x0C) + be32(1) + be32(uint32_t(name.size())) + padded(name) + be32(2) + be32(3) + padded("abc");
    h += be32(0) + be32(0);  // var_list ABSENT
    return h;
}

struct TempDir {
    stdfs::path path;
    TempDir() {
        char tmpl[] = "/tmp/ncafs-fs-test-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() { stdfs::remove_all(path); }
    void write(const std::string& name, const std::string& bytes) const {
        std::ofstream(path / name, std::ios::binary) << bytes;
    }
};

class FakeView final : public VirtualFile {
public:
    uint64_t size() const override { return 1000; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t((offset + i) * 7);
    }
};

}  // namespace

TEST(Options, ViewsListKeepsBareViewNames) {
    auto items = split_option_list("ro,views=nc,ds,ncs,allow_other");
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(items[1], "views=nc:ds:ncs");
    ViewOptions v;
    EXPECT_TRUE(apply_view_option(items[1], v));
    EXPECT_EQ(v.views, (std::vector<std::string>{"nc", "ds", "ncs"}));
    EXPECT_FALSE(apply_view_option("allow_other", v));
    EXPECT_THROW(apply_view_option("views=xyz", v), UsageError);
    EXPECT_THROW(apply_view_option("cdf_version=3", v), UsageError);
    EXPECT_TRUE(apply_view_option("cdf_version=5", v));
    EXPECT_EQ(v.cdf_version, 5);
    EXPECT_TRUE(apply_view_option("rewrite=/home/a=/data/a", v));
    EXPECT_EQ(v.path_rewrites.back(), (std::pair<std::string, std::string>{"/home/a", "/data/a"}));
}

TEST(Options, MountCommandLine) {
    TempDir src, mnt;
    auto o = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_other,nofail,_netdev,x-gvfs-show,open_files=9"});
    EXPECT_FALSE(o.foreground);
    EXPECT_TRUE(o.allow_other);
    EXPECT_EQ(o.view.open_files, 9u);
    EXPECT_EQ(o.fuse_options, (std::vector<std::string>{"allow_other"}));
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "rw"}), UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string()}), UsageError);
}

TEST(Precheck, NameMagicAndMarkers) {
    TempDir d;
    d.write("agg.nc", classic_with_attribute("nca_array"));
    d.write("plain.nc", classic_with_attribute("history"));
    d.write("agg.txt", classic_with_attribute("nca_array"));
    d.write("text.nca", "hello, not netCDF");
    EXPECT_EQ(precheck_aggregation(d.path / "agg.nc"), Precheck::Maybe);
    EXPECT_EQ(precheck_aggregation(d.path / "plain.nc"), Precheck::NotAggregation);
    EXPECT_EQ(precheck_aggregation(d.path / "agg.txt"), Precheck::NotAggregation);
    EXPECT_EQ(precheck_aggregation(d.path / "text.nca"), Precheck::NotAggregation);
    // A truncated header cannot be ruled out.
    d.write("cut.nc", classic_with_attribute("history").substr(0, 20));
    EXPECT_EQ(precheck_aggregation(d.path / "cut.nc"), Precheck::Maybe);
}

TEST(Catalog, ListingPartitionsClassifiesNothingAndNamesFollowTheRules) {
    TempDir d;
    for (int i = 0; i < 500; ++i) d.write("p" + std::to_string(i) + ".nc", classic_with_attribute("history"));
    d.write("a.nca", classic_with_attribute("aggregated_data"));
    d.write("b.nca", classic_with_attribute("nca_array"));
    d.write("b.nc", "real bytes");  // collision: the real file wins
    d.write("bad.nca", classic_with_attribute("nca_array"));
    std::atomic<int> full_tests{0};
    Backend backend{[&](const std::string&) {
                        ++full_tests;
                        return true;
                    },
                    [](const std::string& path, const std::string&) -> std::shared_ptr<const VirtualFile> {
                        if (path.find("bad") != std::string::npos) throw SourceError(path, "broken JSON");
                        return std::make_shared<FakeView>();
                    }};
    Catalog catalog(d.path, ViewOptions{}, backend);
    auto entries = catalog.list("");
    std::set<std::string> names;
    for (auto& e : entries) names.insert(e.name);
    EXPECT_EQ(names.size(), 504u);
    EXPECT_TRUE(names.count("a.nc") && !names.count("a.nca"));
    EXPECT_TRUE(names.count("b.nc") && names.count("b.nca"));
    EXPECT_TRUE(names.count("bad.nca") && !names.count("bad.nc"));
    EXPECT_EQ(catalog.classification_count(), 3u);  // only the .nca files
    EXPECT_EQ(full_tests.load(), 3);

    auto a = catalog.resolve("a.nc");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->kind, EntryKind::View);
    EXPECT_EQ(a->size, 1000u);
    EXPECT_EQ(catalog.attributes(*a).st_blksize, 1 << 20);
    EXPECT_FALSE(catalog.resolve("a.nca"));
    EXPECT_EQ(catalog.resolve("b.nc")->kind, EntryKind::RealFile);
    EXPECT_EQ(catalog.resolve("bad.nca")->kind, EntryKind::RealFile);
    EXPECT_FALSE(catalog.resolve("bad.nc"));
    // A partition looked up is pre-checked only: no full test.
    EXPECT_EQ(catalog.resolve("p7.nc")->kind, EntryKind::RealFile);
    EXPECT_EQ(full_tests.load(), 3);

    auto view = catalog.open_view(*a);
    std::vector<uint8_t> bytes(100);
    read_view(*view, 900, bytes);
    EXPECT_EQ(bytes[5], uint8_t(905 * 7));
    EXPECT_THROW(read_view(*view, 950, bytes), UsageError);
}

TEST(Catalog, SymlinksOutsideSourceAreHidden) {
    TempDir d, outside;
    outside.write("secret.nc", "secret");
    d.write("inside.nc", "inside");
    stdfs::create_symlink(outside.path / "secret.nc", d.path / "link-out.nc");
    stdfs::create_symlink(d.path / "inside.nc", d.path / "link-in.nc");
    Catalog catalog(d.path, ViewOptions{}, Backend{[](const std::string&) { return false; }, nullptr});
    EXPECT_FALSE(catalog.resolve("link-out.nc"));
    ASSERT_TRUE(catalog.resolve("link-in.nc"));
    EXPECT_EQ(catalog.resolve("link-in.nc")->kind, EntryKind::RealFile);
}
