#include "fs/remote_workers.hpp"

#include <limits>

namespace ncafs::fs {

void RemoteWorkers::start(size_t threads) {
    if (!pool_) pool_ = std::make_unique<WorkerPool>(threads, std::numeric_limits<size_t>::max());
}

bool RemoteWorkers::submit(std::function<void()> run, std::function<void()> drop) {
    return pool_ && pool_->post(std::move(run), std::move(drop));
}

void RemoteWorkers::stop() {
    if (pool_) pool_->stop();
}

}  // namespace ncafs::fs
