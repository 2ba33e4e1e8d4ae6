// RemoteStore's private state, shared by the files that implement its
// members (remote_store.cpp: open; local_copy.cpp; probe.cpp).
#pragma once

#include <memory>
#include <string>

#include "remote/object_address.hpp"
#include "remote/remote_store.hpp"
#include "remote/store_core.hpp"

namespace ncafs::remote {

struct RemoteStore::Impl {
    std::shared_ptr<StoreCore> core;

    // Admitted by the access policy (or SourceError naming the rule) before
    // any credentials are attached.
    ObjectAddress address(const std::string& url) {
        const bool private_ok = core->config.access.admit(url, !core->config.s3_endpoint.empty());
        bool s3 = remote_scheme(url) == "s3";
        ObjectAddress a = address_of(url, core->config.s3_endpoint, core->config.s3_region,
                                     s3 ? core->credentials() : AwsCredentials{});
        a.private_ok = private_ok;
        return a;
    }
    // RemoteStore::open; with absent_ok, null for a 404.
    std::shared_ptr<const RemoteBytes> open(const std::string& url, bool absent_ok);
    std::shared_ptr<const RemoteBytes> open_online(const std::string& url, ObjectAddress address);
    std::shared_ptr<const RemoteBytes> open_offline(const std::string& url, ObjectAddress address,
                                                    const FetchError& why, bool fresh);
};

}  // namespace ncafs::remote
