// Daemon logging: stderr in the foreground (with the "<N>" priority prefixes
// of sd-daemon(3) when stderr is the journal), syslog once daemonized. Error
// lines about data (a bad partition) are rate-limited: an identical line (or
// one of the same key) is written at most once a minute, with a count of
// what was suppressed.
#pragma once

#include <string>

namespace ncafs::fs {

enum class LogLevel { Debug, Info, Warning, Error };

// Switches the destination; call use_syslog after fuse_daemonize.
void log_to_stderr(bool debug);
void log_to_syslog(bool debug);

// Messages quote file names and file content: a newline would forge a log
// line and a NUL would cut it short, so every line is written with its
// control bytes (< 0x20, 0x7f) as \xNN. Exposed for tests.
std::string escape_log_text(const std::string& message);

void log_line(LogLevel level, const std::string& message);
// Writes the line unless the same line was written less than a minute ago.
void log_rate_limited(LogLevel level, const std::string& message);
// Writes the line unless a line of the same key (a URL and a kind of error,
// say) was written less than a minute ago; the next line of the key says
// how many were suppressed meanwhile.
void log_rate_limited(LogLevel level, const std::string& message, const std::string& key);
// Writes the line only the first time this exact line is seen (bounded memory).
void log_once(LogLevel level, const std::string& message);

}  // namespace ncafs::fs
