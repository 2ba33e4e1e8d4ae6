#include "codecs/netcdf/netcdf_helpers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <future>
#include <new>
#include <string>
#include <variant>
#include <vector>

#include "codecs/netcdf/helper_confinement.hpp"
#include "codecs/netcdf/helper_timing.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_terms.hpp"
#include "codecs/netcdf/survey_wire.hpp"
#include "io/error.hpp"
#include "io/mutex.hpp"
#include "io/test_switch.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::netcdf {

namespace {

using Clock = std::chrono::steady_clock;

int control_socket = -1;  // the asking side's end (SOCK_SEQPACKET): set once, before any thread
constexpr unsigned long kHelperMemory = 1ul << 30;
constexpr char kAnswerFrame = 'A', kEndFrame = 'Z';
constexpr char kTimingTag[] = "\ntiming:";  // the helper's marks in its diagnostic (helper_timing.hpp)

// How long a helper may take on one file: 20 s, or the test-only
// NCAFS_TEST_HELPER_DEADLINE_MS (tests/README.md).
std::chrono::milliseconds helper_deadline() {
    static const std::chrono::milliseconds deadline = [] {
        const auto ms = test_milliseconds("NCAFS_TEST_HELPER_DEADLINE_MS");
        return ms && ms->count() > 0 ? *ms : std::chrono::milliseconds(20000);
    }();
    return deadline;
}

bool write_all(int fd, const void* data, size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= static_cast<size_t>(w);
    }
    return true;
}

void write_frame(int fd, char kind, const void* data, uint64_t n) {
    write_all(fd, &kind, 1) && write_all(fd, &n, sizeof n) && write_all(fd, data, n);
}

// ---- the helper (a child of the zygote) ------------------------------------

// Test-only switches (tests/README.md): NCAFS_TEST_HELPER_CRASH=NAME makes
// the helper of a file whose name ends in NAME die (SIGILL) before reading
// (NCAFS_TEST_HELPER_CRASH_VALUES=NAME: only a helper asked for values),
// NCAFS_TEST_HELPER_HANG=NAME makes it spin forever (until its deadline);
// NCAFS_TEST_HELPER_TRY_OPEN=PATH makes it try, once confined, to open PATH,
// to make a TCP socket and to signal its zygote, and refuse the file with
// what happened as the reason (so it is logged).
bool named_by_switch(const char* variable, const std::string& shown) {
    const char* name = std::getenv(variable);
    const size_t n = name ? std::strlen(name) : 0;
    return n > 0 && shown.size() >= n && shown.compare(shown.size() - n, n, name) == 0;
}

void test_switches(const HelperRequest& request, HelperAnswer& answer) {
    const std::string& shown = request.shown;
    if (named_by_switch("NCAFS_TEST_HELPER_CRASH", shown)) __builtin_trap();
    if (request.values && named_by_switch("NCAFS_TEST_HELPER_CRASH_VALUES", shown)) __builtin_trap();
    if (named_by_switch("NCAFS_TEST_HELPER_HANG", shown)) {
        volatile unsigned spin = 0;
        for (;;) (void)spin;  // a volatile read each turn: a loop the compiler keeps
    }
    if (const char* path = std::getenv("NCAFS_TEST_HELPER_TRY_OPEN"); path && *path) {
        const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
        answer.diagnostic += std::string(answer.diagnostic.empty() ? "" : "; ") + "helper open(" + path +
                             "): " + (fd >= 0 ? "succeeded" : std::strerror(errno));
        if (fd >= 0) ::close(fd);
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        answer.diagnostic += std::string("; helper socket(AF_INET): ") + (s >= 0 ? "succeeded" : std::strerror(errno));
        if (s >= 0) ::close(s);
        const int k = ::kill(::getppid(), 0);
        answer.diagnostic += std::string("; helper kill(zygote, 0): ") + (k == 0 ? "succeeded" : std::strerror(errno));
        answer.error = "test switch NCAFS_TEST_HELPER_TRY_OPEN: " + answer.diagnostic;
    }
}

