#include "cli/contained.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include "fs/privileges.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

namespace {

// The file the child reads, in a page shared with the parent: the child may
// die at any instruction, so the name must be there before the reading.
struct SubjectPage {
    std::atomic<uint32_t> length{0};
    char text[4096 - sizeof(uint32_t)];
};
SubjectPage* child_subject = nullptr;  // set in the child only

SubjectPage* map_subject_page(const std::string& subject) {
    void* page = ::mmap(nullptr, sizeof(SubjectPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
    auto* p = new (page) SubjectPage;
    const size_t n = std::min(subject.size(), sizeof p->text);
    std::memcpy(p->text, subject.data(), n);
    p->length.store(static_cast<uint32_t>(n));
    return p;
}

// "FILE: the confined reader was killed by signal 11 (Segmentation fault)".
std::string death_message(const SubjectPage& page, int status) {
    const std::string file(page.text, std::min<size_t>(page.length.load(), sizeof page.text));
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "ncafs: " + file + ": the confined reader of this file was killed by signal " + std::to_string(sig) + " (" +
           (name ? name : "unknown") + ")" + (WCOREDUMP(status) ? ", core dumped" : "") +
           ": nothing it had found is reported\n";
}

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
        fs::drop_privileges(fs::PrivilegeRole::Command);  // parsing FILE cannot reach root's powers either
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

std::string subject_of(const std::vector<std::string>& files) {
    std::string text;
    for (const auto& f : files) text += (text.empty() ? "" : ", ") + f;
    return text;
}

void name_confined_subject(const std::string& file) {
    if (!child_subject) return;
    const size_t n = std::min(file.size(), sizeof child_subject->text);
    child_subject->length.store(0);
    std::memcpy(child_subject->text, file.data(), n);
    child_subject->length.store(static_cast<uint32_t>(n));
    // Test-only: a reader that crashes on the file named, as a parser bug would.
    if (const char* crash = std::getenv("NCAFS_TEST_CRASH_ON"); crash && *crash &&
        std::filesystem::path(file).filename() == crash)
        ::raise(SIGSEGV);
}

int run_confined(const fs::SandboxRoots& roots, bool wanted, std::ostream& out, std::ostream& err,
                 const std::string& subject, const ConfinedWork& work) {
    if (!should_confine(wanted, err)) return work(out, err);
    remote::RemoteStore::load_shared_credentials();  // their files stay closed to the child
    SubjectPage* page = map_subject_page(subject);
    struct Unmap {
        SubjectPage* p;
        ~Unmap() { ::munmap(p, sizeof(SubjectPage)); }
    } unmap{page};
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    std::cout.flush();
    std::cerr.flush();
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipe_fds[0]);
        child_subject = page;
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
    if (WIFSIGNALED(status)) err << death_message(*page, status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace ncafs::cli
