// A private folder made beside a file about to be written (mkdtemp: created at
// once, mode 0700) and removed with what it holds when it goes out of scope.
// What is written there cannot meet a link another user planted at a name
// guessed in the target's folder; a rename then puts the result in place.
#pragma once

#include <string>

namespace ncafs {

class PrivateFolder {
public:
    // Beside `target` (in its folder); SourceError naming target if it cannot be made.
    explicit PrivateFolder(const std::string& target);
    ~PrivateFolder();
    PrivateFolder(const PrivateFolder&) = delete;
    PrivateFolder& operator=(const PrivateFolder&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace ncafs
