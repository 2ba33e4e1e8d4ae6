// Typed errors. Every message names the file (or JSON path) and the reason, so
// that the FUSE layer can log one useful line and return EIO. The format
// error (a byte offset in a file) is codecs/error.hpp's.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ncafs {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
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
