#include "fs/landlock.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

// Rights of ABIs newer than the build machine's header (values from the
// kernel's uapi; each is only handled when the running kernel reports it).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

namespace ncafs::fs {

namespace {

constexpr uint64_t kReadFile = LANDLOCK_ACCESS_FS_READ_FILE;
constexpr uint64_t kRead = kReadFile | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kWrite = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                            LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                            LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE;
// The rights a rule on a file (not a folder) may carry.
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | kReadFile |
                                 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;

// Every file-system right the kernel's ABI knows: ABI 1 has bits 0-12,
// 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV (4, 6 and 7 add none).
uint64_t handled_rights(int abi) {
    uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return rights;
}

uint64_t rights_of(Access access) {
    switch (access) {
        case Access::Read: return kRead;
        case Access::ReadExecute: return kRead | LANDLOCK_ACCESS_FS_EXECUTE;
        case Access::ReadWrite: return kRead | kWrite;
        case Access::Device: return kReadFile | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
    }
    return 0;
}

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("Landlock: " + what + ": " + std::strerror(errno));
}

size_t thread_count() {
    DIR* tasks = ::opendir("/proc/self/task");
    if (!tasks) return 0;  // no /proc: cannot tell
    size_t n = 0;
    while (const dirent* e = ::readdir(tasks))
        if (e->d_name[0] != '.') ++n;
    ::closedir(tasks);
    return n;
}

}  // namespace

int landlock_abi() {
    if (const char* pretend = std::getenv("NCAFS_TEST_PRETEND_NO_LANDLOCK"); pretend && std::strcmp(pretend, "1") == 0)
        return 0;
    long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? static_cast<int>(abi) : 0;
}

LandlockRules::~LandlockRules() {
    for (const Rule& r : rules_) ::close(r.fd);
}

bool LandlockRules::allow(const std::string& path, Access access) {
    int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return false;
    }
    const bool folder = S_ISDIR(st.st_mode);
    rules_.push_back(Rule{fd, folder ? rights_of(access) : rights_of(access) & kFileRights});
    return true;
}

void LandlockRules::restrict_self() const {
    if (size_t threads = thread_count(); threads > 1)
        throw std::runtime_error("Landlock: " + std::to_string(threads) +
                                 " threads already run; they would stay unrestricted");
    const int abi = landlock_abi();
    if (abi <= 0) throw std::runtime_error("Landlock: the kernel has none");
    const uint64_t handled = handled_rights(abi);
    landlock_ruleset_attr attr {};
    attr.handled_access_fs = handled;  // nothing else: network and scopes stay free
    const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
    if (ruleset < 0) fail("landlock_create_ruleset");
    for (const Rule& r : rules_) {
        landlock_path_beneath_attr rule {};
        rule.allowed_access = r.rights & handled;
        rule.parent_fd = r.fd;
        if (rule.allowed_access == 0) continue;
        if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
            ::close(ruleset);
            fail("landlock_add_rule");
        }
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        ::close(ruleset);
        fail("prctl(PR_SET_NO_NEW_PRIVS)");
    }
    if (::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        ::close(ruleset);
        fail("landlock_restrict_self");
    }
    ::close(ruleset);
}

}  // namespace ncafs::fs
