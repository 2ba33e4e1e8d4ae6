// Unit tests of access on behalf of the caller (fs/caller_access) and
// agg::files_drawn_on. The credential tests need root (they switch to other
// users); they say SKIPPED otherwise.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/read/dataset_files.hpp"
#include "fs/caller_access.hpp"
#include "io/confined_open.hpp"
#include "io/file_pins.hpp"
#include "tests/fs/temp_files.hpp"

namespace stdfs = std::filesystem;
using namespace ncafs;
using namespace ncafs::fs;
using ncafs::test::files;
using ncafs::test::TempDir;

namespace {

constexpr uid_t kNobody = 65534;

struct stat stat_of(const std::string& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st;
}

#define REQUIRE_ROOT()                                                                    \
    if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: switching to other users needs root"

}  // namespace

TEST(CallerAccess, RefusesWhatTheCallerCannotReadAndRestoresTheThread) {
    REQUIRE_ROOT();
    TempDir dir;
    std::string open_file = dir.write("open.nc", "x", 0644);
    std::string hidden = dir.write("hidden.nc", "secret", 0600);
    CallerAccess access;
    Caller nobody{kNobody, kNobody, {}};
    auto verdict = access.check(nobody, open_file, stat_of(open_file), files({open_file, hidden}), false);
    EXPECT_FALSE(verdict.allowed);
    EXPECT_EQ(verdict.file, hidden);
    EXPECT_EQ(verdict.error, EACCES);
    EXPECT_TRUE(access.check(nobody, open_file, stat_of(open_file), files({open_file}), false).allowed);
    Caller root{0, 0, {}};
    EXPECT_TRUE(access.check(root, open_file, stat_of(open_file), files({open_file, hidden}), false).allowed);
    // The thread is root again, with its groups.
    EXPECT_EQ(::setfsuid(static_cast<uid_t>(-1)), 0);
    EXPECT_EQ(::setfsgid(static_cast<gid_t>(-1)), 0);
    EXPECT_EQ(::access(hidden.c_str(), R_OK), 0);
}

TEST(CallerAccess, SupplementaryGroupsCount) {
    REQUIRE_ROOT();
    TempDir dir;
    std::string shared = dir.write("shared.nc", "x", 0640);
    ASSERT_EQ(::chown(shared.c_str(), 0, 4242), 0);
    CallerAccess access;
    EXPECT_FALSE(access.check(Caller{kNobody, kNobody, {}}, shared, stat_of(shared), files({shared}), false).allowed);
    Caller in_group{kNobody, kNobody, {4242}};
    EXPECT_TRUE(access.check(in_group, shared, stat_of(shared), files({shared}), false).allowed);
}

TEST(CallerAccess, FoldersOnTheWayMustBeSearchable) {
    REQUIRE_ROOT();
    TempDir dir;
    stdfs::create_directory(dir.path / "private");
    std::string inner = dir.write("private/inner.nc", "x", 0644);
    stdfs::permissions(dir.path / "private", stdfs::perms(0700));
    CallerAccess access;
    auto verdict = access.check(Caller{kNobody, kNobody, {}}, inner, stat_of(inner), files({inner}), false);
    EXPECT_FALSE(verdict.allowed);
    EXPECT_EQ(verdict.error, EACCES);
}

TEST(CallerAccess, DecisionsAreCachedUntilForgottenOrAFolderChanges) {
    REQUIRE_ROOT();
    TempDir dir;
    std::string a = dir.write("a.nc", "x");
    CallerAccess access;
    Caller nobody{kNobody, kNobody, {}};
    auto list = files({a});
    EXPECT_TRUE(access.check(nobody, a, stat_of(a), list, true).allowed);
    EXPECT_TRUE(access.check(nobody, a, stat_of(a), list, true).allowed);
    EXPECT_EQ(access.checks_run(), 1u);
    access.check(nobody, a, stat_of(a), list, false);  // not cacheable: checked again
    EXPECT_EQ(access.checks_run(), 2u);
    access.forget_all();
    access.check(nobody, a, stat_of(a), list, true);
    EXPECT_EQ(access.checks_run(), 3u);
    stdfs::permissions(dir.path, stdfs::perms(0700));  // a folder on the way changed
    EXPECT_FALSE(access.check(nobody, a, stat_of(a), list, true).allowed);
    EXPECT_EQ(access.checks_run(), 4u);
    // Another caller is another decision.
    access.check(Caller{kNobody, kNobody, {7}}, a, stat_of(a), list, true);
    EXPECT_EQ(access.checks_run(), 5u);
}

// Opens path confined to roots, as the daemon's reads do, and asks the pins.
std::string pinned_refusal(const ConfinedRoots& roots, const std::string& path) {
    OpenResult r = roots.open(path, O_RDONLY);
    if (!r.fd) return "cannot open";
    return FilePins::shared().refusal(path, r.fd.get());
}

