// `ncafs SOURCE MOUNTPOINT ...`: the mount's command line (help, version,
// options); the mount itself is fs/mount.cpp.
#include "cli/commands.hpp"

#include "fs/mount.hpp"
#include "fs/options.hpp"

namespace ncafs::cli {

int run_mount(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
    auto options = fs::parse_mount_command_line(args);
    if (options.show_help) {
        out << fs::usage_text("ncafs");
        return 0;
    }
    if (options.show_version) {
        out << fs::version_text();
        return 0;
    }
    out.flush();
    // FUSE reports its own errors on the process's standard error.
    return fs::run_mount(options, "ncafs");
}

}  // namespace ncafs::cli
