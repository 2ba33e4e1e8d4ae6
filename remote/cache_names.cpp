#include "remote/cache_names.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>

#include <cstring>

#include "io/error.hpp"

namespace ncafs::remote {
namespace {

constexpr const char* kSecretName = "secret";

enum class Found { Secret, Nothing, Damaged };

// Nothing: no file there (open_file removes a link or other odd file it
// finds and says so), so nothing to remove: another process may publish
// its secret meanwhile, and removing that would split the cache in two.
Found read_secret(const CacheFolder& folder, CacheNames::Secret& secret) {
    struct stat st {};
    UniqueFd fd = folder.open_file(folder.root(), kSecretName, st);
    if (!fd) return ::fstatat(folder.root(), kSecretName, &st, AT_SYMLINK_NOFOLLOW) == 0 ? Found::Damaged : Found::Nothing;
    if (st.st_size != static_cast<off_t>(secret.size()) ||
        ::pread(fd.get(), secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size()))
        return Found::Damaged;
    return Found::Secret;
}

CacheNames::Secret random_secret(const std::string& dir) {
    CacheNames::Secret secret{};
    for (size_t got = 0; got < secret.size();) {
        ssize_t n = ::getrandom(secret.data() + got, secret.size() - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw SourceError(dir, std::string("getrandom failed: ") + std::strerror(errno));
        got += static_cast<size_t>(n);
    }
    return secret;
}

// False when another process published its secret first (then read theirs).
bool publish_secret(const CacheFolder& folder, const CacheNames::Secret& secret) {
    TempFile temp = folder.create_temp();
    if (::pwrite(temp.fd.get(), secret.data(), secret.size(), 0) != static_cast<ssize_t>(secret.size()) ||
        ::fsync(temp.fd.get()) != 0) {
        folder.discard(temp);
        throw SourceError(folder.dir(), std::string("cannot write the cache's secret: ") + std::strerror(errno));
    }
    return folder.publish_new(temp, folder.root(), kSecretName);
}

}  // namespace

CacheNames::CacheNames(const CacheFolder& folder, const std::function<void()>& clear) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        const Found found = read_secret(folder, secret_);
        if (found == Found::Secret) return;
        if (found == Found::Damaged) folder.remove(folder.root(), kSecretName);
        clear();
        Secret fresh = random_secret(folder.dir());
        if (publish_secret(folder, fresh)) {
            secret_ = fresh;
            return;
        }
    }
    throw SourceError(folder.dir(), "cannot keep a secret for the cache's names (secret keeps changing)");
}

std::string CacheNames::name(std::string_view kind, std::string_view key, uint64_t index) const {
    std::string message(kind);
    message += '\0';
    message += key;
    message += '\0';
    message += std::to_string(index);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) out += {kHex[digest[i] >> 4], kHex[digest[i] & 15]};
    return out;
}

}  // namespace ncafs::remote