// NCAFS_TEST_HELPER_LIE=NAME: the helper of a file whose name ends in NAME
// answers a description that claims a variable of a dimension it does not
// describe; NCAFS_TEST_HELPER_LIE_TERMS=NAME: rows of term variables (alone
// or with the inventory) whose text ends lie past the text sent, numbers
// more than their masks; as a
// helper subverted by the file could (tests/README.md).
void lie_if_asked(const std::string& shown, HelperAnswer& answer) {
    const auto lie_about = [](TermArray& term) {
        term.text_end.assign(term.text_end.size(), uint64_t{1} << 40);
        term.bytes.resize(term.bytes.size() * 2 + 8);
    };
    if (named_by_switch("NCAFS_TEST_HELPER_LIE_TERMS", shown)) {
        if (answer.term) lie_about(*answer.term);
        for (TermArray& term : answer.terms) lie_about(term);
    }
    if (!named_by_switch("NCAFS_TEST_HELPER_LIE", shown) || !answer.description) return;
    VariableDescription lie;
    lie.name = "lie";
    lie.dimids = {answer.description->dimensions.size() + 1000};
    answer.description->variables.push_back(std::move(lie));
}

std::string reason_of(const std::string& message, const std::string& shown) {
    const std::string prefix = shown + ": ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// What the helper's one file answers to the request, or why it is refused.
void work_into(HelperAnswer& answer, int file_fd, const HelperRequest& request) {
    const std::string& shown = request.shown;
    // Every open below (H5Fopen, nc_open) names only this descriptor: the
    // file the daemon opened through its confined walk. No name from SOURCE
    // reaches the libraries, and the helper's own confinement (Landlock,
    // seccomp, rlimits) bounds whatever they try besides.
    const std::string path = "/proc/self/fd/" + std::to_string(file_fd);
    try {
        if (request.terms == TermAsk::Inventory) {
            answer.inventory = term_inventory_here(path, shown);
        } else if (request.terms == TermAsk::InventoryAndRows) {
            auto [inventory, terms] = term_inventory_and_rows_here(path, shown, request.term_paths);
            answer.inventory = std::move(inventory), answer.terms = std::move(terms);
        } else if (request.terms == TermAsk::Rows) {
            answer.term = term_rows_here(path, shown, request.group, request.start.empty() ? 0 : request.start[0]);
        } else if (request.values) {
            answer.values = read_values_here(path, shown, request.group, request.varid, request.start, request.count);
        } else {
            HelperDescription found = survey_and_describe(path, shown, request.group);
            answer.survey = std::move(found.survey);
            answer.description = std::move(found.description);
        }
    } catch (const std::bad_alloc&) {
        answer.error = "the netCDF-4 helper reading it ran out of memory (limit " +
                       std::to_string(kHelperMemory >> 20) + " MiB)";
    } catch (const std::exception& e) {
        answer.error = reason_of(e.what(), shown);
    }
}

[[noreturn]] void run_helper(int file_fd, int reply, const HelperRequest& request) {
    HelperAnswer answer;
    const auto seconds = static_cast<unsigned>(helper_deadline().count() / 1000 + 2);
    answer.diagnostic = confine_helper(file_fd, HelperLimits{seconds, kHelperMemory});
    helper_timing::mark("confined");
    test_switches(request, answer);
    if (!answer.error) work_into(answer, file_fd, request);
    lie_if_asked(request.shown, answer);
    helper_timing::mark("worked");
    if (helper_timing::enabled()) answer.diagnostic += kTimingTag + helper_timing::marks_text();
    const std::vector<uint8_t> bytes = encode_answer(answer);
    write_frame(reply, kAnswerFrame, bytes.data(), bytes.size());
    ::_exit(0);
}

// ---- the zygote --------------------------------------------------------------

// HDF5's and netcdf-c's own start-up (no file of a user is read): the
// zygote is single-threaded, so its helpers inherit initialised libraries.
void initialise_libraries() {
    LibraryLock lock;  // its first use also silences HDF5 and refuses external links
    nc_initialize();
}

struct Child {
    int reply;
    Clock::time_point deadline;
    bool killed = false;
};

// Closes every descriptor from 3 up but `keep` (sorted, distinct).
void close_all_but(std::vector<int> keep) {
    std::sort(keep.begin(), keep.end());
    unsigned from = 3;
    for (int fd : keep) {
        if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
        from = std::max(from, static_cast<unsigned>(fd) + 1);
    }
    ::close_range(from, ~0U, 0);
}

void spawn(int file_fd, int reply, const HelperRequest& request, std::map<pid_t, Child>& children) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        helper_timing::mark("forked");
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGINT, SIG_DFL), ::signal(SIGHUP, SIG_DFL);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        close_all_but({file_fd, reply});
        run_helper(file_fd, reply, request);
    }
    ::close(file_fd);
    if (pid < 0) {
        const int status = -1;
        write_frame(reply, kEndFrame, &status, sizeof status);
        ::close(reply);
        return;
    }
    children[pid] = Child{reply, Clock::now() + helper_deadline()};
}

