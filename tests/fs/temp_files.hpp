// What the caller-access and partition-watch tests share: a temporary folder
// (mode 0755, removed at the end) whose files are written with a given mode,
// and the list of files a dataset draws on, as fs/ takes it.
#pragma once

#include <stdlib.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ncafs::test {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/ncafs-access-test-XXXXXX";
        path = ::mkdtemp(tmpl);
        std::filesystem::permissions(path, std::filesystem::perms(0755));
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string write(const std::string& name, const std::string& bytes, mode_t mode = 0644) const {
        std::ofstream(path / name, std::ios::binary) << bytes;
        std::filesystem::permissions(path / name, std::filesystem::perms(mode));
        return (path / name).string();
    }
};

inline std::shared_ptr<const std::vector<std::string>> files(std::vector<std::string> v) {
    return std::make_shared<const std::vector<std::string>>(std::move(v));
}

}  // namespace ncafs::test
