#include "tests/vds/vds_test_support.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "codecs/array_source.hpp"

namespace vds_test {

std::string fixture(const std::string& name) {
    const char* root = std::getenv("NCAFS_SOURCE_DIR");
    return std::string(root ? root : ".") + "/tests/data/vds/" + name;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::vector<uint8_t>& bytes) {
    char name[] = "/tmp/vds-test-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    ::close(fd);
    return name;
}

std::string sha1_hex(const void* data, size_t n) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data, n, md, &len, EVP_sha1(), nullptr);
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < len; ++i) {
        s += hex[md[i] >> 4];
        s += hex[md[i] & 15];
    }
    return s;
}

std::vector<uint8_t> read_all(const ncafs::Variable& v) {
    const auto& shape = v.source->shape();
    std::vector<uint8_t> out(v.source->element_count() * ncafs::type_size(v.type));
    std::vector<uint64_t> start(shape.size(), 0);
    v.source->read(start, shape, ncafs::ByteOrder::Native, out.data());
    return out;
}

namespace {

uint64_t peak_resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
    return 0;
}

}  // namespace

ChildCost cost_in_child(const std::function<std::string()>& work) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::close(fds[0]);
        const auto t0 = std::chrono::steady_clock::now();
        std::string outcome;
        try {
            outcome = work();
        } catch (const std::exception& e) {
            outcome = std::string("exception: ") + e.what();
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string report = std::to_string(peak_resident_bytes()) + "\n" + std::to_string(seconds) + "\n" + outcome;
        size_t done = 0;
        while (done < report.size()) {
            const ssize_t n = ::write(fds[1], report.data() + done, report.size() - done);
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string report;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) report.append(buffer, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ChildCost cost;
    const size_t a = report.find('\n'), b = a == std::string::npos ? a : report.find('\n', a + 1);
    if (b == std::string::npos) {
        cost.outcome = "child died (status " + std::to_string(status) + ")";
        return cost;
    }
    cost.peak_bytes = std::stoull(report.substr(0, a));
    cost.seconds = std::stod(report.substr(a + 1, b - a - 1));
    cost.outcome = report.substr(b + 1);
    return cost;
}

std::vector<FileRow> walk(const std::vector<uint8_t>& b) {
    const auto table = get<int64_t>(b, 16);
    const auto count = get<int32_t>(b, 24), name_length = get<int32_t>(b, 28);
    std::vector<FileRow> rows;
    for (int32_t i = 0; i < count; ++i) {
        FileRow r;
        r.header_at = static_cast<uint64_t>(table) + static_cast<uint64_t>(i) * (32 + static_cast<uint64_t>(name_length));
        r.name = std::string(reinterpret_cast<const char*>(&b[r.header_at + 32]));
        r.directory = static_cast<uint64_t>(get<int64_t>(b, r.header_at));
        r.metadata_length = get<int32_t>(b, r.header_at + 24);
        r.file_metadata_length = get<int32_t>(b, r.header_at + 28);
        r.first_page = static_cast<uint64_t>(get<int64_t>(b, r.directory + 16 + static_cast<uint64_t>(r.file_metadata_length)));
        rows.push_back(r);
    }
    return rows;
}

const FileRow& row(const std::vector<FileRow>& rows, const std::string& name) {
    for (const auto& r : rows)
        if (r.name == name) return r;
    throw std::runtime_error("no file " + name);
}

}  // namespace vds_test
