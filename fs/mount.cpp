#include "fs/mount.hpp"

#include "fs/backend.hpp"
#include "fs/catalog.hpp"
#include "fs/filesystem.hpp"
#include "fs/log.hpp"
#include "fs/mount_options.hpp"
#include "fs/service_notify.hpp"
#include "remote/remote_store.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace ncafs::fs {

int run_mount(const MountOptions& options, const char* program) {
    log_to_stderr(options.debug);

    std::string joined = fuse_option_list(options);

    std::vector<std::string> arg_strings = {program, "-o", joined};
    if (options.debug) arg_strings.push_back("-d");
    std::vector<char*> argv;
    for (auto& a : arg_strings) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

    remote::RemoteConfig remote = options.view.remote;
    remote.log = [](const std::string& key, const std::string& line) { log_rate_limited(LogLevel::Error, line, key); };
    remote::RemoteStore::configure_shared(remote);  // opened lazily, after daemonizing
    Catalog catalog(options.source, options.view, make_backend(options.view, {options.source}));
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
        if (fuse_session_mount(session, options.mountpoint.c_str()) != 0) {
            std::fprintf(stderr, "%s: cannot mount %s at %s\n", program, options.source.c_str(),
                         options.mountpoint.c_str());
        } else {
            // Daemonize only now: a failed mount above has reached the caller.
            fuse_daemonize(options.foreground ? 1 : 0);
            if (!options.foreground) log_to_syslog(options.debug);
            log_line(LogLevel::Info, "serving " + options.source + " at " + options.mountpoint);
            filesystem.start(session);
            ncafs::notify_service("READY=1\nSTATUS=serving " + options.source + " at " + options.mountpoint);
            int loop;
            if (options.single_thread) {
                loop = fuse_session_loop(session);
            } else {
                fuse_loop_config* config = fuse_loop_cfg_create();
                fuse_loop_cfg_set_max_threads(config, 64);
                fuse_loop_cfg_set_idle_threads(config, 16);
                loop = fuse_session_loop_mt(session, config);
                fuse_loop_cfg_destroy(config);
            }
            ncafs::notify_service("STOPPING=1\nSTATUS=unmounting " + options.mountpoint);
            filesystem.stop();
            fuse_session_unmount(session);
            log_line(LogLevel::Info, "unmounted " + options.mountpoint);
            status = loop < 0 ? 1 : 0;  // >0: ended by a signal, a clean exit
        }
        fuse_remove_signal_handlers(session);
    }
    fuse_session_destroy(session);
    fuse_opt_free_args(&args);
    return status;
}

}  // namespace ncafs::fs
