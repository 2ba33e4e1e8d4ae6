// Unit tests of remote/'s judgements on hostile input: Content-Range
// parsing, response verdicts, S3 addressing, the AWS INI files and the
// disk cache's handling of torn, foreign or planted files and folders. Expected values are
// written out from the HTTP/S3 specifications, not taken from the code.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "codecs/error.hpp"
#include "remote/backoff.hpp"
#include "remote/cache_entry.hpp"
#include "remote/disk_cache.hpp"
#include "remote/failure_memory.hpp"
#include "remote/object_address.hpp"
#include "remote/range_response.hpp"

using namespace ncafs::remote;

namespace {

RangeResponse response(long status, std::string content_range, uint64_t received) {
    RangeResponse r;
    r.status = status;
    r.content_range = std::move(content_range);
    r.received = received;
    return r;
}

RangeRequest request(uint64_t offset, uint64_t length) {
    RangeRequest q;
    q.offset = offset;
    q.length = length;
    return q;
}

std::string temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ncafs-remote-unit-XXXXXX").string();
    return mkdtemp(pattern.data());
}

void quiet(const std::string&) {}

unsigned mode_of(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

std::set<std::string> names_in(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

void expect_refused(const std::string& dir, const std::string& words) {
    try {
        DiskCache cache(dir, 1 << 20, quiet);
        ADD_FAILURE() << dir << ": accepted, expected refused (" << words << ")";
    } catch (const ncafs::UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("cache_dir " + dir + ": "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

}  // namespace

TEST(ContentRange, ParsesOnlyWellFormedValues) {
    auto cr = parse_content_range("bytes 10-19/100");
    ASSERT_TRUE(cr);
    EXPECT_EQ(*cr->first, 10u);
    EXPECT_EQ(*cr->last, 19u);
    EXPECT_EQ(cr->total, 100u);
    auto unsatisfied = parse_content_range("bytes */0");
    ASSERT_TRUE(unsatisfied);
    EXPECT_FALSE(unsatisfied->first);
    for (const char* bad : {"", "bytes", "bytes 10-19/*", "bytes 19-10/100", "bytes 10-100/100", "items 0-1/2",
                            "bytes -1-5/10", "bytes 0-1/99999999999999999999999", "bytes 0-1/2x"})
        EXPECT_FALSE(parse_content_range(bad)) << bad;
}

TEST(Judge, PartialResponsesMustMatchTheRequestExactly) {
    Expected known{100, "\"e\""};
    EXPECT_EQ(judge(request(10, 10), response(206, "bytes 10-19/100", 10), known).verdict, Verdict::Ok);
    EXPECT_EQ(judge(request(10, 10), response(206, "bytes 11-20/100", 10), known).verdict, Verdict::Retry);
    EXPECT_EQ(judge(request(10, 10), response(206, "bytes 10-19/101", 10), known).verdict, Verdict::Retry);
    EXPECT_EQ(judge(request(10, 10), response(206, "bytes 10-19/100", 9), known).verdict, Verdict::Retry);
    EXPECT_EQ(judge(request(10, 10), response(206, "", 10), known).verdict, Verdict::Retry);
    // At open the size is unknown: a first request past a small object's end.
    EXPECT_EQ(judge(request(0, 1000), response(206, "bytes 0-99/100", 100), Expected{}).verdict, Verdict::Ok);
    EXPECT_EQ(judge(request(0, 1000), response(206, "bytes 0-99/200", 100), Expected{}).verdict, Verdict::Retry);
}

TEST(Judge, AWholeBodyIsAcceptedOnlyWhenTheWholeObjectWasAsked) {
    EXPECT_EQ(judge(request(0, 100), response(200, "", 100), Expected{100, ""}).verdict, Verdict::Ok);
    EXPECT_EQ(judge(request(10, 10), response(200, "", 10), Expected{100, ""}).verdict, Verdict::Fail);
    RangeResponse whole = response(200, "", 10);
    whole.overflow = true;
    EXPECT_EQ(judge(request(0, 10), whole, Expected{}).verdict, Verdict::Fail);
    EXPECT_EQ(judge(request(0, 1000), response(200, "", 100), Expected{}).verdict, Verdict::Ok);
    EXPECT_EQ(revealed_size(response(200, "", 100)), 100u);
}

TEST(Judge, StatusesSortIntoRetryFailAndChanged) {
    Expected known{100, "\"e\""};
    EXPECT_EQ(judge(request(0, 10), response(412, "", 0), known).verdict, Verdict::Changed);
    EXPECT_EQ(judge(request(0, 10), response(503, "", 0), known).verdict, Verdict::Retry);
    EXPECT_EQ(judge(request(0, 10), response(429, "", 0), known).verdict, Verdict::Retry);
    EXPECT_EQ(judge(request(0, 10), response(404, "", 0), known).verdict, Verdict::Fail);
    EXPECT_EQ(judge(request(0, 10), response(403, "", 0), known).verdict, Verdict::Fail);
    RangeResponse replaced = response(206, "bytes 0-9/100", 10);
    replaced.etag = "\"other\"";
    EXPECT_EQ(judge(request(0, 10), replaced, known).verdict, Verdict::Changed);
    RangeResponse empty = response(416, "bytes */0", 0);
    EXPECT_EQ(judge(request(0, 10), empty, Expected{}).verdict, Verdict::Ok);
    EXPECT_EQ(revealed_size(empty), 0u);
}

TEST(Judge, S3ErrorBodiesAreQuoted) {
    RangeResponse r = response(403, "", 0);
    r.error_body = "<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>";
    EXPECT_EQ(describe_status(r), "HTTP 403 (SignatureDoesNotMatch: no)");
}

TEST(Address, S3PathAndVirtualHostStyle) {
    AwsCredentials none{"", "", "", "none"};
    ObjectAddress path = address_of("s3://my-bucket/a b/c+d.nc", "http://127.0.0.1:9000/", "eu-west-1", none);
    EXPECT_EQ(path.http_url, "http://127.0.0.1:9000/my-bucket/a%20b/c%2Bd.nc");
    EXPECT_TRUE(path.sigv4.empty());
    AwsCredentials keys{"AK", "SK", "TOKEN", "test"};
    ObjectAddress aws = address_of("S3://my-bucket/k.nc", "", "eu-west-1", keys);
    EXPECT_EQ(aws.http_url, "https://my-bucket.s3.eu-west-1.amazonaws.com/k.nc");
    EXPECT_EQ(aws.sigv4, "aws:amz:eu-west-1:s3");
    EXPECT_EQ(address_of("s3://my.dotted.bucket/k", "", "eu-west-1", none).http_url,
              "https://s3.eu-west-1.amazonaws.com/my.dotted.bucket/k");
    EXPECT_EQ(aws.userpwd, "AK:SK");
    ASSERT_EQ(aws.headers.size(), 2u);
    EXPECT_EQ(aws.headers[1], "x-amz-security-token: TOKEN");
    for (const char* bad : {"s3://bucket", "s3://bucket/", "s3://b/key", "s3://bad:bucket/key", "http://x/a\nb"})
        EXPECT_THROW(address_of(bad, "", "us-east-1", none), ncafs::SourceError) << bad;
    EXPECT_THROW(address_of("s3://bucket/k", "", "us-east-1:x", none), ncafs::SourceError);
    EXPECT_TRUE(is_remote_url("HTTPS://host/x"));
    EXPECT_FALSE(is_remote_url("file:///x"));
    EXPECT_FALSE(is_remote_url("/data/s3://x"));
}

TEST(Credentials, IniSectionsAndRegionOrder) {
    std::string dir = temp_dir();
    std::string file = dir + "/config";
    std::ofstream(file) << "[default]\nregion = us-west-2\n# comment\n[profile other]\n  region=ap-south-1  \n";
    EXPECT_EQ(ini_value(file, "default", "region"), "us-west-2");
    EXPECT_EQ(ini_value(file, "profile other", "region"), "ap-south-1");
    EXPECT_EQ(ini_value(file, "missing", "region"), "");
    EXPECT_EQ(ini_value(dir + "/absent", "default", "region"), "");
    ::unsetenv("AWS_REGION");
    ::unsetenv("AWS_DEFAULT_REGION");
    ::setenv("AWS_CONFIG_FILE", file.c_str(), 1);
    ::setenv("AWS_PROFILE", "other", 1);
    EXPECT_EQ(find_aws_region(""), "ap-south-1");
    EXPECT_EQ(find_aws_region("eu-north-1"), "eu-north-1");
    ::setenv("AWS_DEFAULT_REGION", "ca-central-1", 1);
    EXPECT_EQ(find_aws_region(""), "ca-central-1");
    ::unsetenv("AWS_DEFAULT_REGION");
    ::unsetenv("AWS_PROFILE");
    ::unsetenv("AWS_CONFIG_FILE");
    std::filesystem::remove_all(dir);
}

TEST(DiskCache, TornOrForeignFilesAreIgnored) {
    std::string dir = temp_dir();
    {
        DiskCache cache(dir, 1 << 20, quiet);
        cache.store_meta(ObjectMeta{"http://h/x", 42, "\"e\"", "yesterday"});
        auto meta = cache.load_meta("http://h/x");
        ASSERT_TRUE(meta);
        EXPECT_EQ(meta->size, 42u);
        EXPECT_FALSE(cache.load_meta("http://h/y"));
        std::string key = object_key("http://h/x", "v1");
        cache.store_block(key, 3, std::vector<char>(100, 'a'));
        EXPECT_TRUE(cache.load_block(key, 3, 100));
        EXPECT_FALSE(cache.load_block(key, 3, 99));  // wrong size: removed
        EXPECT_FALSE(cache.load_block(key, 3, 100));
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/meta"))
        std::ofstream(entry.path()) << "ncafs-remote-meta 1\nhttp://h/x\n12x\n\"e\"\nyesterday\n";
    std::string stale = dir + "/tmp/stale", fresh = dir + "/tmp/fresh";
    std::ofstream(stale) << "left by a crash";
    std::ofstream(fresh) << "being written";
    std::filesystem::last_write_time(stale, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
    DiskCache reopened(dir, 1 << 20, quiet);
    EXPECT_FALSE(reopened.load_meta("http://h/x"));
    EXPECT_FALSE(std::filesystem::exists(stale));
    EXPECT_TRUE(std::filesystem::exists(fresh));
    std::filesystem::remove_all(dir);
}

TEST(DiskCache, FoldersAreOwnerOnlyAndFilesAre0600) {
    std::string dir = temp_dir() + "/cache";
    ::umask(022);
    {
        DiskCache cache(dir, 1 << 20, quiet);
        cache.store_meta(ObjectMeta{"http://h/x", 42, "\"e\"", "yesterday"});
        cache.store_block(object_key("http://h/x", "v1"), 0, std::vector<char>(10, 'b'));
        TempFile temp = cache.create_temp();
        ASSERT_EQ(::pwrite(temp.fd.get(), "abc", 3, 0), 3);
        EntrySeal seal;
        seal.add("abc", 3);
        cache.publish_object(temp, object_key("http://h/x", "v1"), 3, seal);
    }
    size_t files = 0;
    EXPECT_EQ(mode_of(dir), 0700);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        struct stat st {};
        ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
        files += S_ISREG(st.st_mode);
        EXPECT_EQ(st.st_mode & 07777, S_ISDIR(st.st_mode) ? 0700u : 0600u) << e.path();
        EXPECT_EQ(st.st_uid, ::geteuid()) << e.path();
    }
    EXPECT_EQ(files, 5u);  // secret, lock, meta, block, object
    EXPECT_EQ(std::filesystem::file_size(dir + "/secret"), 32u);
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(DiskCache, RefusesFoldersOthersCouldWrite) {
    std::string parent = temp_dir();
    std::string open_to_all = parent + "/open", link = parent + "/link";
    ASSERT_EQ(::mkdir(open_to_all.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(open_to_all.c_str(), 0777), 0);
    expect_refused(open_to_all, "writable by its group or by others");
    ASSERT_EQ(::symlink(open_to_all.c_str(), link.c_str()), 0);
    expect_refused(link, "symbolic link");
    EXPECT_TRUE(std::filesystem::is_empty(open_to_all));

    std::string ours = parent + "/ours";
    { DiskCache cache(ours, 1 << 20, quiet); }
    ASSERT_EQ(::chmod((ours + "/blocks").c_str(), 0755), 0);
    ASSERT_EQ(::chmod(ours.c_str(), 0755), 0);  // readable by others, not writable: made 0700
    { DiskCache cache(ours, 1 << 20, quiet); }
    EXPECT_EQ(mode_of(ours), 0700);
    EXPECT_EQ(mode_of(ours + "/blocks"), 0700);
    std::filesystem::rename(ours + "/tmp", ours + "/tmp.away");
    ASSERT_EQ(::symlink(open_to_all.c_str(), (ours + "/tmp").c_str()), 0);
    expect_refused(ours, "tmp is a symbolic link");
    if (::geteuid() == 0) {  // a folder another user made first
        std::string theirs = parent + "/theirs";
        ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
        ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
        expect_refused(theirs, "owned by uid 4242");
        EXPECT_TRUE(std::filesystem::is_empty(theirs));
    }
    std::filesystem::remove_all(parent);
}

TEST(DiskCache, NamesAreKeyedWithTheCachesSecret) {
    std::string a = temp_dir(), b = temp_dir();
    std::string key = object_key("http://h/x", "etag=\"1\";modified=;size=10");
    {
        DiskCache ca(a, 1 << 20, quiet), cb(b, 1 << 20, quiet);
        ca.store_block(key, 0, std::vector<char>(10, 'c'));
        cb.store_block(key, 0, std::vector<char>(10, 'c'));
    }
    EXPECT_NE(names_in(a + "/blocks"), names_in(b + "/blocks"));
    EXPECT_EQ(names_in(a + "/blocks").size(), 1u);
    DiskCache again(a, 1 << 20, quiet);  // the same secret: the block is found
    EXPECT_TRUE(again.load_block(key, 0, 10));
    std::filesystem::remove_all(a);
    std::filesystem::remove_all(b);
}

TEST(DiskCache, ADamagedSecretClearsTheCache) {
    std::string dir = temp_dir();
    std::string key = object_key("http://h/x", "v");
    { DiskCache cache(dir, 1 << 20, quiet); cache.store_block(key, 0, std::vector<char>(10, 'd')); }
    std::ofstream(dir + "/secret", std::ios::trunc) << "short";
    std::vector<std::string> lines;
    DiskCache cache(dir, 1 << 20, [&](const std::string& l) { lines.push_back(l); });
    EXPECT_FALSE(cache.load_block(key, 0, 10));
    EXPECT_TRUE(names_in(dir + "/blocks").empty());
    EXPECT_EQ(std::filesystem::file_size(dir + "/secret"), 32u);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.back().find("new secret"), std::string::npos) << lines.back();
    std::filesystem::remove_all(dir);
}

// A leaked name: whatever is planted there is never read, never blocks.
TEST(DiskCache, PlantedEntriesAreNeitherFollowedNorRead) {
    std::string dir = temp_dir(), outside = temp_dir();
    std::string key = object_key("http://h/x", "v");
    std::vector<std::string> lines;
    DiskCache cache(dir, 1 << 20, [&](const std::string& l) { lines.push_back(l); });
    std::string secret = outside + "/secret";
    std::ofstream(secret) << std::string(10, 'S');
    ::chmod(secret.c_str(), 0600);
    auto plant = [&](const std::function<void(const std::string&)>& make) {
        cache.store_block(key, 0, std::vector<char>(10, 'e'));
        std::string path = dir + "/blocks/" + *names_in(dir + "/blocks").begin();
        std::filesystem::remove(path);
        make(path);
        return path;
    };
    std::string link = plant([&](const std::string& p) { ASSERT_EQ(::symlink(secret.c_str(), p.c_str()), 0); });
    EXPECT_FALSE(cache.load_block(key, 0, 10));
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(link)));  // the link removed, not its target
    EXPECT_TRUE(std::filesystem::exists(secret));
    std::string fifo = plant([](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); });
    EXPECT_FALSE(cache.load_block(key, 0, 10));  // returns: O_NONBLOCK
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(fifo)));
    plant([&](const std::string& p) { ASSERT_EQ(::link(secret.c_str(), p.c_str()), 0); });
    EXPECT_FALSE(cache.load_block(key, 0, 10));  // two links: not a file the cache wrote
    plant([](const std::string& p) {
        std::ofstream(p) << std::string(10, 'f');
        ::chmod(p.c_str(), 0644);
    });
    EXPECT_FALSE(cache.load_block(key, 0, 10));  // readable by others
    EXPECT_EQ(lines.size(), 4u);
    EXPECT_TRUE(std::filesystem::exists(secret));
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(outside);
}

namespace {

// Overwrites byte `at` of an existing file in place (its mode and link count kept).
void flip_byte(const std::string& path, uint64_t at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x55));
}

