// ncafs: mount (ncafs SOURCE MOUNTPOINT ...) and the subcommands export,
// inspect, check and aggregate.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "aggregation/aggregate_command.hpp"
#include "aggregation/commands.hpp"
#include "codecs/error.hpp"
#include "fs/export_command.hpp"
#include "fs/mount.hpp"
#include "fs/options.hpp"

int main(int argc, char** argv) {
    const char* program = "ncafs";
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (!args.empty() && args[0] == "export")
            return ncafs::fs::export_command({args.begin() + 1, args.end()}, program);
        if (!args.empty()) {
            std::vector<std::string> rest(args.begin() + 1, args.end());
            if (args[0] == "inspect") return ncafs::inspect_command(rest, std::cout, std::cerr);
            if (args[0] == "check") return ncafs::check_command(rest, std::cout, std::cerr);
            if (args[0] == "aggregate") return ncafs::aggregate_command(rest, std::cout, std::cerr);
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
