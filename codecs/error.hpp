// Typed errors. Every message names the file (or JSON path) and the reason, so
// that the FUSE layer can log one useful line and return EIO.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ncafs {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

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

// Data that cannot be produced: missing, unreadable or changed files: "FILE: REASON".
class SourceError : public Error {
public:
    SourceError(const std::string& file, const std::string& reason) : Error(file + ": " + reason), file_(file) {}
    const std::string& file() const { return file_; }

private:
    std::string file_;
};

// A request the caller got wrong (hyperslab outside the array, bad option...).
class UsageError : public Error {
public:
    using Error::Error;
};

}  // namespace ncafs
