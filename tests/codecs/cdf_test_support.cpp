#include "tests/codecs/cdf_test_support.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ncafs::cdftest {

namespace fs = std::filesystem;

namespace {
std::string source_dir() {
    const char* s = std::getenv("NCAFS_SOURCE_DIR");
    return s ? s : NCAFS_TEST_SOURCE_DIR;
}
}  // namespace

const std::string& temp_dir() {
    static const std::string dir = [] {
        std::string tmpl = (fs::temp_directory_path() / "ncafs-cdf-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        static std::string to_remove;
        to_remove = tmpl;
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(to_remove, ec);
        });
        return tmpl;
    }();
    return dir;
}

int run(const std::string& command) { return std::system(command.c_str()); }

const std::vector<CorpusFile>& corpus() {
    static const std::vector<CorpusFile> files = [] {
        std::vector<std::string> cdls;
        for (const auto& e : fs::directory_iterator(source_dir() + "/tests/data/cdl"))
            if (e.path().extension() == ".cdl") cdls.push_back(e.path().stem().string());
        std::sort(cdls.begin(), cdls.end());
        std::vector<CorpusFile> out;
        for (const auto& cdl : cdls) {
            std::vector<std::pair<std::string, int>> kinds = {{"nc3", 1}, {"nc6", 2}, {"nc5", 5}};
            if (cdl.rfind("cdf5_", 0) == 0) kinds = {{"nc5", 5}};
            for (const auto& [kind, version] : kinds) {
                CorpusFile f{cdl, kind, version, temp_dir() + "/" + cdl + "." + kind + ".nc"};
                std::string cmd = "ncgen -k " + kind + " -b -o '" + f.path + "' '" + source_dir() +
                                  "/tests/data/cdl/" + cdl + ".cdl'";
                if (run(cmd) != 0) throw std::runtime_error("ncgen failed: " + cmd);
                out.push_back(f);
            }
        }
        if (out.size() < 25) throw std::runtime_error("CDL corpus is too small");
        return out;
    }();
    return files;
}

const CorpusFile& corpus_file(const std::string& cdl, const std::string& kind) {
    for (const auto& f : corpus())
        if (f.cdl == cdl && f.kind == kind) return f;
    throw std::runtime_error("no corpus file " + cdl + "." + kind);
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace ncafs::cdftest
