#include "remote/network_scope.hpp"

namespace ncafs::remote {
namespace {
thread_local bool allowed_here = true;
}

bool network_allowed() { return allowed_here; }

NetworkScope::NetworkScope(bool allowed) : before_(allowed_here) { allowed_here = allowed; }

NetworkScope::~NetworkScope() { allowed_here = before_; }

}  // namespace ncafs::remote