std::string only_file_in(const std::string& dir) {
    auto names = names_in(dir);
    return names.size() == 1 ? dir + "/" + *names.begin() : std::string();
}

// Copies a local copy's bytes out through the fd, to compare them.
std::string bytes_of(int fd, uint64_t n) {
    std::string out(n, '\0');
    EXPECT_EQ(::pread(fd, out.data(), n, 0), static_cast<ssize_t>(n));
    return out;
}

CachedObject publish(DiskCache& cache, const std::string& key, const std::string& bytes) {
    TempFile temp = cache.create_temp();
    EXPECT_EQ(::pwrite(temp.fd.get(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    EntrySeal seal;
    seal.add(bytes.data(), bytes.size());
    return cache.publish_object(temp, key, bytes.size(), seal);
}

}  // namespace

// A block is used only with its record: a changed byte (torn, or damaged),
// a file cut short, or another entry's file under its name is a miss.
TEST(DiskCache, BlocksAreSealedByTheirRecord) {
    std::string dir = temp_dir();
    DiskCache cache(dir, 1 << 20, quiet);
    const std::string key = object_key("http://h/x", "v1");
    auto stored = [&](uint64_t index, char fill) {
        cache.store_block(key, index, std::vector<char>(100, fill));
        return cache.load_block(key, index, 100);
    };
    ASSERT_TRUE(stored(0, 'a'));
    EXPECT_EQ(*cache.load_block(key, 0, 100), std::vector<char>(100, 'a'));
    flip_byte(only_file_in(dir + "/blocks"), 7);
    EXPECT_FALSE(cache.load_block(key, 0, 100));  // its hash differs: removed
    EXPECT_TRUE(names_in(dir + "/blocks").empty());
    ASSERT_TRUE(stored(0, 'a'));
    std::filesystem::resize_file(only_file_in(dir + "/blocks"), 150);  // torn: part of the record missing
    EXPECT_FALSE(cache.load_block(key, 0, 100));
    ASSERT_TRUE(stored(0, 'a'));
    std::string first = only_file_in(dir + "/blocks");
    ASSERT_TRUE(stored(1, 'b'));
    std::string second;
    for (const auto& name : names_in(dir + "/blocks"))
        if (dir + "/blocks/" + name != first) second = dir + "/blocks/" + name;
    std::filesystem::rename(first, second);  // block 0's file, sound, under block 1's name
    EXPECT_FALSE(cache.load_block(key, 1, 100));
    EXPECT_FALSE(cache.load_block(key, 0, 100));
    std::filesystem::remove_all(dir);
}

// Two processes fetch one object into one cache: the copy published first
// stays under the name (its readers keep their file) and the other reads it
// too; a damaged copy is a miss for a new process.
TEST(DiskCache, ALocalCopyPublishedFirstStaysAndIsChecked) {
    std::string dir = temp_dir();
    const std::string key = object_key("http://h/o", "v1"), bytes(5000, 'c');
    DiskCache one(dir, 1 << 20, quiet), two(dir, 1 << 20, quiet);
    CachedObject first = publish(one, key, bytes);
    CachedObject second = publish(two, key, bytes);
    EXPECT_EQ(second.st.st_ino, first.st.st_ino);  // the copy published first, read by both
    EXPECT_EQ(bytes_of(second.fd.get(), bytes.size()), bytes);
    const std::string path = only_file_in(dir + "/objects");
    ASSERT_FALSE(path.empty());
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_ino, first.st.st_ino);
    EXPECT_EQ(st.st_size, static_cast<off_t>(bytes.size() + kRecordBytes));
    EXPECT_TRUE(names_in(dir + "/tmp").empty());
    auto cached = two.open_object(key, bytes.size());
    ASSERT_TRUE(cached);
    EXPECT_EQ(bytes_of(cached->fd.get(), bytes.size()), bytes);
    EXPECT_FALSE(two.open_object(key, bytes.size() - 1));  // another size: not this copy (removed)
    publish(one, key, bytes);
    flip_byte(only_file_in(dir + "/objects"), 4000);
    DiskCache three(dir, 1 << 20, quiet);  // a new process hashes the copy: damaged
    EXPECT_FALSE(three.open_object(key, bytes.size()));
    EXPECT_TRUE(names_in(dir + "/objects").empty());
    std::filesystem::remove_all(dir);
}

// Another process holding the eviction lock (stopped in the middle, or
// hung) never makes this one wait: it opens, fills past its bound without
// evicting, and evicts at its next fill once the lock is free.
TEST(DiskCache, EvictionNeverWaitsForAnotherProcess) {
    std::string dir = temp_dir();
    { DiskCache created(dir, 1000, quiet); }
    int holder = ::open((dir + "/lock").c_str(), O_RDWR | O_CLOEXEC);  // another open file description
    ASSERT_GE(holder, 0);
    ASSERT_EQ(::flock(holder, LOCK_EX), 0);
    DiskCache cache(dir, 1000, quiet);
    const std::string key = object_key("http://h/x", "v");
    for (uint64_t i = 0; i < 10; ++i) cache.store_block(key, i, std::vector<char>(200, 'e'));
    EXPECT_EQ(names_in(dir + "/blocks").size(), 10u);  // over the bound: nothing deleted under another's lock
    ::close(holder);
    cache.store_block(key, 10, std::vector<char>(200, 'e'));
    EXPECT_LE(names_in(dir + "/blocks").size() * (200 + kRecordBytes), 1000u);
    std::filesystem::remove_all(dir);
}

// Under a running cache, tmp/ swapped for a link to a victim folder holding
// an old file: writes and the clean-up of tmp/ use the folder's descriptor.
TEST(DiskCache, SwappedFoldersAreNotFollowed) {
    std::string dir = temp_dir(), victim = temp_dir();
    std::string old = victim + "/old";
    std::ofstream(old) << "precious";
    std::filesystem::last_write_time(old, std::filesystem::file_time_type::clock::now() - std::chrono::hours(3));
    DiskCache cache(dir, 1000, quiet);  // 20 blocks of 130 bytes with their records: evicted
    for (const char* sub : {"tmp", "meta"}) {
        std::filesystem::rename(dir + "/" + sub, dir + "/" + sub + ".away");
        ASSERT_EQ(::symlink(victim.c_str(), (dir + "/" + sub).c_str()), 0);
    }
    cache.store_meta(ObjectMeta{"http://h/x", 42, "\"e\"", "yesterday"});
    for (uint64_t i = 0; i < 20; ++i) cache.store_block(object_key("http://h/x", "v"), i, std::vector<char>(10, 'g'));
    EXPECT_TRUE(cache.load_meta("http://h/x"));
    EXPECT_EQ(names_in(victim), std::set<std::string>{"old"});
    EXPECT_FALSE(names_in(dir + "/blocks").empty());
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(victim);
}

// A cache written before names were keyed (0755 folders, 0644 files, no
// secret): tightened to 0700 and emptied, its files' names being lost.
TEST(DiskCache, AnOlderCacheIsTightenedAndEmptied) {
    std::string dir = temp_dir();
    ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
    for (const char* sub : {"meta", "blocks", "objects", "tmp"})
        ASSERT_EQ(::mkdir((dir + "/" + sub).c_str(), 0755), 0);
    std::ofstream(dir + "/blocks/0123456789abcdef0123456789abcdef.0") << "private bytes";
    ::chmod((dir + "/blocks/0123456789abcdef0123456789abcdef.0").c_str(), 0644);
    std::vector<std::string> lines;
    DiskCache cache(dir, 1 << 20, [&](const std::string& l) { lines.push_back(l); });
    EXPECT_EQ(mode_of(dir), 0700u);
    for (const char* sub : {"meta", "blocks", "objects", "tmp"}) EXPECT_EQ(mode_of(dir + "/" + sub), 0700u) << sub;
    EXPECT_TRUE(names_in(dir + "/blocks").empty());
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("1 cached file removed"), std::string::npos) << lines[0];
    std::filesystem::remove_all(dir);
}

