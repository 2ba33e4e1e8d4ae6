// Whether the calling thread may send requests. A FUSE worker first tries
// to answer a read of a view drawing on remote objects from the caches
// alone, inside NetworkScope(false): a fetch it would need throws
// NetworkNeeded instead, and the read is handed to threads that may wait.
// Code that runs a read on threads of its own passes the setting on
// (network_allowed() before, NetworkScope in each thread).
#pragma once

#include <stdexcept>
#include <string>

namespace ncafs::remote {

// Deliberately not a SourceError: no layer may take it for a file's failure.
class NetworkNeeded : public std::runtime_error {
public:
    explicit NetworkNeeded(const std::string& url) : std::runtime_error(url + ": a request is needed") {}
};

bool network_allowed();

class NetworkScope {
public:
    explicit NetworkScope(bool allowed);
    ~NetworkScope();
    NetworkScope(const NetworkScope&) = delete;
    NetworkScope& operator=(const NetworkScope&) = delete;

private:
    bool before_;
};

}  // namespace ncafs::remote
