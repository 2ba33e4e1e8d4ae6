// Unit tests of the Landlock wrapper (fs/landlock.hpp) and the sandbox
// decision (fs/sandbox_policy.hpp). Each restriction happens in a forked
// child, which reports what the kernel allowed through its exit status, so
// the test process itself stays free. SKIPPED where the kernel has no Landlock.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "aggregation/model/units_conversion.hpp"
#include "codecs/error.hpp"
#include "fs/landlock.hpp"
#include "fs/options.hpp"
#include "fs/sandbox_policy.hpp"

namespace stdfs = std::filesystem;
using namespace ncafs::fs;

namespace {

struct TempDir {
    stdfs::path path;
    TempDir() {
        char tmpl[] = "/tmp/ncafs-landlock-XXXXXX";
        path = ::mkdtemp(tmpl);
        stdfs::create_directories(path / "inside");
        stdfs::create_directories(path / "outside");
        std::ofstream(path / "inside" / "a.txt") << "in";
        std::ofstream(path / "outside" / "b.txt") << "out";
    }
    ~TempDir() { stdfs::remove_all(path); }
};

// Runs check in a forked child; returns its exit status (0: every expectation held).
int in_child(const std::function<int()>& check) {
    pid_t child = ::fork();
    if (child == 0) {
        int status = 99;
        try {
            status = check();
        } catch (const std::exception&) {
            status = 98;
        }
        ::_exit(status);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 97;
}

// The errno of opening path with flags (0 when it opened).
int open_error(const stdfs::path& path, int flags) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
}

#define REQUIRE_LANDLOCK() \
    if (landlock_abi() == 0) GTEST_SKIP() << "SKIPPED: the kernel has no Landlock"

}  // namespace

TEST(Landlock, ReadBeneathARuleNothingElse) {
    REQUIRE_LANDLOCK();
    TempDir t;
    const int outside_fd = ::open((t.path / "outside" / "b.txt").c_str(), O_RDONLY | O_CLOEXEC);  // before
    ASSERT_GE(outside_fd, 0);
    EXPECT_EQ(in_child([&] {
                  LandlockRules rules;
                  if (!rules.allow((t.path / "inside").string(), Access::Read)) return 1;
                  rules.restrict_self();
                  if (open_error(t.path / "inside" / "a.txt", O_RDONLY) != 0) return 2;
                  if (open_error(t.path / "outside" / "b.txt", O_RDONLY) != EACCES) return 3;
                  if (open_error(t.path / "inside" / "a.txt", O_WRONLY) != EACCES) return 4;
                  if (open_error(t.path / "inside" / "new.txt", O_WRONLY | O_CREAT) != EACCES) return 5;
                  if (open_error("/etc/passwd", O_RDONLY) != EACCES) return 6;
                  char byte;  // a descriptor opened before still reads ...
                  if (::pread(outside_fd, &byte, 1, 0) != 1) return 7;
                  // ... but reopening it by /proc/self/fd/N is an open like any other
                  if (open_error("/proc/self/fd/" + std::to_string(outside_fd), O_RDONLY) != EACCES) return 8;
                  return 0;
              }),
              0);
    ::close(outside_fd);
}

TEST(Landlock, ReadWriteCreatesAndRenamesButMakesNoLinks) {
    REQUIRE_LANDLOCK();
    TempDir t;
    stdfs::create_directories(t.path / "inside" / "sub");
    EXPECT_EQ(in_child([&] {
                  LandlockRules rules;
                  rules.allow((t.path / "inside").string(), Access::ReadWrite);
                  rules.restrict_self();
                  if (open_error(t.path / "inside" / "new.txt", O_WRONLY | O_CREAT) != 0) return 1;
                  // across folders: needs REFER, granted where the ABI has it
                  if (::rename((t.path / "inside" / "new.txt").c_str(), (t.path / "inside" / "sub" / "n").c_str()) != 0)
                      return 2;
                  if (::symlink("/etc/shadow", (t.path / "inside" / "link").c_str()) == 0 || errno != EACCES) return 3;
                  if (::mkfifo((t.path / "inside" / "fifo").c_str(), 0600) == 0 || errno != EACCES) return 4;
                  if (open_error(t.path / "outside" / "c.txt", O_WRONLY | O_CREAT) != EACCES) return 5;
                  return 0;
              }),
              0);
}

