// ncafs: mount (ncafs SOURCE MOUNTPOINT ...) and the subcommands export,
// inspect and check.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "codecs/error.hpp"
#include "fs/export_command.hpp"
#include "fs/mount.hpp"
#include "fs/options.hpp"

#if __has_include("aggregation/commands.hpp")
#include "aggregation/commands.hpp"
#define NCAFS_HAVE_COMMANDS 1
#else
#define NCAFS_HAVE_COMMANDS 0
#endif

int main(int argc, char** argv) {
    const char* program = "ncafs";
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (!args.empty() && args[0] == "export")
            return ncafs::fs::export_command({args.begin() + 1, args.end()}, program);
        if (!args.empty() && (args[0] == "inspect" || args[0] == "check")) {
#if NCAFS_HAVE_COMMANDS
            std::vector<std::string> rest(args.begin() + 1, args.end());
            return args[0] == "inspect" ? ncafs::inspect_command(rest, std::cout, std::cerr)
                                        : ncafs::check_command(rest, std::cout, std::cerr);
#else
            std::fprintf(stderr, "%s: %s is not available in this build\n", program, args[0].c_str());
            return 2;
#endif
        }
        auto options = ncafs::fs::parse_mount_command_line(args);
        if (options.show_help) {
            std::fputs(ncafs::fs::usage_text(program).c_str(), stdout);
            return 0;
        }
        if (options.show_version) {
            std::fputs(ncafs::fs::version_text().c_str(), stdout);
            return 0;
        }
        return ncafs::fs::run_mount(options, program);
    } catch (const ncafs::UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 1;
    }
}
