// A SourceError caused by a failed system call, carrying its errno: callers
// that must tell a failure that may pass (EMFILE, ENFILE, ENOMEM...) from one
// that will not read the number, never the message's text.
#pragma once

#include <exception>
#include <string>

#include "io/error.hpp"

namespace ncafs {

class SystemCallError : public SourceError {
public:
    SystemCallError(const std::string& file, const std::string& reason, int error_number)
        : SourceError(file, reason), error_number_(error_number) {}
    int error_number() const { return error_number_; }

private:
    int error_number_;
};

// A SourceError for `file` with `reason`: a SystemCallError when error_number is not 0.
[[noreturn]] inline void throw_source_error(const std::string& file, const std::string& reason, int error_number) {
    if (error_number != 0) throw SystemCallError(file, reason, error_number);
    throw SourceError(file, reason);
}

}  // namespace ncafs