// One request (survey_wire.hpp), with the file and the reply socket as
// SCM_RIGHTS. False when the asking side is gone.
bool receive_request(int control, std::map<pid_t, Child>& children) {
    std::vector<uint8_t> bytes(kMaxRequestBytes);
    alignas(cmsghdr) char space[CMSG_SPACE(2 * sizeof(int))];
    iovec iov{bytes.data(), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov, msg.msg_iovlen = 1, msg.msg_control = space, msg.msg_controllen = sizeof space;
    const ssize_t n = ::recvmsg(control, &msg, MSG_CMSG_CLOEXEC);
    helper_timing::restart();
    helper_timing::mark("zygote");
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) return false;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int))) return true;
    int fds[2];
    std::memcpy(fds, CMSG_DATA(c), sizeof fds);
    bytes.resize(static_cast<size_t>(n));
    try {
        spawn(fds[0], fds[1], decode_request(bytes), children);
    } catch (const std::exception&) {
        ::close(fds[0]), ::close(fds[1]);  // the asking side hears the socket close: no answer
    }
    return true;
}

void reap(std::map<pid_t, Child>& children) {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
        auto it = children.find(pid);
        if (it == children.end()) continue;
        const int end[2] = {status, it->second.killed ? 1 : 0};
        write_frame(it->second.reply, kEndFrame, end, sizeof end);
        ::close(it->second.reply);
        children.erase(it);
    }
}

int poll_timeout(const std::map<pid_t, Child>& children) {
    if (children.empty()) return -1;
    auto first = Clock::time_point::max();
    for (const auto& [pid, c] : children)
        if (!c.killed) first = std::min(first, c.deadline);
    if (first == Clock::time_point::max()) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(first - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left + 1, 0, 60000));
}

[[noreturn]] void run_zygote(int control) {
    ::prctl(PR_SET_NAME, "ncafs-helpers");
    initialise_libraries();  // once here, not in every helper: they start initialised
    // Root's powers are not the zygote's to keep; every helper confines itself further.
    // What cannot be applied (a kernel without seccomp) leaves the helpers' own walls.
    (void)confine_zygote();
    ::signal(SIGINT, SIG_IGN), ::signal(SIGHUP, SIG_IGN);  // the terminal's: the daemon decides
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &chld, nullptr);
    const int children_ended = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    // Holds no terminal or pipe of its parent's: a caller waiting for the end
    // of the daemon's output (a daemonized mount) must not wait for it.
    const int quiet = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(quiet, fd);
    std::map<pid_t, Child> children;
    for (;;) {
        pollfd fds[2] = {{control, POLLIN, 0}, {children_ended, POLLIN, 0}};
        ::poll(fds, 2, poll_timeout(children));
        signalfd_siginfo info;
        while (::read(children_ended, &info, sizeof info) > 0) {}  // drained; reap() asks waitpid
        reap(children);
        for (auto& [pid, c] : children)
            if (!c.killed && Clock::now() >= c.deadline) ::kill(pid, SIGKILL), c.killed = true;
        if ((fds[0].revents & (POLLIN | POLLHUP)) && !receive_request(control, children)) break;
    }
    for (auto& [pid, c] : children) ::kill(pid, SIGKILL);
    ::_exit(0);
}

// ---- the asking side ---------------------------------------------------------

