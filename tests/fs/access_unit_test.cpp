// Unit tests of access on behalf of the caller (fs/caller_access). The
// credential tests need root (they switch to other users); they say SKIPPED
// otherwise.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

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
