// Unit tests of the daemon's pieces that need no mount: option parsing, the
// aggregation pre-check, and the catalog's lazy classification (with a fake
// backend, so that what is asked of the layers below can be counted).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <set>
#include <system_error>

#include "aggregation/read/precheck.hpp"
#include "codecs/dataset.hpp"
#include "codecs/error.hpp"
#include "fs/cache_keys.hpp"
#include "fs/catalog.hpp"
#include "fs/log.hpp"
#include "fs/mount_options.hpp"
#include "fs/options.hpp"
#include "fs/view_read.hpp"
#include "fs/remote_options.hpp"
#include "fs/view_names.hpp"
#include "fs/view_registry.hpp"
#include "fs/view_store.hpp"
#include "io/metadata_budget.hpp"
#include "io/system_call_error.hpp"
#include "codecs/sniff.hpp"

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

// An object in memory behind the RemoteBytes interface (the transport is
// tested against real servers in tests/remote): counts its calls.
class MemoryObject final : public RemoteBytes {
public:
    explicit MemoryObject(std::string bytes, std::string version = "v1")
        : bytes_(std::move(bytes)), version_(std::move(version)) {}
    const std::string& url() const override { return url_; }
    uint64_t size() const override { return bytes_.size(); }
    const std::string& version() const override { return version_; }
    void read(void* buffer, size_t n, uint64_t offset) const override {
        ++reads;
        if (offset > bytes_.size() || n > bytes_.size() - offset) throw SourceError(url_, "short");
        std::memcpy(buffer, bytes_.data() + offset, n);
    }
    void read_many(std::span<const Range> ranges) const override {
        ++many_calls;
        many_ranges += ranges.size();
        for (const Range& r : ranges) read(r.buffer, r.n, r.offset);
    }
    mutable std::atomic<int> reads{0}, many_calls{0}, many_ranges{0};

private:
    std::string url_ = "https://h.example/obj.nc", bytes_, version_;
};

// Two extents of one remote object around a computed piece.
class RemoteExtentsView final : public VirtualFile {
public:
    explicit RemoteExtentsView(std::shared_ptr<const OpenFile> f) : file_(std::move(f)) {}
    uint64_t size() const override { return 30; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t('a' + (offset + i) % 26);
    }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        std::vector<ViewPiece> all = {{0, 10, FileExtent{file_, 100, 10}}, {10, 10, std::nullopt},
                                      {20, 10, FileExtent{file_, 5, 10}}};
        EXPECT_EQ(offset, 0u);
        EXPECT_EQ(length, 30u);
        return all;
    }

private:
    std::shared_ptr<const OpenFile> file_;
};

// Every file that passes the pre-check is an aggregation; paths containing
// "bad" fail to open. Every view is a FakeView of 1000 bytes.
Backend fake_backend(std::atomic<int>& full_tests) {
    Backend b;
    b.is_aggregation = [&](const std::string&) {
        ++full_tests;
        return true;
    };
    b.open_dataset = [](const std::string& path, bool) -> std::shared_ptr<const Dataset> {
        if (path.find("bad") != std::string::npos) throw SourceError(path, "broken JSON");
        return std::make_shared<Dataset>();
    };
    b.make_view = [](std::shared_ptr<const Dataset>, const std::string&, const std::string&)
        -> std::shared_ptr<const VirtualFile> { return std::make_shared<FakeView>(); };
    return b;
}

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

TEST(Options, MissingPartitions) {
    ViewOptions v;
    EXPECT_FALSE(v.fill_missing_partitions);  // error: the default
    EXPECT_TRUE(apply_view_option("missing_partitions=fill", v));
    EXPECT_TRUE(v.fill_missing_partitions);
    EXPECT_TRUE(apply_view_option("missing_partitions=error", v));
    EXPECT_FALSE(v.fill_missing_partitions);
    EXPECT_THROW(apply_view_option("missing_partitions=zero", v), UsageError);
    EXPECT_THROW(apply_view_option("missing_partitions", v), UsageError);
}

TEST(Options, VdsViewAndLods) {
    auto items = split_option_list("views=nc,vds,vds_lods=4");
    ASSERT_EQ(items.size(), 2u);
    ViewOptions v;
    EXPECT_EQ(v.vds_lods, 2);
    EXPECT_TRUE(v.has_view("vds"));  // a default view
    EXPECT_TRUE(apply_view_option("views=nc", v));
    EXPECT_FALSE(v.has_view("vds"));
    EXPECT_TRUE(apply_view_option(items[0], v));
    EXPECT_TRUE(v.has_view("vds"));
    EXPECT_TRUE(apply_view_option(items[1], v));
    EXPECT_EQ(v.vds_lods, 4);
    EXPECT_THROW(apply_view_option("vds_lods=13", v), UsageError);
    EXPECT_THROW(apply_view_option("vds_lods=-1", v), UsageError);
    EXPECT_EQ(view_kind_of("vds"), ViewKind::Vds);
}

