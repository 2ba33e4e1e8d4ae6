// Overflow-checked arithmetic for sizes, offsets and indices computed from
// file content (every such number is hostile until checked). add/mul return
// nullopt on uint64_t overflow; the *_or_throw forms throw the caller's error
// (FormatError, AggregationError...) built by a callable given the reason, so
// each layer keeps its own message shape. (The CDF, ds and ncstream readers
// check their layouts with __builtin_*_overflow where they compute them.) fits_in(start, count, length) is the
// range test "start + count <= length" written so that it cannot wrap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codecs/error.hpp"

namespace ncafs::checked {

inline std::optional<uint64_t> add(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// True when [start, start + count) lies inside [0, length), without computing start + count.
inline bool fits_in(uint64_t start, uint64_t count, uint64_t length) { return count <= length && start <= length - count; }

// `fail(reason)` must throw; it receives e.g. "3 + 18446744073709551615 overflows 64 bits".
template <class Fail>
uint64_t add_or_throw(uint64_t a, uint64_t b, Fail&& fail) {
    if (auto r = add(a, b)) return *r;
    fail(std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
    throw Error("checked add: fail() returned");  // unreachable when fail throws
}

template <class Fail>
uint64_t mul_or_throw(uint64_t a, uint64_t b, Fail&& fail) {
    if (auto r = mul(a, b)) return *r;
    fail(std::to_string(a) + " * " + std::to_string(b) + " overflows 64 bits");
    throw Error("checked mul: fail() returned");
}

}  // namespace ncafs::checked
