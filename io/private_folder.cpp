#include "io/private_folder.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "io/error.hpp"

namespace ncafs {

PrivateFolder::PrivateFolder(const std::string& target) {
    const std::filesystem::path out(target);
    std::string pattern = (out.parent_path() / ("." + out.filename().string() + ".XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        throw SourceError(target, std::string("cannot make a private folder beside it: ") + std::strerror(errno));
    path_ = pattern;
}

PrivateFolder::~PrivateFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

}  // namespace ncafs