TEST(RemoteFile, ReadsIdentitySniffAndExtents) {
    std::string bytes(300, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 13 + 1);
    bytes.replace(0, 4, "CDF\x01");
    auto object = std::make_shared<MemoryObject>(bytes);
    auto file = OpenFile::remote(object);
    EXPECT_EQ(file->fd(), -1);
    EXPECT_TRUE(file->is_remote());
    EXPECT_EQ(file->path(), "https://h.example/obj.nc");
    EXPECT_EQ(file->size(), 300u);
    EXPECT_EQ(file->identity().device, kRemoteDevice);
    EXPECT_NE(file->identity(), OpenFile::remote(std::make_shared<MemoryObject>(bytes, "v2"))->identity());
    EXPECT_EQ(file->identity(), OpenFile::remote(std::make_shared<MemoryObject>(bytes))->identity());
    EXPECT_EQ(sniff_file(*file), FileFormat::Cdf);  // an object shorter than kSniffBytes
    EXPECT_THROW(file->proc_path(), SourceError);
    char b[4];
    file->pread_exact(b, 4, 296);
    EXPECT_EQ(std::memcmp(b, bytes.data() + 296, 4), 0);
    EXPECT_THROW(file->pread_exact(b, 4, 297), SourceError);
    file->check_unchanged();

    RemoteExtentsView view(file);
    std::vector<uint8_t> out(30);
    read_view(view, 0, out);
    EXPECT_EQ(std::memcmp(out.data(), bytes.data() + 100, 10), 0);
    EXPECT_EQ(out[10], uint8_t('a' + 10));
    EXPECT_EQ(std::memcmp(out.data() + 20, bytes.data() + 5, 10), 0);
    EXPECT_EQ(object->many_calls.load(), 1);  // both extents of the object in one read_many
    EXPECT_EQ(object->many_ranges.load(), 2);
}

TEST(Options, RemoteOptions) {
    ViewOptions v;
    EXPECT_TRUE(v.remote.allowed);
    EXPECT_TRUE(apply_view_option("remote=no", v));
    EXPECT_FALSE(v.remote.allowed);
    EXPECT_THROW(apply_view_option("remote=maybe", v), UsageError);
    EXPECT_TRUE(apply_view_option("s3_endpoint=http://127.0.0.1:9000", v));
    EXPECT_EQ(v.remote.s3_endpoint, "http://127.0.0.1:9000");
    EXPECT_THROW(apply_view_option("s3_endpoint=s3://bucket", v), UsageError);
    EXPECT_TRUE(apply_view_option("s3_region=eu-west-3", v));
    EXPECT_EQ(v.remote.s3_region, "eu-west-3");
    EXPECT_TRUE(apply_view_option("cache_dir=/var/cache/ncafs/../x", v));
    EXPECT_EQ(v.remote.cache_dir, "/var/cache/x");
    EXPECT_TRUE(apply_view_option("cache_size=3G", v));
    EXPECT_EQ(v.remote.cache_size, 3ull << 30);
    EXPECT_EQ(parse_size("512", "x"), 512u);
    EXPECT_EQ(parse_size("64K", "x"), 64u << 10);
    EXPECT_EQ(parse_size("100m", "x"), 100ull << 20);
    for (const char* bad : {"", "G", "1T", "1.5G", "-1", "99999999999999999999", "17179869184G"})
        EXPECT_THROW(parse_size(bad, "cache_size"), UsageError) << bad;
}

TEST(Options, MountCommandLine) {
    TempDir src, mnt;
    auto o = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_other,nofail,_netdev,x-gvfs-show,open_files=9"});
    EXPECT_FALSE(o.foreground);
    EXPECT_TRUE(o.allow_other);
    EXPECT_EQ(o.view.open_files, 9u);
    EXPECT_EQ(o.fuse_options, (std::vector<std::string>{"allow_other"}));
    // mount(8) passes rw unless ro is given: accepted, the mount stays read-only.
    auto rw = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "rw,ds_values=cf"});
    EXPECT_TRUE(rw.fuse_options.empty());
    EXPECT_TRUE(rw.view.ds_values_cf);
    EXPECT_EQ(rw.view.views, (std::vector<std::string>{"nc", "ds", "ncs", "vds", "zarr"}));  // the default
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "ds_values=x"}), UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string()}), UsageError);
    // An option neither ncafs nor FUSE knows is a usage error (exit status 2),
    // not a FUSE session that fails later (exit status 1).
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "no_such_option"}), UsageError);
    // mount.fuse3 adds dev,suid for root: accepted, and every mount is nosuid,nodev.
    auto suid = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "ro,dev,suid,allow_other"});
    const std::string list = "," + fuse_option_list(suid) + ",";
    EXPECT_EQ(list.find(",suid,"), std::string::npos) << list;
    EXPECT_EQ(list.find(",dev,"), std::string::npos) << list;
    for (const char* forced : {",ro,", ",nosuid,", ",nodev,", ",default_permissions,", ",allow_other,"})
        EXPECT_NE(list.find(forced), std::string::npos) << forced << " in " << list;
}

TEST(Options, RemoteRootsBesideLocalOnes) {
    TempDir src, mnt, extra;
    auto o = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o",
                                       "allow_root=https://Data.example.org/pub,allow_root=" + extra.path.string() +
                                           ",allow_root=s3://bucket/prefix,allow_root"});
    ASSERT_EQ(o.view.remote.access.roots().size(), 2u);
    EXPECT_EQ(o.view.remote.access.roots()[0].parts.host, "data.example.org");
    EXPECT_EQ(o.view.remote.access.roots()[1].parts.path, "prefix");
    EXPECT_EQ(o.view.extra_allowed_roots, (std::vector<std::string>{extra.path.string()}));
    EXPECT_EQ(o.fuse_options, (std::vector<std::string>{"allow_root"}));  // bare: libfuse's option
    // A root for any host serves only the mount's owner.
    EXPECT_NO_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_root=https://"}));
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_other,allow_root=https://"}),
                 UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_root=s3://,allow_other"}),
                 UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "allow_root=https://h/a/../b"}),
                 UsageError);
}

