// Unit tests of aggregation/zarr_store: key refusals, remote store URLs, the store's folder
// (symlinks, absent keys), who may read chunks with allow_other, crc32c, v3 metadata translation and its hostile
// numbers, chunk keys, shard indexes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "aggregation/zarr_store/remote_zarr_prefix.hpp"
#include "aggregation/zarr_store/zarr_folder.hpp"
#include "aggregation/zarr_store/zarr_shards.hpp"
#include "aggregation/zarr_store/zarr_v3.hpp"
#include "codecs/error.hpp"

namespace {

using json = nlohmann::json;
using namespace ncafs::agg;

json array_node(json codecs, json extra = json::object()) {
    json node = {{"zarr_format", 3},
                 {"node_type", "array"},
                 {"shape", {6, 4}},
                 {"data_type", "float32"},
                 {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {2, 4}}}}}},
                 {"codecs", codecs},
                 {"fill_value", "NaN"},
                 {"dimension_names", {"time", "x"}}};
    for (auto& [k, v] : extra.items()) node[k] = v;
    return node;
}

json sharding(json inner_shape, json index_codecs = {{{"name", "bytes"}}, {{"name", "crc32c"}}}) {
    return {{{"name", "sharding_indexed"},
             {"configuration",
              {{"chunk_shape", inner_shape}, {"codecs", {{{"name", "bytes"}}}}, {"index_codecs", index_codecs}}}}};
}

// A fresh folder under /tmp ("" when none could be made).
std::string scratch_folder() {
    char dir_template[] = "/tmp/zarr_store_test_XXXXXX";
    return mkdtemp(dir_template) ? dir_template : "";
}

TEST(ZarrKeys, RefusesKeysThatCouldLeaveTheStore) {
    EXPECT_EQ(key_refusal("tas/c/0/1"), "");
    EXPECT_EQ(key_refusal("tas/0.1"), "");
    for (const char* bad : {"", "/etc/passwd", "tas/../../x", "..", "a//b", "./a", "a/"})
        EXPECT_NE(key_refusal(bad), "") << bad;
}

TEST(RemoteZarrPrefix, KeysStayBeneathTheStoreUrl) {
    const RemoteZarrPrefix http("https://host/data/era.zarr/");
    EXPECT_EQ(http.path(), "https://host/data/era.zarr");
    EXPECT_EQ(http.url_of("tas/0.1.2"), "https://host/data/era.zarr/tas/0.1.2");
    // URL syntax in a key is percent-encoded: it cannot end the path or name another host.
    EXPECT_EQ(http.url_of("a?b#c/%2e%2e"), "https://host/data/era.zarr/a%3Fb%23c/%252e%252e");
    EXPECT_EQ(http.url_of("https:/evil/x"), "https://host/data/era.zarr/https%3A/evil/x");
    for (const char* bad : {"", "/etc/passwd", "tas/../../x", "..", "a//b"})
        EXPECT_THROW(http.url_of(bad), ncafs::SourceError) << bad;
    // An S3 key is literal (remote/ encodes it for the request).
    EXPECT_EQ(RemoteZarrPrefix("s3://bucket/p/x.zarr").url_of("a b/0.0"), "s3://bucket/p/x.zarr/a b/0.0");
    EXPECT_THROW(RemoteZarrPrefix("s3://bucket/x.zarr").url_of("../y/.zarray"), ncafs::SourceError);
}

TEST(RemoteZarrPrefix, NamesOfStores) {
    for (const char* yes : {"https://h/x.zarr", "https://h/x.zarr/", "s3://b/p/era5.zarr", "../data/x.zarr"})
        EXPECT_TRUE(names_zarr_store(yes)) << yes;
    for (const char* no : {"https://h/x.nc", "https://h/.zarr", "https://h/x.zarr/tas", "x.zarray", ".zarr"})
        EXPECT_FALSE(names_zarr_store(no)) << no;
}

TEST(ZarrFolder, OpensBeneathWithoutFollowingSymlinks) {
    const std::string dir = scratch_folder();
    ASSERT_FALSE(dir.empty());
    std::filesystem::create_directories(dir + "/a");
    std::ofstream(dir + "/a/0") << "data";
    std::ofstream(dir + "/secret") << "secret";
    std::filesystem::create_symlink(dir + "/secret", dir + "/a/1");
    std::filesystem::create_directory_symlink(dir + "/a", dir + "/b");
    ZarrFolder folder(ncafs::UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), dir);
    EXPECT_EQ(folder.read("a/0", 100).value(), "data");
    EXPECT_FALSE(folder.open("a/2"));                      // absent: nullptr, read as fill
    EXPECT_THROW(folder.open("a/1"), ncafs::SourceError);  // a symlink
    EXPECT_THROW(folder.open("b/0"), ncafs::SourceError);  // through a symlinked folder
    EXPECT_THROW(folder.open("a/../secret"), ncafs::SourceError);
    EXPECT_THROW(folder.read("a/0", 2), ncafs::SourceError);  // more than the bound
    std::vector<std::string> subfolders;
    folder.for_each_subfolder(100, [&](const std::string& name) {
        subfolders.push_back(name);
        return true;
    });
    EXPECT_EQ(subfolders, std::vector<std::string>{"a"});  // b is a symlink: not listed
    std::filesystem::remove_all(dir);
}

