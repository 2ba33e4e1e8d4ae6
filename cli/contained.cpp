#include "cli/contained.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace ncafs::cli {

namespace {

// Yes: confine; No: go on with the warning (on err) unless sandbox=off was asked.
bool should_confine(bool wanted, std::ostream& err) {
    const fs::SandboxDecision decision = fs::decide_sandbox(wanted, false);
    if (decision.kind == fs::SandboxDecision::Yes) return true;
    if (wanted) err << "ncafs: warning: " << decision.message << "\n";
    return false;
}

bool write_all(int fd, const std::string& text) {
    for (size_t done = 0; done < text.size();) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

std::string read_all(int fd) {
    std::string text;
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return text;
        text.append(buffer, static_cast<size_t>(n));
    }
}

// In the child: confine, work, send "size of out" + out + err to the parent, exit.
[[noreturn]] void confined_child(const fs::SandboxRoots& roots, const ConfinedWork& work, int pipe_out) {
    std::ostringstream out, err;
    int status = 1;
    try {
        fs::enter_sandbox(roots);
        status = work(out, err);
    } catch (const std::exception& e) {
        err << "ncafs: " << e.what() << "\n";
    }
    const std::string text = out.str();
    const uint64_t size = text.size();
    write_all(pipe_out, std::string(reinterpret_cast<const char*>(&size), sizeof size) + text + err.str());
    ::_exit(status);
}

}  // namespace

std::string folder_of(const std::string& file) {
    std::error_code ec;
    auto folder = std::filesystem::absolute(file, ec).parent_path();
    auto canonical = std::filesystem::weakly_canonical(folder, ec);
    return (ec ? folder : canonical).string();
}

int run_confined(const fs::SandboxRoots& roots, bool wanted, std::ostream& out, std::ostream& err,
                 const ConfinedWork& work) {
    if (!should_confine(wanted, err)) return work(out, err);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::cout.flush();
    std::cerr.flush();
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipe_fds[0]);
        confined_child(roots, work, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    if (child < 0) {
        ::close(pipe_fds[0]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    const std::string text = read_all(pipe_fds[0]);
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return 1;
    uint64_t out_size = 0;
    if (text.size() >= sizeof out_size) std::memcpy(&out_size, text.data(), sizeof out_size);
    const std::string body = text.size() >= sizeof out_size ? text.substr(sizeof out_size) : std::string();
    out << body.substr(0, std::min<uint64_t>(out_size, body.size()));
    err << body.substr(std::min<uint64_t>(out_size, body.size()));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace ncafs::cli