TEST(Options, LimitsAndDeadMountpoint) {
    TempDir src, mnt;
    auto o = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "max_fragments=7,max_metadata=4096"});
    EXPECT_EQ(o.view.limits.max_fragments, 7u);
    EXPECT_EQ(o.view.limits.max_metadata_bytes, 4096u);
    auto d = parse_mount_command_line({src.path.string(), mnt.path.string()});
    EXPECT_EQ(d.view.limits.max_fragments, 2'000'000u);  // the documented defaults
    EXPECT_EQ(d.view.limits.max_metadata_bytes, uint64_t{256} << 20);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "max_fragments=0"}), UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "max_metadata=x"}), UsageError);
    EXPECT_EQ(d.view.metadata_mem.total, uint64_t{2} << 30);  // max_metadata_mem=, documented default 2G
    EXPECT_EQ(d.view.metadata_mem.per_file, uint64_t{1} << 30);  // max_file_metadata_mem=, 1G
    auto m = parse_mount_command_line(
        {src.path.string(), mnt.path.string(), "-o", "max_metadata_mem=2G,max_file_metadata_mem=64M"});
    EXPECT_EQ(m.view.metadata_mem.total, uint64_t{2} << 30);
    EXPECT_EQ(m.view.metadata_mem.per_file, uint64_t{64} << 20);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "max_metadata_mem=1K"}), UsageError);
    // (ENOTCONN of a dead mount is exercised end to end by tests/security/test_hostile.py.)
    try {
        parse_mount_command_line({src.path.string(), (src.path / "missing").string()});
        ADD_FAILURE() << "a missing mount point was accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
}

TEST(Options, LodLevelsAndKeptDimensions) {
    TempDir src, mnt;
    auto o = parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "lods=3,lod_keep=time:depth,lod_keep=x"});
    EXPECT_EQ(o.view.lods, 3);
    EXPECT_EQ(o.view.lod_keep, (std::vector<std::string>{"time", "depth", "x"}));
    EXPECT_EQ(parse_mount_command_line({src.path.string(), mnt.path.string()}).view.lods, 0);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "lods=17"}), UsageError);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "lods=-1"}), UsageError);
    EXPECT_EQ(o.view.lod_min_size, uint64_t{64} << 20);  // the default
    EXPECT_EQ(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "lods=1,lod_min_size=3M"})
                  .view.lod_min_size,
              uint64_t{3} << 20);
    EXPECT_THROW(parse_mount_command_line({src.path.string(), mnt.path.string(), "-o", "lod_min_size=big"}), UsageError);
}

TEST(Log, ControlBytesCannotForgeOrCutLines) {
    EXPECT_EQ(escape_log_text(std::string("a.nc\nncafs: error: forged\0tail", 30)),
              "a.nc\\x0ancafs: error: forged\\x00tail");
    EXPECT_EQ(escape_log_text("tab\there\x7f"), "tab\\x09here\\x7f");
    EXPECT_EQ(escape_log_text("text \xc3\xa9 UTF-8"), "text \xc3\xa9 UTF-8");  // bytes >= 0x80 kept
}

// Under systemd (JOURNAL_STREAM names stderr) every line carries the
// sd-daemon(3) priority prefix; with another stderr, none.
TEST(Log, JournalPriorityPrefixOnlyOnTheJournalStream) {
    TempDir d;
    const auto path = (d.path / "stderr").string();
    auto logged_with_stream = [&](bool matching) {
        std::fflush(stderr);
        const int saved = ::dup(STDERR_FILENO);
        const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(file, STDERR_FILENO);
        struct stat st {};
        ::fstat(STDERR_FILENO, &st);
        const auto stream = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + (matching ? 0 : 1));
        ::setenv("JOURNAL_STREAM", stream.c_str(), 1);
        log_to_stderr(false);
        log_line(LogLevel::Warning, "w");
        log_line(LogLevel::Error, "e");
        std::fflush(stderr);
        ::dup2(saved, STDERR_FILENO);
        ::close(saved);
        ::close(file);
        ::unsetenv("JOURNAL_STREAM");
        log_to_stderr(false);
        std::ifstream in(path);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_EQ(logged_with_stream(true), "<4>ncafs: warning: w\n<3>ncafs: error: e\n");
    EXPECT_EQ(logged_with_stream(false), "ncafs: warning: w\nncafs: error: e\n");
}

TEST(Precheck, NameMagicAndMarkers) {
    TempDir d;
    d.write("agg.nc", classic_with_attribute("nca_array"));
    d.write("single.nc", classic_with_attribute("history"));
    d.write("agg.txt", classic_with_attribute("nca_array"));
    d.write("text.nca", "hello, not netCDF");
    EXPECT_EQ(agg::precheck_aggregation(d.path / "agg.nc"), agg::Precheck::Maybe);
    EXPECT_EQ(agg::precheck_aggregation(d.path / "single.nc"), agg::Precheck::NotAggregation);
    EXPECT_EQ(agg::precheck_aggregation(d.path / "agg.txt"), agg::Precheck::NotAggregation);
    EXPECT_EQ(agg::precheck_aggregation(d.path / "text.nca"), agg::Precheck::NotAggregation);
    // A header the walk cannot parse is never handed to netcdf-c (some crash it):
    // truncated, or a 32-byte CDF-1 file claiming 2^31-1 variables.
    d.write("cut.nc", classic_with_attribute("nca_array").substr(0, 20));
    EXPECT_EQ(agg::precheck_aggregation(d.path / "cut.nc"), agg::Precheck::NotAggregation);
    std::string claim("CDF\x01\0\0\0\0" "\0\0\0\0\0\0\0\0" "\0\0\0\0\0\0\0\0" "\0\0\0\x0b\x7f\xff\xff\xff", 32);
    d.write("claims.nc", claim);
    EXPECT_EQ(agg::precheck_aggregation(d.path / "claims.nc"), agg::Precheck::NotAggregation);
}

