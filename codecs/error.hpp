// The error of bytes that violate their file's format; the other typed
// errors are io/error.hpp's.
#pragma once

#include <cstdint>
#include <string>

#include "io/error.hpp"

namespace ncafs {

// Bytes of a file that violate its format: "FILE: at byte N: REASON".
class FormatError : public Error {
public:
    FormatError(const std::string& file, uint64_t offset, const std::string& reason)
        : Error(file + ": at byte " + std::to_string(offset) + ": " + reason), file_(file), offset_(offset) {}
    const std::string& file() const { return file_; }
    uint64_t offset() const { return offset_; }

private:
    std::string file_;
    uint64_t offset_;
};

}  // namespace ncafs
