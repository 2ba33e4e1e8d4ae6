// Readiness and shutdown notification to the service manager: the sd_notify
// protocol, so that a systemd unit of Type=notify (packaging/ncafs@.service)
// knows when the mount is usable and when the daemon is stopping.
//
// Implemented with an AF_UNIX datagram socket of our own instead of libsystemd, so
// that the daemon has no systemd dependency: libfuse 3.14 has no such call.
#pragma once

#include <string_view>

namespace ncafs {

// Sends STATE ("READY=1", "STOPPING=1", "STATUS=text", several of them joined
// by '\n') as one datagram to the socket named by $NOTIFY_SOCKET: an absolute
// path, or "@name" for a socket in the abstract namespace.
//
// Returns true when the datagram was sent. Returns false, doing nothing, when
// NOTIFY_SOCKET is unset or empty (not started by a service manager) and when
// the address is unusable or sending fails: the daemon keeps serving either
// way, a missing manager is not an error of the file system.
//
// Allocates nothing and takes no lock (socket, sendmsg, close), so it may be
// called from any thread. Call it from the main process, not from a forked
// child: with NotifyAccess=main systemd only accepts the main PID.
bool notify_service(std::string_view state);

}  // namespace ncafs
