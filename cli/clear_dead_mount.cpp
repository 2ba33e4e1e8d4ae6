// `ncafs clear-dead-mount SOURCE MOUNTPOINT`: what ncafs@.service runs after
// its daemon stopped (ExecStopPost=), to clear the mount a killed daemon left,
// and nothing else: not another instance's mount, not a live one.
#include <filesystem>

#include "cli/commands.hpp"
#include "codecs/error.hpp"
#include "fs/dead_mount.hpp"

namespace ncafs::cli {

int run_clear_dead_mount(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
    if (args.size() != 2) throw UsageError("clear-dead-mount: expected SOURCE MOUNTPOINT");
    std::error_code ec;
    const auto source = std::filesystem::canonical(args[0], ec);
    if (ec) throw UsageError("clear-dead-mount: SOURCE " + args[0] + ": " + ec.message());
    if (fs::clear_dead_ncafs_mount(args[1], source.string()))
        out << "ncafs: cleared the dead mount of " << source.string() << " at " << args[1] << "\n";
    return 0;
}

}  // namespace ncafs::cli
