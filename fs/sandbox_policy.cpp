#include "fs/sandbox_policy.hpp"


#include <cstdlib>
#include <filesystem>

#include "fs/landlock.hpp"

namespace ncafs::fs {

namespace {

// System folders and files the libraries read after start (missing ones are
// skipped). Never /etc/ssl or /proc as a whole: private keys, other
// processes' environments and our own memory live there.
constexpr const char* kSystemRead[] = {
    // TLS (libcurl with OpenSSL or GnuTLS): CA certificates and configuration
    "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
    "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/etc/gnutls",
    // UDUNITS-2 unit database (unit conversion of CF aggregations)
    "/usr/share/xml/udunits", "/usr/share/udunits",
    // name resolution of remote hosts (getaddrinfo and its NSS configuration)
    "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/services",
    "/etc/protocols",
    // dynamic loader cache, locale and time-zone data, CPU count (glibc)
    "/etc/ld.so.cache", "/usr/share/locale", "/usr/share/zoneinfo", "/etc/localtime", "/sys/devices/system/cpu",
};

// Shared libraries loaded after start (dlopen of NSS modules, gconv modules,
// HDF5 filter plugins and the libraries these depend on): read and map executable.
constexpr const char* kSystemLibraries[] = {"/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/local/lib",
                                            "/usr/local/hdf5/lib/plugin"};

constexpr const char* kDevices[] = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/fuse"};

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

void allow_each_of(LandlockRules& rules, const std::string& list, char separator, Access access) {
    size_t begin = 0;
    while (begin <= list.size()) {
        size_t end = list.find(separator, begin);
        if (end == std::string::npos) end = list.size();
        if (end > begin) rules.allow(list.substr(begin, end - begin), access);
        begin = end + 1;
    }
}

// Files named by the environment that libraries read lazily: TLS overrides
// and the UDUNITS-2 database's folder. Not the AWS credentials and
// configuration: those are read before the sandbox (agg::configure_remote_objects).
void allow_environment_files(LandlockRules& rules) {
    for (const char* var : {"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE"}) rules.allow(env(var), Access::Read);
    if (std::string xml = env("UDUNITS2_XML_PATH"); !xml.empty())
        rules.allow(std::filesystem::path(xml).parent_path().string(), Access::Read);
}

void allow_system_files(LandlockRules& rules) {
    for (const char* path : kSystemRead) rules.allow(path, Access::Read);
    for (const char* path : kSystemLibraries) rules.allow(path, Access::ReadExecute);
    for (const char* path : kDevices) rules.allow(path, Access::Device);
    allow_each_of(rules, env("HDF5_PLUGIN_PATH"), ':', Access::ReadExecute);
    allow_environment_files(rules);
}

}  // namespace

void enter_sandbox(const SandboxRoots& roots) {
    LandlockRules rules;
    for (const auto& r : roots.read) rules.allow(r, Access::Read);
    for (const auto& r : roots.read_executable) rules.allow(r, Access::ReadExecute);
    for (const auto& f : roots.write_files) rules.allow(f, Access::ReadWrite);
    if (!roots.remote.cache_dir.empty()) rules.allow(roots.remote.cache_dir, Access::ReadWrite);
    if (!roots.remote.ca_file.empty()) rules.allow(roots.remote.ca_file, Access::Read);
    allow_system_files(rules);
    rules.restrict_self();
}

SandboxDecision decide_sandbox(bool wanted, bool allow_other) {
    if (!wanted)
        return {SandboxDecision::No, "sandbox=off: the kernel does not confine file access; with allow_other any "
                                     "file the daemon's user can read may reach a caller through a crafted dataset"};
    if (landlock_abi() > 0) return {SandboxDecision::Yes, ""};
    if (allow_other)
        return {SandboxDecision::Refuse, "the kernel has no Landlock (Linux 5.13+, enabled in the LSM list; or a "
                                         "system-call filter hides it): refusing to serve with allow_other without "
                                         "the sandbox; -o sandbox=off overrides"};
    return {SandboxDecision::No, "the kernel has no Landlock: file access is not confined by the kernel"};
}

}  // namespace ncafs::fs