// A local store named as a fragment with allow_other: the caller check
// covers its folder only, so every member must be readable by whoever may read the folder.
TEST(ZarrFolder, FragmentMembersAsReadableAsTheirFolder) {
    const std::string dir = scratch_folder();
    ASSERT_FALSE(dir.empty());
    std::filesystem::create_directories(dir + "/a");
    std::ofstream(dir + "/a/.zarray") << "{}";
    std::ofstream(dir + "/a/0") << "data";
    std::ofstream(dir + "/a/1") << "private";
    ::chmod(dir.c_str(), 0755);
    ::chmod((dir + "/a").c_str(), 0755);
    ::chmod((dir + "/a/.zarray").c_str(), 0644);
    ::chmod((dir + "/a/0").c_str(), 0644);
    ::chmod((dir + "/a/1").c_str(), 0600);
    ncafs::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const ZarrReaders readers = readers_of(fd.get());
    ZarrFolder folder(std::move(fd), dir, readers);
    EXPECT_EQ(folder.read("a/.zarray", 100).value(), "{}");
    EXPECT_TRUE(folder.open("a/0"));
    EXPECT_THROW(folder.open("a/1"), ncafs::SourceError);  // others may list the store, not read this chunk
    ::chmod((dir + "/a").c_str(), 0700);
    EXPECT_THROW(folder.open("a/0"), ncafs::SourceError);  // a folder on the way others may not search
    std::filesystem::remove_all(dir);
}

struct stat stat_of(mode_t mode, uid_t uid = 1000, gid_t gid = 100) {
    struct stat st {};
    st.st_mode = mode;
    st.st_uid = uid;
    st.st_gid = gid;
    return st;
}

// With allow_other a chunk is served only to those who could read it directly.
TEST(ZarrChunkReaders, ChunkMustGrantEveryClassItsMetadataGrants) {
    const int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);  // a file without an ACL, for fgetxattr
    ASSERT_GE(fd, 0);
    const ZarrReaders world{1000, 100, 0444, false}, group{1000, 100, 0440, false}, owner{1000, 100, 0400, false};
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFREG | 0644), world), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0640), world), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0600), world), "");
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFREG | 0640), group), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0604), group), "");  // the group may not, others may
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFREG | 0600), owner), "");
    // Another owner or group: only a chunk every user may read.
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0600, 1001), owner), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0640, 1000, 101), group), "");
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFREG | 0444, 1001, 101), world), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0404, 1001, 101), world), "");  // not its group
    // Folders below the array's are passed through: their search bits count.
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFDIR | 0711), world), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFDIR | 0744), world), "");
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFDIR | 0700), group), "");
    // An ACL on the metadata, or its owner changed since the store was opened:
    // the mode no longer says who passed the check.
    const ZarrReaders acl{1000, 100, 0400, true};
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0600), acl), "");
    EXPECT_EQ(fewer_readers_than(fd, stat_of(S_IFREG | 0444), acl), "");
    const ZarrReaders both = readers_of_both(owner, ZarrReaders{1001, 100, 0440, false});
    EXPECT_EQ(both.read_bits, 0440);
    EXPECT_TRUE(both.beyond_mode);
    EXPECT_NE(fewer_readers_than(fd, stat_of(S_IFREG | 0640), both), "");
    ::close(fd);
}

TEST(ZarrChunkReaders, FolderRefusesLessReadableMembersBelowTheTrustedOnes) {
    const std::string dir = scratch_folder();
    ASSERT_FALSE(dir.empty());
    std::filesystem::create_directories(dir + "/v/0");
    std::ofstream(dir + "/v/.zarray") << "{}";
    std::ofstream(dir + "/v/0/0") << "data";
    std::ofstream(dir + "/v/0/1") << "secret";
    ::chmod((dir + "/v/.zarray").c_str(), 0644);
    ::chmod((dir + "/v/0/0").c_str(), 0644);
    ::chmod((dir + "/v/0/1").c_str(), 0600);
    ::chmod((dir + "/v").c_str(), 0700);  // the array's folder: the caller check's (trusted)
    ZarrFolder folder(ncafs::UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), dir);
    const ZarrReaders readers = readers_of(folder.open("v/.zarray")->fd());
    EXPECT_TRUE(folder.open("v/0/0", &readers, 1));
    EXPECT_THROW(folder.open("v/0/1", &readers, 1), ncafs::SourceError);
    EXPECT_FALSE(folder.open("v/0/2", &readers, 1));  // absent: fill, as ever
    ::chmod((dir + "/v/0").c_str(), 0700);
    EXPECT_THROW(folder.open("v/0/0", &readers, 1), ncafs::SourceError);  // a folder below the array's
    EXPECT_THROW(folder.open("v/0/0", &readers, 0), ncafs::SourceError);  // v/ itself, when not trusted
    EXPECT_TRUE(folder.open("v/0/0"));                                     // without allow_other: no rule
    std::filesystem::remove_all(dir);
}

