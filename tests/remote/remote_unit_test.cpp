// Unit tests of remote/'s judgements on hostile input: Content-Range
// parsing, response verdicts, S3 addressing, the AWS INI files and the
// disk cache's handling of torn or foreign files. Expected values are
// written out from the HTTP/S3 specifications, not taken from the code.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codecs/error.hpp"
#include "remote/backoff.hpp"
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
        DiskCache cache(dir, 1 << 20);
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
    DiskCache reopened(dir, 1 << 20);
    EXPECT_FALSE(reopened.load_meta("http://h/x"));
    EXPECT_FALSE(std::filesystem::exists(stale));
    EXPECT_TRUE(std::filesystem::exists(fresh));
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
