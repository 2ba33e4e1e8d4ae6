// Files a command writes (export -o, aggregate -o): made in a private folder
// (mode 0700, owned by us) created in the target's folder, then renamed over
// the target. The target's folder and the private folder are held by
// descriptor from the start: whatever another user who may write the
// target's folder renames, swaps or plants there (a link at the target, at
// the private folder's name or in its place), nothing is opened through a
// link and the finished file lands in the folder first resolved. Run as root
// in a folder other users may write, a target that is a symbolic link or
// not root's is refused rather than replaced.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace ncafs {

class PrivateFolder {
public:
    // For `target`; SourceError naming target when its folder cannot be
    // opened, the target is refused, or the private folder cannot be made.
    explicit PrivateFolder(const std::string& target);
    // Removes the private folder and what is left in it, through its descriptor.
    ~PrivateFolder();
    PrivateFolder(const PrivateFolder&) = delete;
    PrivateFolder& operator=(const PrivateFolder&) = delete;

    // The private folder reached through its descriptor (/proc/self/fd/N),
    // and a name in it: for libraries that create and read files by path.
    std::string path() const;
    std::string path_of(const std::string& name) const { return path() + "/" + name; }
    // Creates name there (exclusively, never through a link): a descriptor
    // open for writing, or SourceError naming the target.
    int create(const std::string& name, mode_t mode) const;
    // Creates name there and writes bytes to it (create's errors, and write errors).
    void write_file(const std::string& name, std::string_view bytes, mode_t mode) const;
    // Renames name over the target (checked again first); SourceError naming it.
    void publish(const std::string& name) const;
    const std::string& target() const { return target_; }

private:
    void check_target() const;
    std::string target_;
    std::string target_name_;  // its last component
    std::string folder_name_;  // the private folder's name in the target's folder
    int parent_fd_ = -1;
    int folder_fd_ = -1;
};

// A target that is a character device or a FIFO (/dev/null, /dev/stdout, a
// named pipe) is written in place, never replaced: opened for writing (no
// O_CREAT, no O_TRUNC) through the descriptor its check was made on.
// Returns -1 for anything else (a regular file, an absent target: use
// PrivateFolder). SourceError naming it when refused (run as root, in a
// folder other users may write: a link, or not root's) or when it cannot
// be opened.
int open_device_target(const std::string& target);

}  // namespace ncafs