TEST(CallerAccess, ReadsOpenOnlyTheFilesTheCheckFound) {
    REQUIRE_ROOT();
    TempDir dir;
    const std::string own = dir.write("own.bin", "own"), secret = dir.write("secret.bin", "secret", 0600);
    stdfs::create_symlink("own.bin", dir.path / "link.bin");
    const std::string link = (dir.path / "link.bin").string(), late = (dir.path / "late.bin").string();
    auto roots = std::make_shared<const ConfinedRoots>(std::vector<std::string>{dir.path.string()});
    CallerAccess access(roots);
    Caller nobody{kNobody, kNobody, {}};
    EXPECT_TRUE(access.check(nobody, link, stat_of(link), files({link, late}), false).allowed);
    EXPECT_EQ(pinned_refusal(*roots, link), "");  // the file the check found
    const uint64_t before = FilePins::shared().generation();
    // Retargeted to a file nobody may not read: refused, and every grant is judged again.
    stdfs::remove(dir.path / "link.bin");
    stdfs::create_symlink("secret.bin", dir.path / "link.bin");
    EXPECT_NE(pinned_refusal(*roots, link), "");
    EXPECT_GT(FilePins::shared().generation(), before);
    EXPECT_FALSE(access.check(nobody, link, stat_of(link), files({link, late}), false).allowed);
    // Absent at the check, created later: refused until checked again.
    dir.write("late.bin", "late");
    EXPECT_NE(pinned_refusal(*roots, late), "");
    // A path never checked: refused.
    EXPECT_NE(pinned_refusal(*roots, own), "");
    // Checked again (the link back on the own file): both served.
    stdfs::remove(dir.path / "link.bin");
    stdfs::create_symlink("own.bin", dir.path / "link.bin");
    EXPECT_TRUE(access.check(nobody, link, stat_of(link), files({link, late}), false).allowed);
    EXPECT_EQ(pinned_refusal(*roots, link), "");
    EXPECT_EQ(pinned_refusal(*roots, late), "");
    (void)secret;
    FilePins::shared().enforce(false);  // the other tests of this program read unchecked files
}

TEST(CallerAccess, ADaemonThatIsNotRootServesOnlyItsOwnUser) {
    REQUIRE_ROOT();
    TempDir dir;
    std::string open_file = dir.write("open.nc", "x", 0644);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // becomes an ordinary user, as a daemon mounted by that user runs
        if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(10);
        CallerAccess access;
        if (AssumedCredentials(Caller{1234, 1234, {}}).ok()) ::_exit(11);
        auto other = access.check(Caller{1234, 1234, {}}, open_file, stat_of(open_file), files({open_file}), false);
        if (other.allowed || other.error != EPERM) ::_exit(12);
        Caller self_user{kNobody, kNobody, {}};
        auto self = access.check(self_user, open_file, stat_of(open_file), files({open_file}), false);
        ::_exit(self.allowed ? 0 : 13);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10: cannot drop root, 11: switched anyway, 12: other user served, "
                                         "13: own user refused";
}

namespace {

// A dataset of one aggregated variable over `paths` (one File partition of two
// values each), then a Missing partition naming `missing_path`, and a plain variable.
Dataset dataset_over(const std::vector<std::string>& paths, const std::string& missing_path,
                     agg::DatasetCache& cache) {
    auto aggregate = std::make_shared<agg::Aggregate>();
    aggregate->file = "/data/a.nca";
    aggregate->name = "tas";
    aggregate->type = NcType::Float;
    aggregate->dims = {"t"};
    aggregate->shape = {2 * paths.size() + 2};
    aggregate->fill.resize(4);
    for (uint64_t i = 0; i < paths.size(); ++i) {
        agg::Fragment f;
        f.start = {2 * i};
        f.count = {2};
        f.path = paths[i];
        f.variable = "tas";
        f.axis_to_master = {0};
        aggregate->fragments.push_back(f);
    }
    agg::Fragment missing;
    missing.kind = agg::FragmentKind::Missing;
    missing.path = missing_path;
    missing.start = {2 * paths.size()};
    missing.count = {2};
    aggregate->fragments.push_back(missing);  // names no file it draws on
    auto policy = std::make_shared<const agg::PathPolicy>("/data/a.nca", std::vector<std::string>{},
                                                          std::vector<std::pair<std::string, std::string>>{});
    Dataset ds;
    ds.origin = "/data/a.nca";
    ds.variables.push_back(Variable{"tas", NcType::Float, {}, {},
                                    std::make_shared<const agg::AggregatedSource>(aggregate, policy, cache)});
    ds.variables.push_back(Variable{"plain", NcType::Float, {}, {}, nullptr});
    return ds;
}

}  // namespace

TEST(FilesDrawnOn, OriginThenEachPartitionOnce) {
    agg::DatasetCache cache;
    Dataset ds = dataset_over({"/data/p1.nc", "/data/p2.nc", "/data/p1.nc"}, "/data/never.nc", cache);
    EXPECT_EQ(agg::files_drawn_on(ds), (std::vector<std::string>{"/data/a.nca", "/data/p1.nc", "/data/p2.nc"}));
}

TEST(DrawsOnRemoteObjects, OnlyAFilePartitionAtAUrlCounts) {
    agg::DatasetCache cache;
    // A missing partition is never fetched, wherever its path points.
    EXPECT_FALSE(agg::draws_on_remote_objects(
        dataset_over({"/data/p1.nc", "/data/p2.nc"}, "https://example.org/never.nc", cache)));
    Dataset remote = dataset_over({"/data/p1.nc", "https://example.org/p2.nc"}, "/data/never.nc", cache);
    EXPECT_TRUE(agg::draws_on_remote_objects(remote));
    EXPECT_TRUE(agg::draws_on_remote_objects(*remote.variables[0].source));
    EXPECT_EQ(agg::files_drawn_on(remote), (std::vector<std::string>{"/data/a.nca", "/data/p1.nc"}));
}
