#include "ds_test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ncafs::ds_test {

std::string source_dir() {
    const char* s = std::getenv("NCAFS_SOURCE_DIR");
    return s ? s : NCAFS_SOURCE_DIR_FALLBACK;
}

std::string scratch_dir(const std::string& name) {
    const char* b = std::getenv("NCAFS_BINARY_DIR");
    std::filesystem::path p = std::filesystem::path(b ? b : "/tmp") / "ds_test_scratch" /
                              (name + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p.string();
}

int run(const std::string& command) {
    const int status = std::system(command.c_str());
    if (status == -1) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_all(const VirtualFile& f) {
    std::vector<uint8_t> out(f.size());
    static const uint64_t steps[] = {1, 7, 13, 4096, 3, 65536, 5};
    uint64_t pos = 0;
    size_t k = 0;
    while (pos < out.size()) {
        const uint64_t n = std::min<uint64_t>(steps[k++ % 7], out.size() - pos);
        f.read(pos, std::span<uint8_t>(out.data() + pos, n));
        pos += n;
    }
    return out;
}

std::string describe_difference(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& expected) {
    size_t i = 0;
    while (i < ours.size() && i < expected.size() && ours[i] == expected[i]) ++i;
    if (i == ours.size() && i == expected.size()) return "identical";
    auto around = [&](const std::vector<uint8_t>& v) {
        const size_t from = i > 40 ? i - 40 : 0;
        std::string s;
        for (size_t j = from; j < std::min(v.size(), i + 40); ++j) {
            const char c = static_cast<char>(v[j]);
            s += (c >= 32 && c < 127) ? c : '.';
        }
        return s;
    };
    return "sizes " + std::to_string(ours.size()) + " vs " + std::to_string(expected.size()) +
           ", first difference at byte " + std::to_string(i) + "\n ours:     " + around(ours) +
           "\n expected: " + around(expected);
}

}  // namespace ncafs::ds_test
