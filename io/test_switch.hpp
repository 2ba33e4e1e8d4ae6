// Test-only switches of the form NCAFS_TEST_..._MS=N (tests/README.md): the
// milliseconds a variable gives, read when asked; nullopt when it is unset
// or anything but 1 to 9 decimal digits.
#pragma once

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace ncafs {

inline std::optional<std::chrono::milliseconds> test_milliseconds(const char* variable) {
    const char* v = std::getenv(variable);
    const size_t n = v ? std::strlen(v) : 0;
    if (n == 0 || n > 9 || std::strspn(v, "0123456789") != n) return std::nullopt;
    return std::chrono::milliseconds(std::atol(v));
}

}  // namespace ncafs