TEST(Catalog, ListingPartitionsClassifiesNothingAndNamesFollowTheRules) {
    TempDir d;
    for (int i = 0; i < 500; ++i) d.write("p" + std::to_string(i) + ".nc", classic_with_attribute("history"));
    d.write("a.nca", classic_with_attribute("aggregated_data"));
    d.write("b.nca", classic_with_attribute("nca_array"));
    d.write("b.nc", "real bytes");  // collision: the real file wins
    d.write("bad.nca", classic_with_attribute("nca_array"));
    std::atomic<int> full_tests{0};
    Backend backend = fake_backend(full_tests);
    ViewOptions nc_only;
    nc_only.views = {"nc"};
    Catalog catalog(d.path, nc_only, backend);
    auto entries = catalog.list("");
    std::set<std::string> names;
    for (auto& e : entries) names.insert(e.name);
    EXPECT_EQ(names.size(), 504u);
    EXPECT_TRUE(names.count("a.nc") && !names.count("a.nca"));
    EXPECT_TRUE(names.count("b.nc") && names.count("b.nca"));
    EXPECT_TRUE(names.count("bad.nca") && !names.count("bad.nc"));
    EXPECT_EQ(catalog.classification_count(), 3u);  // only the .nca files
    EXPECT_EQ(catalog.sniff_count(), 504u);          // and a magic sniff of each dataset name
    EXPECT_EQ(catalog.precheck_count(), 503u);       // the header pre-check of each netCDF *.nc and *.nca
    EXPECT_EQ(full_tests.load(), 3);
    catalog.list("");  // again: every answer cached by identity, no file opened
    EXPECT_EQ(catalog.sniff_count(), 504u);
    EXPECT_EQ(catalog.precheck_count(), 503u);
    // A file changed is another identity: pre-checked again, alone.
    d.write("p3.nc", classic_with_attribute("history") + std::string(4, '\0'));
    catalog.list("");
    EXPECT_EQ(catalog.precheck_count(), 504u);

    auto a = catalog.resolve("a.nc");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->kind, EntryKind::View);
    EXPECT_EQ(a->size, 1000u);
    EXPECT_EQ(catalog.attributes(*a).st_blksize, 64 << 10);
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