void send_request(const OpenFile& file, const HelperRequest& request, int reply) {
    std::vector<uint8_t> bytes = encode_request(request);
    if (bytes.size() > kMaxRequestBytes) throw SourceError(file.path(), "a request too long for its netCDF-4 helper");
    alignas(cmsghdr) char space[CMSG_SPACE(2 * sizeof(int))] = {};
    iovec iov{bytes.data(), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov, msg.msg_iovlen = 1, msg.msg_control = space, msg.msg_controllen = sizeof space;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS, c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {file.fd(), reply};
    std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    if (::sendmsg(control_socket, &msg, MSG_NOSIGNAL) < 0) {
        const int e = errno;
        throw SystemCallError(file.path(), std::string("the netCDF-4 helpers are gone: ") + std::strerror(e), e);
    }
}

// Whether bytes start with the helper's whole answer frame (the helper
// writes it before it exits, the zygote its end frame after).
bool holds_whole_answer(const std::vector<uint8_t>& bytes) {
    if (bytes.size() < 9 || bytes[0] != static_cast<uint8_t>(kAnswerFrame)) return false;
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + 1, 8);
    return bytes.size() - 9 >= n;
}

// What the helper and the zygote wrote: the helper's whole answer, or else
// everything until both closed the socket (bounded in size and time: the
// zygote ends a helper at its deadline).
std::vector<uint8_t> read_reply(int fd, const std::string& shown) {
    std::vector<uint8_t> bytes;
    const auto give_up = Clock::now() + helper_deadline() + std::chrono::seconds(10);
    uint8_t buffer[65536];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0)
            throw SourceError(shown, "the netCDF-4 helpers did not answer in time");
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return bytes;
        if (bytes.size() + static_cast<size_t>(n) > kMaxAnswerBytes + 64)
            throw SourceError(shown, "the netCDF-4 helper's answer is larger than " +
                                         std::to_string(kMaxAnswerBytes >> 20) + " MiB");
        bytes.insert(bytes.end(), buffer, buffer + n);
        if (holds_whole_answer(bytes)) return bytes;  // no need to wait for the helper's exit
    }
}

struct Reply {
    std::optional<std::vector<uint8_t>> answer;
    std::optional<int> status;
    bool killed = false;
};

Reply split_frames(const std::vector<uint8_t>& bytes) {
    Reply r;
    size_t at = 0;
    while (bytes.size() - at >= 9) {
        const char kind = static_cast<char>(bytes[at]);
        uint64_t n = 0;
        std::memcpy(&n, bytes.data() + at + 1, 8);
        at += 9;
        if (n > bytes.size() - at) break;
        if (kind == kAnswerFrame && !r.answer) r.answer.emplace(bytes.begin() + at, bytes.begin() + at + n);
        if (kind == kEndFrame && n >= sizeof(int)) {
            int end[2] = {0, 0};
            std::memcpy(end, bytes.data() + at, std::min<uint64_t>(n, sizeof end));
            r.status = end[0], r.killed = end[1] != 0;
        }
        at += n;
    }
    return r;
}

// What the helper's end says, when it did not end well; nullopt when it did.
std::optional<std::string> death_of(const Reply& r) {
    const std::string who = "the netCDF-4 helper reading it ";
    if (r.answer && !r.status) return std::nullopt;  // it answered whole, before it ended
    if (!r.status) return who + "ended without a word from its zygote";
    if (*r.status == -1) return "no netCDF-4 helper could be started (fork failed)";
    if (r.killed)
        return who + "ran past its deadline of " + std::to_string(helper_deadline().count()) + " ms and was killed";
    if (WIFSIGNALED(*r.status)) {
        const int sig = WTERMSIG(*r.status);
        const char* name = sigabbrev_np(sig);
        return who + "died of signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
    }
    if (WIFEXITED(*r.status) && WEXITSTATUS(*r.status) != 0)
        return who + "exited with status " + std::to_string(WEXITSTATUS(*r.status));
    if (!r.answer) return who + "gave no answer";
    return std::nullopt;
}

}  // namespace

