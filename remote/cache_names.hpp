// Names of the disk cache's files that no one outside can predict: an
// HMAC-SHA-256, keyed with a per-cache secret, of what the file holds (kind,
// URL + version, block index). The secret (32 random bytes from getrandom)
// lives in DIR/secret (0600, created O_EXCL by publishing it from tmp/ with
// RENAME_NOREPLACE, so two mounts sharing the folder agree on one).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "remote/cache_folder.hpp"

namespace ncafs::remote {

class CacheNames {
public:
    using Secret = std::array<unsigned char, 32>;
    // Reads DIR/secret; when it is missing or not 32 bytes of a regular file
    // of ours (a cache written before names were keyed, or damaged), calls
    // clear() (every cached file is then unreachable anyway), writes a new
    // secret and logs it. Throws SourceError when no secret can be kept.
    CacheNames(const CacheFolder& folder, const std::function<void()>& clear);

    // 64 hex digits.
    std::string name(std::string_view kind, std::string_view key, uint64_t index = 0) const;

private:
    Secret secret_{};
};

}  // namespace ncafs::remote