TEST(FailureMemory, RecallsPerUrlAndVersionUntilItExpires) {
    using namespace std::chrono_literals;
    ncafs::remote::FailureMemory memory(300ms);
    ncafs::remote::FetchError error("http://h/a.nc", "HTTP 503 (after 6 attempts)", ncafs::remote::Verdict::Retry, 503);
    memory.remember("http://h/a.nc", "v1", error);
    auto recalled = memory.recall("http://h/a.nc", "v1");
    ASSERT_TRUE(recalled);
    EXPECT_EQ(recalled->status(), 503);
    EXPECT_NE(std::string(recalled->what()).find("HTTP 503"), std::string::npos);
    EXPECT_NE(std::string(recalled->what()).find("not tried again"), std::string::npos);
    EXPECT_FALSE(memory.recall("http://h/a.nc", "v2"));  // another version: not failed
    EXPECT_FALSE(memory.recall("http://h/b.nc", "v1"));
    std::this_thread::sleep_for(350ms);
    EXPECT_FALSE(memory.recall("http://h/a.nc", "v1"));  // expired
    memory.remember("http://h/a.nc", "", error);
    memory.forget("http://h/a.nc", "");
    EXPECT_FALSE(memory.recall("http://h/a.nc", ""));
}

TEST(Backoff, NoAttemptPastTheDeadline) {
    using namespace std::chrono_literals;
    ncafs::remote::RemoteConfig config;
    config.max_retries = 1000;
    auto deadline = std::chrono::steady_clock::now() + 1s;
    ncafs::remote::Backoff backoff(config, deadline);
    while (auto wait = backoff.next()) std::this_thread::sleep_for(*wait);  // as fetch_ranges waits
    // The last wait ended early enough for one more attempt before the deadline.
    EXPECT_LT(std::chrono::steady_clock::now(), deadline);
    EXPECT_GT(backoff.attempts(), 1u);
}
