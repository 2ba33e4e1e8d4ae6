// Temporary test driver until the FUSE helper's ncafs binary wires the
// commands: ncafs_aggregation_driver inspect|check ARGS...
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: " << argv[0] << " inspect|check ARGS...\n";
        return 2;
    }
    std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd == "inspect") return ncafs::cli::run_inspect(args, std::cout, std::cerr);
    if (cmd == "check") return ncafs::cli::run_check(args, std::cout, std::cerr);
    std::cerr << "unknown command " << cmd << "\n";
    return 2;
}
