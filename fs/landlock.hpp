// Landlock (Linux 5.13+): a process restricts its own file access; the kernel
// then refuses every open outside the rules, whoever makes it (our code,
// netcdf-c, HDF5, libcurl). Three system calls, no library. Only the calling
// thread and the threads and processes it creates afterwards are restricted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncafs::fs {

// The Landlock ABI version the kernel reports, 0 when it has none (or when
// the test-only environment switch NCAFS_TEST_PRETEND_NO_LANDLOCK=1 is set).
int landlock_abi();

enum class Access {
    Read,         // read files, list folders
    ReadExecute,  // also map files executable (dlopen of plugins, NSS modules)
    ReadWrite,    // also create, write, truncate, rename and remove (no links, devices, FIFOs)
    Device,       // read, write and ioctl of one device file (/dev/null, /dev/fuse)
};

class LandlockRules {
public:
    LandlockRules() = default;
    LandlockRules(const LandlockRules&) = delete;
    LandlockRules& operator=(const LandlockRules&) = delete;
    ~LandlockRules();

    // Allows access beneath path (a folder) or to path (a file; folder rights
    // dropped). A path that does not exist is skipped: returns false.
    bool allow(const std::string& path, Access access);

    // Restricts the calling thread and all it starts later to the rules,
    // handling every file-system right of the kernel's ABI (PR_SET_NO_NEW_PRIVS
    // first). Throws std::runtime_error when the process runs more than one
    // thread (those would stay free) or a system call fails; needs landlock_abi() > 0.
    void restrict_self() const;

private:
    struct Rule {
        int fd;           // O_PATH, open until destruction
        uint64_t rights;  // before masking by the ABI
    };
    std::vector<Rule> rules_;
};

}  // namespace ncafs::fs