void start_netcdf_helpers() {
    if (control_socket >= 0) return;
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return;  // then read in-process
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(pair[0]);
        allow_library_in_this_process();  // the zygote and its helpers are where the libraries run
        run_zygote(pair[1]);
    }
    ::close(pair[1]);
    if (pid < 0) {
        ::close(pair[0]);
        return;
    }
    control_socket = pair[0];
}

bool netcdf_helpers_started() { return control_socket >= 0; }

namespace {

// What helpers answered, by file identity and group: a file opened again
// (the probe for aggregation attributes, then the dataset; a dataset
// dropped and opened later) costs no second helper. Bounded by count and
// by weight (chunk positions and described items).
class AnswerCache {
public:
    struct Entry {
        std::optional<Hdf5Survey> survey;
        std::optional<NetcdfDescription> description;
        std::optional<std::string> error;
    };
    std::optional<Entry> get(const FileIdentity& id, const std::string& group) {
        MutexLock lock(mutex_);
        for (const auto& [key, entry] : entries_)
            if (key.first == id && key.second == group) return entry;
        return std::nullopt;
    }
    void put(const FileIdentity& id, const std::string& group, Entry entry) {
        const uint64_t weight = weight_of(entry);
        MutexLock lock(mutex_);
        entries_.emplace_back(std::make_pair(id, group), std::move(entry));
        weight_ += weight;
        while (entries_.size() > kMaxEntries || weight_ > kMaxWeight) {
            weight_ -= weight_of(entries_.front().second);
            entries_.erase(entries_.begin());
        }
    }

private:
    static constexpr size_t kMaxEntries = 256;
    static constexpr uint64_t kMaxWeight = uint64_t{1} << 22;  // 64 MiB of chunk places
    static uint64_t weight_of(const Entry& e) {
        uint64_t n = 1;
        if (e.survey)
            for (const auto& [path, s] : e.survey->storage) n += s->chunks.size();
        if (e.description) {
            n += e.description->variables.size() + e.description->dimensions.size();
            for (const auto& v : e.description->variables) n += v.attributes.size();
        }
        return n;
    }
    Mutex mutex_;  // a leaf
    std::vector<std::pair<std::pair<FileIdentity, std::string>, Entry>> entries_ NCAFS_GUARDED_BY(mutex_);  // oldest first
    uint64_t weight_ NCAFS_GUARDED_BY(mutex_) = 0;
};

AnswerCache& answers() {
    static AnswerCache cache;
    return cache;
}

const char* kind_of(const HelperRequest& request) {
    if (request.terms == TermAsk::Inventory) return "inventory";
    if (request.terms == TermAsk::Rows) return "term rows";
    if (request.terms == TermAsk::InventoryAndRows) return "inventory and term rows";
    return request.values ? "values" : "description";
}

// A fresh helper's answer to `request` about `file`, or the error to keep;
// a SourceError thrown at once is not kept (a deadline passed on a busy
// machine, or the helpers are gone, may pass).
std::variant<HelperAnswer, std::string> ask_helper(const OpenFile& file, const HelperRequest& request) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        const int e = errno;
        throw SystemCallError(file.path(), std::string("no socket for its netCDF-4 helper: ") + std::strerror(e), e);
    }
    std::vector<uint8_t> bytes;
    const auto asked = Clock::now();
    try {
        send_request(file, request, pair[1]);
        ::close(pair[1]), pair[1] = -1;
        bytes = read_reply(pair[0], file.path());
    } catch (...) {
        ::close(pair[0]);
        if (pair[1] >= 0) ::close(pair[1]);
        throw;
    }
    ::close(pair[0]);
    const auto answered = Clock::now();
    const Reply reply = split_frames(bytes);
    if (reply.killed) throw SourceError(file.path(), *death_of(reply));
    if (auto death = death_of(reply)) return *death;
    try {
        HelperAnswer answer = decode_answer(*reply.answer);
        if (const size_t at = answer.diagnostic.find(kTimingTag); helper_timing::enabled() && at != std::string::npos)
            helper_timing::report(file.path() + " (" + kind_of(request) + ")",
                                  answer.diagnostic.substr(at + sizeof kTimingTag - 1), asked, answered);
        return answer;
    } catch (const std::exception& e) {
        return std::string("the netCDF-4 helper's answer is malformed: ") + e.what();
    }
}