TEST(Catalog, TwinViewsByNameAndMagicRealFilesWin) {
    TempDir d;
    for (int i = 0; i < 100; ++i) d.write("p" + std::to_string(i) + ".nc", classic_with_attribute("history"));
    d.write("h.nc", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
    d.write("k.nc4", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
    d.write("s.ds", "ds-1.0\n{}\n");
    d.write("s.nc", "a real s.nc: wins over the twin of s.ds");
    d.write("n.ncs", std::string("CDFS\xad\xec\xce\xda", 8));
    d.write("text.ds", "not a ds file");
    d.write("a.nca", classic_with_attribute("nca_array"));
    std::atomic<int> full_tests{0};
    Catalog catalog(d.path, ViewOptions{}, fake_backend(full_tests));
    std::set<std::string> names;
    for (auto& e : catalog.list("")) names.insert(e.name);
    for (const char* n : {"p7.ds", "p7.ncs", "h.ds", "h.ncs", "h.classic.nc", "k.nc", "k.ds", "k.ncs", "s.ncs", "n.nc", "n.ds", "a.nc", "a.ds", "a.ncs", "s.ds",
                          "s.nc", "text.ds"})
        EXPECT_TRUE(names.count(n)) << n;
    for (const char* n : {"text.nc", "a.nca", "p7.nc.ds", "h.nc.ds", "p7.classic.nc", "k.classic.nc"})
        EXPECT_FALSE(names.count(n)) << n;
    EXPECT_EQ(names.size(), 100u * 5 + 6 + 6 + 5 + 5 + 5 + 1);  // p*, h.*, k.*, s.*, n.*, a.*, text.ds
    // Listing built each twin's view (a listed name must be served): every dataset parsed once.
    EXPECT_EQ(catalog.dataset_open_count(), 100u + 5);  // p*, h, k, s.ds, n, a
    EXPECT_EQ(full_tests.load(), 1);
    catalog.list("");
    EXPECT_EQ(catalog.dataset_open_count(), 105u);  // listing again: from the caches

    auto twin = catalog.resolve("p7.ds");
    ASSERT_TRUE(twin);
    EXPECT_EQ(twin->kind, EntryKind::View);
    EXPECT_EQ(twin->view_kind, ViewKind::Ds);
    EXPECT_FALSE(twin->aggregation);
    EXPECT_EQ(twin->size, 1000u);
    EXPECT_EQ(catalog.resolve("s.nc")->kind, EntryKind::RealFile);
    EXPECT_EQ(catalog.resolve("n.nc")->kind, EntryKind::View);
    EXPECT_EQ(catalog.resolve("h.classic.nc")->view_kind, ViewKind::Nc);  // netCDF-4 h.nc keeps its name; classic view beside it
    EXPECT_EQ(catalog.resolve("k.nc")->view_kind, ViewKind::Nc);
    EXPECT_FALSE(catalog.resolve("p7.classic.nc"));  // p7.nc is classic already
    EXPECT_TRUE(catalog.resolve("a.ncs")->aggregation);
    EXPECT_FALSE(catalog.resolve("text.nc"));
    EXPECT_FALSE(catalog.resolve("zz.ds"));

    ViewOptions nc_only;
    nc_only.views = {"nc"};
    Catalog nc_only_catalog(d.path, nc_only, fake_backend(full_tests));
    names.clear();
    for (auto& e : nc_only_catalog.list("")) names.insert(e.name);
    EXPECT_FALSE(names.count("p7.ds") || names.count("h.ncs"));
    EXPECT_FALSE(nc_only_catalog.resolve("p7.ds"));
    EXPECT_TRUE(nc_only_catalog.resolve("n.nc"));
}

TEST(Catalog, BrokenNcAggregationListsNoTwins) {
    TempDir d;
    d.write("bad.nc", classic_with_attribute("nca_array"));  // fake backend: "bad" fails to open
    d.write("good.nc", classic_with_attribute("nca_array"));
    d.write("p.nc", classic_with_attribute("history"));
    std::atomic<int> full_tests{0};
    Catalog catalog(d.path, ViewOptions{}, fake_backend(full_tests));
    std::set<std::string> names;
    for (auto& e : catalog.list("")) names.insert(e.name);
    EXPECT_EQ(names, (std::set<std::string>{"bad.nc", "good.nc", "good.ds", "good.ncs", "good.vds", "good.zarr",
                                            "p.nc", "p.ds", "p.ncs", "p.vds", "p.zarr"}));
    EXPECT_FALSE(catalog.resolve("bad.ds"));  // listed names and lookups agree
    EXPECT_TRUE(catalog.resolve("good.ds"));
    EXPECT_EQ(catalog.classification_count(), 2u);  // the partition p.nc was pre-checked only
}

// Views that cannot be built (no VDS-typed variable: paths with "novds";
// files that do not parse: paths with "bad") are not listed, and every
// listed name resolves; the refusals are remembered (no second attempt).
TEST(Catalog, ListingNamesOnlyWhatALookupServes) {
    TempDir d;
    d.write("bad.nc", classic_with_attribute("history"));
    d.write("novds.nc", classic_with_attribute("history"));
    d.write("good.nc", classic_with_attribute("history"));
    d.write("bad4.nc", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
    std::atomic<int> full_tests{0}, views_built{0};
    Backend backend = fake_backend(full_tests);
    backend.make_view = [&](std::shared_ptr<const Dataset> data, const std::string& view,
                            const std::string&) -> std::shared_ptr<const VirtualFile> {
        ++views_built;
        if (view == "vds" && data->origin.find("novds") != std::string::npos)
            throw UsageError(data->origin + ": no .vds view: no variable of a VDS type");
        return std::make_shared<FakeView>();
    };
    auto open = backend.open_dataset;
    backend.open_dataset = [open](const std::string& path, bool aggregation) {
        auto data = std::make_shared<Dataset>(*open(path, aggregation));
        data->origin = path;
        return std::shared_ptr<const Dataset>(data);
    };
    Catalog catalog(d.path, ViewOptions{}, backend);
    std::set<std::string> names;
    for (auto& e : catalog.list("")) names.insert(e.name);
    EXPECT_EQ(names, (std::set<std::string>{"bad.nc", "bad4.nc", "novds.nc", "novds.ds", "novds.ncs", "novds.zarr",
                                            "good.nc", "good.ds", "good.ncs", "good.vds", "good.zarr"}));
    for (const auto& n : names) EXPECT_TRUE(catalog.resolve(n)) << n << " is listed but does not resolve";
    for (const char* n : {"bad.ds", "bad.vds", "bad4.classic.nc", "novds.vds"}) EXPECT_FALSE(catalog.resolve(n)) << n;
    const int built = views_built.load();
    const size_t opened = catalog.dataset_open_count();
    catalog.list("");
    for (const char* n : {"bad.ds", "novds.vds"}) EXPECT_FALSE(catalog.resolve(n)) << n;
    EXPECT_EQ(views_built.load(), built);  // verdicts remembered, both ways
    EXPECT_EQ(catalog.dataset_open_count(), opened);
}

// A costly view (vds) is decided at listing by the backend's cheap verdict,
// not built; a lookup builds it.
TEST(Catalog, CheapVerdictListsVdsWithoutBuildingIt) {
    TempDir d;
    d.write("good.nc", classic_with_attribute("history"));
    d.write("novds.nc", classic_with_attribute("history"));
    std::atomic<int> full_tests{0}, vds_built{0};
    Backend backend = fake_backend(full_tests);
    backend.make_view = [&](std::shared_ptr<const Dataset>, const std::string& view,
                            const std::string&) -> std::shared_ptr<const VirtualFile> {
        if (view == "vds") ++vds_built;
        return std::make_shared<FakeView>();
    };
    backend.cheap_verdict = [](const Dataset&, const std::string& view) -> std::optional<std::string> {
        if (view != "vds") return std::nullopt;
        return std::string();
    };
    Catalog catalog(d.path, ViewOptions{}, backend);
    // One of the two refused by its verdict (fake datasets have no origin: told apart by the call count).
    int calls = 0;
    Backend refusing = backend;
    refusing.cheap_verdict = [&calls](const Dataset&, const std::string& view) -> std::optional<std::string> {
        if (view != "vds") return std::nullopt;
        return ++calls == 1 ? std::string() : std::string("no variable of a VDS type");
    };
    Catalog mixed(d.path, ViewOptions{}, refusing);
    std::set<std::string> names;
    for (auto& e : catalog.list("")) names.insert(e.name);
    EXPECT_TRUE(names.count("good.vds") && names.count("novds.vds"));
    EXPECT_EQ(vds_built.load(), 0);  // listed from the verdict alone
    auto good = catalog.resolve("good.vds");
    ASSERT_TRUE(good);
    EXPECT_EQ(good->size, 1000u);
    EXPECT_EQ(vds_built.load(), 1);  // the lookup built it for its size
    names.clear();
    for (auto& e : mixed.list("")) names.insert(e.name);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(names.count("good.vds") + names.count("novds.vds"), 1u);
    mixed.list("");
    EXPECT_EQ(calls, 2);  // verdicts remembered both ways
}

// A netCDF-4 aggregation NAME.nc shows its nc view under its own name only.
TEST(Catalog, NetCdf4AggregationNcIsListedOnce) {
    TempDir d;
    d.write("agg.nc", std::string("\x89HDF\r\n\x1a\n", 8) + "....nca_array...." + std::string(100, '\0'));
    d.write("single.nc", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
    std::atomic<int> full_tests{0};
    Catalog catalog(d.path, ViewOptions{}, fake_backend(full_tests));
    std::multiset<std::string> names;
    for (auto& e : catalog.list("")) names.insert(e.name);
    EXPECT_EQ(names, (std::multiset<std::string>{"agg.nc", "agg.ds", "agg.ncs", "agg.vds", "agg.zarr", "single.nc",
                                                 "single.classic.nc", "single.ds", "single.ncs", "single.vds",
                                                 "single.zarr"}));
    EXPECT_TRUE(catalog.resolve("agg.nc")->aggregation);
    EXPECT_FALSE(catalog.resolve("agg.classic.nc"));
    EXPECT_EQ(catalog.resolve("single.classic.nc")->view_kind, ViewKind::Nc);
}

TEST(Catalog, SymlinksOutsideSourceAreHidden) {
    TempDir d, outside;
    outside.write("secret.nc", "secret");
    d.write("inside.nc", "inside");
    stdfs::create_symlink(outside.path / "secret.nc", d.path / "link-out.nc");
    stdfs::create_symlink(d.path / "inside.nc", d.path / "link-in.nc");
    std::atomic<int> full_tests{0};
    Catalog catalog(d.path, ViewOptions{}, fake_backend(full_tests));
    EXPECT_FALSE(catalog.resolve("link-out.nc"));
    ASSERT_TRUE(catalog.resolve("link-in.nc"));
    EXPECT_EQ(catalog.resolve("link-in.nc")->kind, EntryKind::RealFile);
}

TEST(Catalog, DirectorySwappedForAnOutsideSymlinkIsNotFollowed) {
    TempDir d, outside;
    stdfs::create_directories(d.path / "user" / "sub");
    d.write("user/sub/mine.nc", "mine");
    outside.write("secret.nc", "secret");
    std::atomic<int> full_tests{0};
    Catalog catalog(d.path, ViewOptions{}, fake_backend(full_tests));
    ASSERT_EQ(catalog.list("user/sub").size(), 1u);
    ASSERT_TRUE(catalog.resolve("user/sub/mine.nc"));
    // The last component is a directory no more: an intermediate one is checked too.
    stdfs::rename(d.path / "user" / "sub", d.path / "user" / "was");
    stdfs::create_symlink(outside.path, d.path / "user" / "sub");
    EXPECT_THROW(catalog.list("user/sub"), std::system_error);
    EXPECT_FALSE(catalog.resolve("user/sub/secret.nc"));
    EXPECT_FALSE(catalog.resolve("user/sub"));
    // A FIFO is neither listed nor resolved, and nothing blocks on it.
    ASSERT_EQ(::mkfifo((d.path / "user" / "pipe.nc").c_str(), 0644), 0);
    for (auto& e : catalog.list("user")) EXPECT_NE(e.name.rfind("pipe", 0), 0u) << e.name;
    EXPECT_FALSE(catalog.resolve("user/pipe.nc"));
}

// Whether a view's failure is remembered is told from the error's type and
// errno: a message that merely quotes strerror(EMFILE) is a lasting failure.
TEST(Catalog, FailuresThatMayPassAreToldByTypeAndErrnoNotText) {
    EXPECT_TRUE(failure_may_pass(SystemCallError("/s/a.nc", "cannot open: Too many open files", EMFILE)));
    EXPECT_TRUE(failure_may_pass(SystemCallError("/s/a.nc", "cannot stat", ENOMEM)));
    EXPECT_FALSE(failure_may_pass(SystemCallError("/s/a.nc", "cannot open: Permission denied", EACCES)));
    EXPECT_FALSE(failure_may_pass(SourceError("/s/a.nc", "variable x: Too many open files")));
    EXPECT_TRUE(failure_may_pass(SourceChangedError("/s/a.nc")));
    EXPECT_TRUE(failure_may_pass(std::bad_alloc()));
    EXPECT_TRUE(failure_may_pass(std::system_error(EINTR, std::generic_category(), "/s")));
    EXPECT_FALSE(failure_may_pass(std::system_error(ENOENT, std::generic_category(), "/s")));
    EXPECT_TRUE(failure_may_pass(MetadataBudgetError("/s/a.nc", "over the total", true)));
    EXPECT_FALSE(failure_may_pass(MetadataBudgetError("/s/a.nc", "over the file's limit", false)));
    EXPECT_FALSE(failure_may_pass(FormatError("/s/a.nc", 4, "bad magic")));
}

// Catalog cache keys: a changed identity, another view kind, aggregation or
// not, and (ncs only) another name are other keys; equal keys hash equally.
TEST(CacheKeys, DistinguishWhatMakesAnotherEntry) {
    FileIdentity id{1, 2, 3, 4, 5};
    FileKey file{"/s/a.nc", id};
    ViewKey nc{DatasetKey{file, true}, ViewKind::Nc, {}};
    CacheKeyHash hash;
    EXPECT_EQ(nc, (ViewKey{DatasetKey{FileKey{"/s/a.nc", id}, true}, ViewKind::Nc, {}}));
    EXPECT_EQ(hash(nc), hash(ViewKey{DatasetKey{FileKey{"/s/a.nc", id}, true}, ViewKind::Nc, {}}));
    FileIdentity changed = id;
    changed.mtime_ns = 6;
    EXPECT_FALSE(file == (FileKey{"/s/a.nc", changed}));
    EXPECT_FALSE(nc == (ViewKey{DatasetKey{file, false}, ViewKind::Nc, {}}));
    EXPECT_FALSE(nc == (ViewKey{DatasetKey{file, true}, ViewKind::Ds, {}}));
    EXPECT_FALSE((ViewKey{DatasetKey{file, true}, ViewKind::Ncs, "a.ncs"}) ==
                 (ViewKey{DatasetKey{file, true}, ViewKind::Ncs, "b.ncs"}));
    EXPECT_EQ(view_kind_of("nc"), ViewKind::Nc);
    EXPECT_EQ(view_kind_of("ds"), ViewKind::Ds);
    EXPECT_EQ(view_kind_of("ncs"), ViewKind::Ncs);
    EXPECT_THROW(view_kind_of("cdf"), UsageError);
}

// The registry of views: one row per format, each reachable by its
// extension, and every kind of name (twin, classic, LOD per format) in the
// --help paragraph; the backend builds each format with the row's writer.
TEST(ViewRegistry, EveryFormatByItsExtension) {
    std::vector<std::string> extensions;
    for (const auto& f : view_formats()) {
        EXPECT_EQ(&view_format(f.kind), &f);
        EXPECT_EQ(find_view_format(f.extension), &f);
        EXPECT_EQ(view_kind_of(f.extension), f.kind);
        extensions.push_back(f.extension);
    }
    EXPECT_EQ(extensions, (std::vector<std::string>{"nc", "ds", "ncs", "vds", "zarr"}));
    EXPECT_EQ(view_extensions(), extensions);
    EXPECT_EQ(ViewOptions{}.views, extensions);  // views= default: every format
    EXPECT_EQ(find_view_format("nc4"), nullptr);
    EXPECT_THROW(view_format_named("cdf", "export --format"), UsageError);
    EXPECT_TRUE(view_format(ViewKind::Ncs).records_name);
    EXPECT_FALSE(view_format(ViewKind::Nc).records_name);
    ViewOptions v;
    EXPECT_THROW(apply_view_option("views=nc:cdf", v), UsageError);
}

TEST(ViewRegistry, HelpNamesEveryPattern) {
    std::set<std::string> patterns;
    for (const auto& p : view_name_patterns()) patterns.insert(p.pattern);
    for (const char* want : {"NAME.nc", "NAME.ds", "NAME.ncs", "NAME.vds", "NAME.classic.nc", "NAME.lodN.nc",
                             "NAME.lodN.ds", "NAME.lodN.ncs", "NAME.lodN.vds", "NAME.zarr", "NAME.lodN.zarr"})
        EXPECT_TRUE(patterns.count(want)) << want;
    EXPECT_EQ(patterns.size(), 11u);
    const std::string help = usage_text("ncafs");
    for (const auto& p : patterns) EXPECT_NE(help.find("\n  " + p + " "), std::string::npos) << p;
    for (const char* suffix : kSourceSuffixes) EXPECT_NE(help.find(std::string("NAME") + suffix), std::string::npos);
}

TEST(ViewRegistry, BackendBuildsEachFormatWithItsWriter) {
    TempDir d;
    d.write("single.nc", classic_with_attribute("history"));
    const std::string path = (d.path / "single.nc").string();
    Backend backend = make_backend(ViewOptions{}, {d.path.string()});
    auto dataset = backend.open_dataset(path, false);
    auto first_bytes = [&](const std::string& view) {
        auto vf = backend.make_view(dataset, view, "single." + view);
        std::string head(static_cast<size_t>(std::min<uint64_t>(vf->size(), 7)), '\0');
        vf->read(0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(head.data()), head.size()));
        return head;
    };
    EXPECT_EQ(first_bytes("nc").substr(0, 3), "CDF");
    EXPECT_EQ(first_bytes("ds"), "ds-1.0\n");
    EXPECT_EQ(first_bytes("ncs").substr(0, 4), "CDFS");
    // No variable at all: the .vds view says why from metadata, and refuses to be built.
    auto verdict = backend.cheap_verdict(*dataset, "vds");
    ASSERT_TRUE(verdict.has_value());
    EXPECT_NE(*verdict, "");
    EXPECT_FALSE(backend.cheap_verdict(*dataset, "nc").has_value());
    EXPECT_THROW(backend.make_view(dataset, "vds", "single.vds"), UsageError);
    EXPECT_THROW(backend.make_view(dataset, "zarr", "single.zarr"), UsageError);
}

// A reader is not a view: an OpenVDS container has its own SourceFormat.
TEST(ViewRegistry, SourceFormatsApart) {
    TempDir d;
    d.write("a.nc", classic_with_attribute("history"));
    d.write("b.vds", std::string("HueDataStore") + std::string(500, '\0'));
    d.write("c.txt", "some text");
    EXPECT_EQ(sniff_source_format((d.path / "a.nc").string()), SourceFormat::Netcdf);
    EXPECT_EQ(sniff_source_format((d.path / "b.vds").string()), SourceFormat::Vds);
    EXPECT_EQ(sniff_source_format((d.path / "c.txt").string()), SourceFormat::None);
}

// The view-name resolver over a folder given as a set of names: which are
// datasets, which NAME.nc give a classic view.
namespace view_names_test {

using ncafs::fs::ViewName;

std::optional<ViewName> resolve(const std::string& name, const std::set<std::string>& datasets,
                                const std::set<std::string>& classic = {}, int lods = 0,
                                const std::set<std::string>& views = {"nc", "ds", "ncs", "vds"}) {
    ncafs::fs::ViewNameProbe probe;
    probe.view_enabled = [&](const std::string& v) { return views.count(v) > 0; };
    probe.lods = lods;
    probe.is_dataset = [&](const std::string& n) { return datasets.count(n) > 0; };
    probe.gives_classic = [&](const std::string& n) { return classic.count(n) > 0; };
    return ncafs::fs::resolve_view_name(name, probe);
}

void expect(const std::optional<ViewName>& got, const std::string& source, const std::string& view, int lod,
            bool classic = false) {
    ASSERT_TRUE(got.has_value()) << source;
    EXPECT_EQ(got->source, source);
    EXPECT_EQ(got->view, view);
    EXPECT_EQ(got->lod, lod);
    EXPECT_EQ(got->classic, classic);
}

TEST(ViewNames, TwinsComeFromTheFirstSourceInSuffixOrder) {
    expect(resolve("obs.nc", {"obs.nc4"}), "obs.nc4", "nc", 0);
    expect(resolve("tas.nc", {"tas.nca"}), "tas.nca", "nc", 0);
    expect(resolve("x.vds", {"x.h5", "x.ds", "x.ncs"}), "x.ds", "vds", 0);
    expect(resolve("x.ds", {"x.nc", "x.nca"}), "x.nc", "ds", 0);
    // The name itself is never its own source; a folder NAME.vds gives NAME.nc.
    expect(resolve("x.vds", {"x.vds", "x.hdf5"}), "x.hdf5", "vds", 0);
    expect(resolve("vol.nc", {"vol.vds"}), "vol.vds", "nc", 0);
    EXPECT_FALSE(resolve("x.nc", {"x.nc"}));
    EXPECT_FALSE(resolve("x.txt", {"x.nc"}));
    EXPECT_FALSE(resolve("x.ds", {"y.nc"}));
    EXPECT_FALSE(resolve(".ds", {".nc"}));  // a bare suffix names nothing
}

TEST(ViewNames, DisabledViewsHaveNoNames) {
    EXPECT_FALSE(resolve("x.vds", {"x.nc"}, {}, 1, {"nc", "ds"}));
    EXPECT_FALSE(resolve("x.lod1.vds", {"x.nc"}, {}, 1, {"nc", "ds"}));
    expect(resolve("x.ds", {"x.nc"}, {}, 0, {"nc", "ds"}), "x.nc", "ds", 0);
}

TEST(ViewNames, ClassicViewOfANetcdf4NcOnly) {
    expect(resolve("obs4.classic.nc", {"obs4.nc"}, {"obs4.nc"}), "obs4.nc", "nc", 0, true);
    // Not a classic source (classic file, aggregation): the twin rule reads the name.
    EXPECT_FALSE(resolve("obs4.classic.nc", {"obs4.nc"}));
    expect(resolve("a.classic.nc", {"a.nc", "a.classic.nca"}), "a.classic.nca", "nc", 0);
    EXPECT_FALSE(resolve("a.classic.ds", {"a.nc"}, {"a.nc"}));
}

TEST(ViewNames, LodNamesUpToTheOption) {
    expect(resolve("tas.lod1.nc", {"tas.nca"}, {}, 2), "tas.nca", "nc", 1);
    expect(resolve("tas.lod2.vds", {"tas.nca", "tas.nc4"}, {}, 2), "tas.nca", "vds", 2);
    EXPECT_FALSE(resolve("tas.lod3.nc", {"tas.nca"}, {}, 2));
    EXPECT_FALSE(resolve("tas.lod1.nc", {"tas.nca"}, {}, 0));
    EXPECT_FALSE(resolve("tas.lod01.nc", {"tas.nca"}, {}, 2));
    EXPECT_FALSE(resolve("tas.lod0.nc", {"tas.nca"}, {}, 2));
    EXPECT_FALSE(resolve("tas.lod.nc", {"tas.nca"}, {}, 2));
    EXPECT_FALSE(resolve(".lod1.nc", {".nca"}, {}, 2));
    // A dataset really named STEM.lodN.* gives the twin, not a LOD view.
    expect(resolve("tas.lod1.ds", {"tas.lod1.nc", "tas.nc"}, {}, 2), "tas.lod1.nc", "ds", 0);
}

TEST(ViewNames, NamesTheListingBuilds) {
    EXPECT_EQ(ncafs::fs::twin_name("a", "ds"), "a.ds");
    EXPECT_EQ(ncafs::fs::lod_name("a", 2, "vds"), "a.lod2.vds");
    EXPECT_EQ(ncafs::fs::classic_name("a"), "a.classic.nc");
    auto stem = ncafs::fs::source_stem("a.b.hdf5");
    ASSERT_TRUE(stem);
    EXPECT_EQ(stem->first, "a.b");
    EXPECT_EQ(stem->second, 6);
    EXPECT_FALSE(ncafs::fs::source_stem(".nc"));
    EXPECT_FALSE(ncafs::fs::source_stem("a.txt"));
}

}  // namespace view_names_test

TEST(ViewNames, ReferenceSetsAndRefsGlobs) {
    // NAME.json comes after every other source of its stem.
    using view_names_test::expect, view_names_test::resolve;
    expect(resolve("k.nc", {"k.json"}), "k.json", "nc", 0);
    expect(resolve("k.ds", {"k.json", "k.h5"}), "k.h5", "ds", 0);
    // refs=GLOB: names with no dataset suffix; the stem drops the last extension.
    const std::vector<std::string> globs{"*.kc", "refs_*"};
    EXPECT_EQ(reference_glob_stem("a.b.kc", globs), std::make_optional(std::make_pair(std::string("a.b"), kReferenceGlobRank)));
    EXPECT_EQ(reference_glob_stem("refs_x", globs)->first, "refs_x");
    EXPECT_FALSE(reference_glob_stem("a.kc2", globs));
    EXPECT_FALSE(reference_glob_stem("refs_x.nc", globs));  // a dataset suffix keeps its own rule
    EXPECT_FALSE(reference_glob_stem("a.kc", {}));
}
