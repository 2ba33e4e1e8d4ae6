#include "fs/mount.hpp"

#include "aggregation/read/remote_objects.hpp"
#include "fs/backend.hpp"
#include "fs/catalog.hpp"
#include "fs/dead_mount.hpp"
#include "fs/filesystem.hpp"
#include "fs/log.hpp"
#include "fs/mount_options.hpp"
#include "fs/mount_sandbox.hpp"
#include "fs/service_notify.hpp"
#include "fs/stop_deadline.hpp"
#include "io/confined_open.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ncafs::fs {

namespace {

// The FUSE loop, until a signal or the kernel's unmount ends the session.
int serve(fuse_session* session, bool single_thread) {
    if (single_thread) return fuse_session_loop(session);
    fuse_loop_config* config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 64);
    fuse_loop_cfg_set_idle_threads(config, 16);
    const int loop = fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
    return loop;
}

}  // namespace

int run_mount(const MountOptions& options, const char* program) {
    log_to_stderr(options.debug);
    const SandboxDecision sandbox = decide_sandbox(options.view.sandbox, options.allow_other);
    if (sandbox.kind == SandboxDecision::Refuse) {
        std::fprintf(stderr, "%s: %s\n", program, sandbox.message.c_str());
        return 2;
    }

    std::string joined = fuse_option_list(options);

    std::vector<std::string> arg_strings = {program, "-o", joined};
    if (options.debug) arg_strings.push_back("-d");
    std::vector<char*> argv;
    for (auto& a : arg_strings) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

    agg::RemoteConfig remote = options.view.remote;
    remote.log = [](const std::string& key, const std::string& line) { log_rate_limited(LogLevel::Error, line, key); };
    agg::configure_remote_objects(remote);  // opened lazily, after daemonizing
    const char* rule = "the mount reads partitions beneath SOURCE and the allow_root= folders only";
    Catalog catalog(options.source, options.view, make_backend(options.view, {options.source}, rule));
    Filesystem filesystem(catalog, options.allow_other);

    fuse_session* session = fuse_session_new(&args, &Filesystem::operations(), sizeof(fuse_lowlevel_ops), &filesystem);
    if (!session) {
        std::fprintf(stderr, "%s: cannot create the FUSE session (options: %s)\n", program, joined.c_str());
        return 1;
    }
    int status = 1;
    if (fuse_set_signal_handlers(session) != 0) {
        std::fprintf(stderr, "%s: cannot install signal handlers\n", program);
    } else {
        std::signal(SIGHUP, SIG_IGN);  // the service stays up (libfuse's handler would end the loop)
        if (fuse_session_mount(session, options.mountpoint.c_str()) != 0) {
            std::fprintf(stderr, "%s: cannot mount %s at %s\n", program, options.source.c_str(),
                         options.mountpoint.c_str());
        } else {
            // No open of a file may enter the mount itself (its own device; read before the sandbox closes /proc).
            if (auto mounted = mount_at(options.mountpoint)) refuse_own_mount(options.mountpoint, mounted->device);
            // Daemonize only now: a failed mount above has reached the caller.
            fuse_daemonize(options.foreground ? 1 : 0);
            if (!options.foreground) log_to_syslog(options.debug);
            MountSandbox contained(options, sandbox);  // before any thread starts: all inherit it
            if (!contained.ok()) {
                contained.unmount();
                fuse_session_unmount(session);
                fuse_remove_signal_handlers(session);
                fuse_session_destroy(session);
                fuse_opt_free_args(&args);
                return 1;
            }
            log_line(LogLevel::Info, "serving " + options.source + " at " + options.mountpoint + contained.summary());
            filesystem.start(session);
            ncafs::notify_service("READY=1\nSTATUS=serving " + options.source + " at " + options.mountpoint);
            int loop;
            {
                StopDeadline deadline(session, [&] {
                    contained.unmount();
                    fuse_session_unmount(session);
                    log_line(LogLevel::Info, "unmounted " + options.mountpoint);
                });
                loop = serve(session, options.single_thread);
                ncafs::notify_service("STOPPING=1\nSTATUS=unmounting " + options.mountpoint);
                filesystem.stop();
                deadline.claim_unmount();
            }
            status = loop < 0 ? 1 : 0;  // >0: ended by a signal, a clean exit
            // Unmounted, every request answered: what the catalog holds (up to
            // max_metadata_mem= and cache_mem=) is the kernel's to free. Freed
            // object by object it took over 30 s under AddressSanitizer (a
            // dataset of 10^5 variables). The helpers see their sockets close.
            std::fflush(nullptr);
            std::_Exit(status);
        }
        fuse_remove_signal_handlers(session);
    }
    fuse_session_destroy(session);
    fuse_opt_free_args(&args);
    return status;
}

}  // namespace ncafs::fs