AnswerCache::Entry describing_entry(const OpenFile& file, const std::string& group) {
    auto answer = ask_helper(file, HelperRequest{file.path(), group});
    if (auto* error = std::get_if<std::string>(&answer)) return {std::nullopt, std::nullopt, *error};
    HelperAnswer& a = std::get<HelperAnswer>(answer);
    if (!a.error && !a.description) a.error = "the netCDF-4 helper's answer is malformed: no description";
    return {std::move(a.survey), std::move(a.description), std::move(a.error)};
}

// Asks being answered now, by file identity and group: a second reader of
// a file a helper is describing (a reader and the opens ahead of it, side
// by side) waits for that answer instead of forking a second helper.
class AsksInFlight {
public:
    using Key = std::pair<FileIdentity, std::string>;
    using Answer = std::shared_future<AnswerCache::Entry>;
    // The ask of key running on another thread, or nothing: then `mine` is
    // registered as the ask of key, until done(key).
    std::optional<Answer> join_or_register(const Key& key, const Answer& mine) {
        MutexLock lock(mutex_);
        for (const auto& [k, answer] : asks_)
            if (k == key) return answer;
        asks_.emplace_back(key, mine);
        return std::nullopt;
    }
    void done(const Key& key) {
        MutexLock lock(mutex_);
        std::erase_if(asks_, [&](const auto& ask) { return ask.first == key; });
    }

private:
    Mutex mutex_;  // a leaf
    std::vector<std::pair<Key, Answer>> asks_ NCAFS_GUARDED_BY(mutex_);  // few: one per file being opened
};

AsksInFlight& asks_in_flight() {
    static AsksInFlight asks;
    return asks;
}

// The answer about (file, group) from a helper, asked once however many
// threads want it at the same time; kept in answers().
AnswerCache::Entry answer_once(const OpenFile& file, const std::string& group) {
    const AsksInFlight::Key key{file.identity(), group};
    std::promise<AnswerCache::Entry> mine;
    if (auto theirs = asks_in_flight().join_or_register(key, mine.get_future().share())) {
        try {
            return theirs->get();
        } catch (const SourceError&) {
            return describing_entry(file, group);  // not kept (a deadline, the helpers gone): asked again
        }
    }
    try {
        AnswerCache::Entry entry = describing_entry(file, group);
        answers().put(file.identity(), group, entry);
        mine.set_value(entry);
        asks_in_flight().done(key);
        return entry;
    } catch (...) {
        mine.set_exception(std::current_exception());
        asks_in_flight().done(key);
        throw;
    }
}

}  // namespace

HelperDescription describe_in_helper(const OpenFile& file, const std::string& group) {
    std::optional<AnswerCache::Entry> known = answers().get(file.identity(), group);
    if (!known) known = answer_once(file, group);
    if (known->error) throw SourceError(file.path(), *known->error);
    return {std::move(known->survey), std::move(*known->description)};
}

std::optional<Hdf5Survey> survey_in_helper(const OpenFile& file) { return describe_in_helper(file, "").survey; }

HelperAnswer answer_in_helper(const OpenFile& file, const HelperRequest& request) {
    auto answer = ask_helper(file, request);
    if (auto* error = std::get_if<std::string>(&answer)) throw SourceError(file.path(), *error);
    HelperAnswer& a = std::get<HelperAnswer>(answer);
    if (a.error) throw SourceError(file.path(), *a.error);
    return std::move(a);
}

void values_in_helper(const OpenFile& file, const std::string& group, int varid, std::span<const uint64_t> start,
                      std::span<const uint64_t> count, std::span<uint8_t> out) {
    if (out.size() > kMaxHelperBoxBytes) throw SourceError(file.path(), "a box too large for one netCDF-4 helper");
    HelperRequest request{file.path(), group, true, varid, {start.begin(), start.end()}, {count.begin(), count.end()}};
    const HelperAnswer a = answer_in_helper(file, request);
    if (!a.values || a.values->size() != out.size())
        throw SourceError(file.path(), "the netCDF-4 helper's answer is malformed: values of another size");
    std::memcpy(out.data(), a.values->data(), out.size());
}

}  // namespace ncafs::netcdf
