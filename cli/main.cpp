// ncafs: mount (ncafs SOURCE MOUNTPOINT ...) and the subcommands export,
// inspect, check, aggregate and clear-dead-mount, each a run_X of cli/commands.hpp.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/netcdf_helpers.hpp"

namespace {

using Command = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);

struct NamedCommand {
    const char* name;
    Command run;
};

constexpr NamedCommand kCommands[] = {
    {"export", ncafs::cli::run_export},
    {"inspect", ncafs::cli::run_inspect},
    {"check", ncafs::cli::run_check},
    {"aggregate", ncafs::cli::run_aggregate},
    {"clear-dead-mount", ncafs::cli::run_clear_dead_mount},
};

int dispatch(const std::vector<std::string>& args) {
    if (!args.empty())
        for (const auto& command : kCommands)
            if (args[0] == command.name)
                return command.run({args.begin() + 1, args.end()}, std::cout, std::cerr);
    return ncafs::cli::run_mount(args, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
    // First, while this process is single-threaded: the zygote of the
    // processes that read netCDF-4/HDF5 files for it (netcdf_helpers.hpp).
    ncafs::netcdf::start_netcdf_helpers();
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        return dispatch(args);
    } catch (const ncafs::UsageError& e) {
        std::cerr << "ncafs: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "ncafs: " << e.what() << "\n";
        return 1;
    }
}