TEST(Landlock, RuleOnAFileAllowsThatFileOnly) {
    REQUIRE_LANDLOCK();
    TempDir t;
    std::ofstream(t.path / "outside" / "sibling.txt") << "s";
    EXPECT_EQ(in_child([&] {
                  LandlockRules rules;
                  if (!rules.allow((t.path / "outside" / "b.txt").string(), Access::Read)) return 1;
                  if (rules.allow((t.path / "missing").string(), Access::Read)) return 2;  // skipped
                  rules.restrict_self();
                  if (open_error(t.path / "outside" / "b.txt", O_RDONLY) != 0) return 3;
                  if (open_error(t.path / "outside" / "sibling.txt", O_RDONLY) != EACCES) return 4;
                  return 0;
              }),
              0);
}

TEST(Landlock, RefusesWhenAnotherThreadRuns) {
    REQUIRE_LANDLOCK();
    EXPECT_EQ(in_child([] {
                  int pipe_fds[2];
                  if (::pipe(pipe_fds) != 0) return 1;
                  std::thread waiter([&] {
                      char c;
                      (void)::read(pipe_fds[0], &c, 1);
                  });
                  int status = 2;
                  try {
                      LandlockRules().restrict_self();
                  } catch (const std::runtime_error& e) {
                      status = std::string(e.what()).find("threads") != std::string::npos ? 0 : 3;
                  }
                  (void)::write(pipe_fds[1], "x", 1);
                  waiter.join();
                  return status;
              }),
              0);
}

// What the libraries read after start works inside the mount's sandbox with
// no data root at all: UDUNITS-2's database, name resolution, the system's
// CA bundle; a private file still does not open.
TEST(SandboxPolicy, SystemFilesTheLibrariesNeed) {
    REQUIRE_LANDLOCK();
    EXPECT_EQ(in_child([] {
                  enter_sandbox(SandboxRoots{});
                  if (ncafs::agg::units_converter("km", "", "m", "").scale != 1000.0) return 1;
                  addrinfo* found = nullptr;
                  if (::getaddrinfo("localhost", "80", nullptr, &found) != 0) return 2;
                  ::freeaddrinfo(found);
                  if (stdfs::exists("/etc/ssl/certs/ca-certificates.crt") &&
                      open_error("/etc/ssl/certs/ca-certificates.crt", O_RDONLY) != 0)
                      return 3;
                  if (open_error("/etc/passwd", O_RDONLY) != EACCES) return 4;
                  if (stdfs::exists("/etc/ssl/private") && open_error("/etc/ssl/private", O_RDONLY) != EACCES) return 5;
                  if (open_error("/proc/self/environ", O_RDONLY) != EACCES) return 6;
                  return 0;
              }),
              0);
}

TEST(SandboxDecision, FollowsOptionKernelAndAllowOther) {
    EXPECT_EQ(decide_sandbox(false, true).kind, SandboxDecision::No);
    ::setenv("NCAFS_TEST_PRETEND_NO_LANDLOCK", "1", 1);
    EXPECT_EQ(landlock_abi(), 0);
    const SandboxDecision refused = decide_sandbox(true, true);
    EXPECT_EQ(refused.kind, SandboxDecision::Refuse);
    EXPECT_NE(refused.message.find("sandbox=off"), std::string::npos);
    EXPECT_EQ(decide_sandbox(true, false).kind, SandboxDecision::No);
    ::unsetenv("NCAFS_TEST_PRETEND_NO_LANDLOCK");
    if (landlock_abi() > 0) EXPECT_EQ(decide_sandbox(true, true).kind, SandboxDecision::Yes);
}

TEST(SandboxDecision, OptionParses) {
    ViewOptions options;
    EXPECT_TRUE(options.sandbox);
    EXPECT_TRUE(apply_view_option("sandbox=off", options));
    EXPECT_FALSE(options.sandbox);
    EXPECT_TRUE(apply_view_option("sandbox=on", options));
    EXPECT_TRUE(options.sandbox);
    EXPECT_THROW(apply_view_option("sandbox=maybe", options), ncafs::UsageError);
}
