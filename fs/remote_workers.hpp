// Threads of the mount's own for the requests that wait on remote servers
// (opens and reads of views drawing on remote objects): a FUSE worker hands
// such a request over and is free at once, and the request is answered
// (fuse_reply_*) from here, which libfuse allows from any thread. So however
// many remote reads wait, and for however long, listings, local files and
// cached views are answered by FUSE's own workers. A WorkerPool of its own
// (io/worker_pool.hpp), apart from the shared one that reads use: its
// jobs wait on servers for long. The queue is not bounded: the kernel
// bounds how many requests are outstanding; every request queued is
// answered, by its job or, once stopping, by its drop.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "io/worker_pool.hpp"

namespace ncafs::fs {

class RemoteWorkers {
public:
    static constexpr size_t kThreads = 32;

    RemoteWorkers() = default;
    ~RemoteWorkers() { stop(); }
    RemoteWorkers(const RemoteWorkers&) = delete;
    RemoteWorkers& operator=(const RemoteWorkers&) = delete;

    // Allows submissions (after fuse_daemonize: threads do not survive a
    // fork; they start at the first request). Not concurrent with submit.
    void start(size_t threads = kThreads);
    // Queues run; drop answers the request instead when the workers stop
    // before running it. False (nothing queued) when not started or stopping.
    bool submit(std::function<void()> run, std::function<void()> drop);
    // Lets the jobs running finish (remote fetches are cancelled first by
    // the caller), drops the queued ones, joins the threads.
    void stop();

private:
    std::unique_ptr<WorkerPool> pool_;
};

}  // namespace ncafs::fs