TEST(ZarrShards, Crc32cOfTheStandardVector) {
    const std::string text = "123456789";
    EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(text.data()), text.size()}), 0xE3069283u);
}

TEST(ZarrV3, TransposeBigEndianAndCompressorsBecomeAZarray) {
    const V3Array a = translate_v3_array(array_node({{{"name", "transpose"}, {"configuration", {{"order", {1, 0}}}}},
                                                     {{"name", "bytes"}, {"configuration", {{"endian", "big"}}}},
                                                     {{"name", "zstd"}, {"configuration", {{"level", 1}}}},
                                                     {{"name", "crc32c"}}}));
    EXPECT_EQ(a.zarray["dtype"], ">f4");
    EXPECT_EQ(a.zarray["order"], "F");
    EXPECT_EQ(a.zarray["chunks"], json({2, 4}));
    EXPECT_EQ(a.zarray["filters"], json({{{"id", "zstd"}}}));
    EXPECT_EQ(a.zarray["fill_value"], "NaN");
    EXPECT_EQ(a.zattrs["_ARRAY_DIMENSIONS"], json({"time", "x"}));
    EXPECT_TRUE(a.layout.chunk_crc32c);
    EXPECT_FALSE(a.layout.shards);
    EXPECT_EQ(v3_chunk_key(a.layout, {2, 0}), "c/2/0");
}

// numcodecs.shuffle's element size is the data type's (as zarrita and zarr-python read it), whatever its configuration.
TEST(ZarrV3, NumcodecsShuffleAndZlibBecomeFilters) {
    const V3Array a = translate_v3_array(array_node({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                                     {{"name", "numcodecs.shuffle"}, {"configuration", {{"elementsize", 2}}}},
                                                     {{"name", "numcodecs.zlib"}, {"configuration", {{"level", 1}}}}}));
    EXPECT_EQ(a.zarray["dtype"], "<f4");
    EXPECT_EQ(a.zarray["filters"], json({{{"id", "shuffle"}, {"elementsize", 4}}, {{"id", "zlib"}}}));
}

TEST(ZarrV3, ChunkKeyEncodings) {
    ZarrKeyLayout layout;
    layout.separator = '.';
    EXPECT_EQ(v3_chunk_key(layout, {1, 2}), "c.1.2");
    EXPECT_EQ(v3_chunk_key(layout, {}), "c");
    layout.default_encoding = false;
    EXPECT_EQ(v3_chunk_key(layout, {1, 2}), "1.2");
    EXPECT_EQ(v3_chunk_key(layout, {}), "0");
}

TEST(ZarrV3, ShardingLayout) {
    const V3Array a = translate_v3_array(array_node(sharding({1, 2}), {{"fill_value", "0x7fc00000"}}));
    ASSERT_TRUE(a.layout.shards);
    EXPECT_EQ(a.layout.shards->chunks_per_shard, (std::vector<uint64_t>{2, 2}));
    EXPECT_EQ(a.layout.shards->index_bytes(), 4u * 16 + 4);
    EXPECT_TRUE(a.layout.shards->index_at_end);
    EXPECT_EQ(a.zarray["chunks"], json({1, 2}));
    EXPECT_EQ(a.zarray["fill_value"], "NaN");
}

TEST(ZarrV3, HostileMetadataIsRefusedWithAReason) {
    const json bytes = {{{"name", "bytes"}}};
    const std::vector<std::pair<json, std::string>> cases = {
        {array_node(sharding({3, 4})), "not a multiple"},
        {array_node(
             sharding({1, 1}),
             {{"shape", {1u << 30, 1u << 30}},
              {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1u << 20, 1u << 20}}}}}}}),
         "chunks per shard"},
        {array_node(sharding({1, 2}, {{{"name", "gzip"}}})), "comes before the bytes codec"},
        {array_node({{{"name", "bytes"}}, {{"name", "crc32c"}}, {{"name", "gzip"}}}), "only a last crc32c"},
        {array_node({{{"name", "bytes"}}, {{"name", "lzf"}}}), "\"lzf\" is not supported"},
        {array_node({{{"name", "transpose"}, {"configuration", {{"order", {0, 0}}}}}, {{"name", "bytes"}}}),
         "transpose order"},
        {array_node(bytes, {{"data_type", "complex64"}}), "complex64"},
        {array_node(bytes, {{"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {0, 4}}}}}}}),
         "chunk_shape holds 0"},
        {array_node(bytes, {{"storage_transformers", {{{"name", "x"}}}}}), "storage transformers"},
        {array_node(bytes, {{"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/.."}}}}}}),
         "separator"},
        {array_node(bytes, {{"fill_value", "0xZZZZZZZZ"}}), "is not float32 bits"},
        {array_node(json::array({bytes[0], bytes[0]})), "two array-to-bytes codecs"},
    };
    for (const auto& [node, reason] : cases) {
        try {
            translate_v3_array(node);
            ADD_FAILURE() << "accepted: " << node.dump();
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what() << " (want " << reason << ")";
        }
    }
}

}  // namespace
