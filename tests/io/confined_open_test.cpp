// ConfinedRoots: every component stays under the root, with openat2 and with
// the openat(O_NOFOLLOW) walk that replaces it on older kernels; FIFOs and
// other non-regular files are refused without blocking.
#include "io/confined_open.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace stdfs = std::filesystem;

class ConfinedOpen : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override {
        ncafs::ConfinedRoots::set_openat2_enabled(GetParam());
        base_ = stdfs::temp_directory_path() / ("ncafs-confined-" + std::to_string(::getpid()));
        stdfs::remove_all(base_);
        stdfs::create_directories(base_ / "root" / "dir" / "inner");
        stdfs::create_directories(base_ / "outside");
        write(base_ / "root" / "dir" / "inner" / "file.txt", "inside");
        write(base_ / "outside" / "secret.txt", "secret");
        root_ = (base_ / "root").string();
    }
    void TearDown() override {
        ncafs::ConfinedRoots::set_openat2_enabled(true);
        stdfs::remove_all(base_);
    }
    static void write(const stdfs::path& p, const std::string& text) { std::ofstream(p) << text; }
    // The contents read through a confined open, or "errno N".
    std::string read(const std::string& relative) const {
        ncafs::ConfinedRoots roots({root_});
        auto r = ncafs::open_regular_file(root_ + "/" + relative, &roots);
        if (!r.fd) return "errno " + std::to_string(r.error);
        char buffer[64] = {};
        ssize_t n = ::read(r.fd.get(), buffer, sizeof buffer);
        return std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    }
    stdfs::path base_;
    std::string root_;
};

TEST_P(ConfinedOpen, SymlinkFreePathsAndInsideSymlinksOpen) {
    EXPECT_EQ(read("dir/inner/file.txt"), "inside");
    stdfs::create_symlink("inner", base_ / "root" / "dir" / "rel");                    // relative, inside
    stdfs::create_symlink(base_ / "root" / "dir" / "inner", base_ / "root" / "abs");  // absolute, inside
    stdfs::create_symlink("../dir/inner/file.txt", base_ / "root" / "dir" / "up.txt");
    EXPECT_EQ(read("dir/rel/file.txt"), "inside");
    EXPECT_EQ(read("abs/file.txt"), "inside");
    EXPECT_EQ(read("dir/up.txt"), "inside");
    EXPECT_EQ(read("dir/rel/../inner/file.txt"), "inside");
}

TEST_P(ConfinedOpen, EveryComponentThatLeadsOutIsRefused) {
    // A directory swapped for a symlink out of the root, absolute or relative.
    stdfs::rename(base_ / "root" / "dir", base_ / "root" / "old");
    stdfs::create_symlink(base_ / "outside", base_ / "root" / "dir");
    EXPECT_EQ(read("dir/secret.txt"), "errno " + std::to_string(EXDEV));
    stdfs::remove(base_ / "root" / "dir");
    stdfs::create_symlink("../outside", base_ / "root" / "dir");
    EXPECT_EQ(read("dir/secret.txt"), "errno " + std::to_string(EXDEV));
    // The last component, and a symlink to the root's parent.
    stdfs::create_symlink(base_ / "outside" / "secret.txt", base_ / "root" / "s.txt");
    EXPECT_EQ(read("s.txt"), "errno " + std::to_string(EXDEV));
    stdfs::create_symlink("..", base_ / "root" / "parent");
    EXPECT_EQ(read("parent/outside/secret.txt"), "errno " + std::to_string(EXDEV));
    // A name lexically outside every root never reaches the disk.
    ncafs::ConfinedRoots roots({root_});
    EXPECT_EQ(roots.open(root_ + "/../outside/secret.txt", O_RDONLY).error, EACCES);
}

TEST_P(ConfinedOpen, LoopsMissingFilesAndFifos) {
    stdfs::create_symlink("loop2", base_ / "root" / "loop1");
    stdfs::create_symlink("loop1", base_ / "root" / "loop2");
    EXPECT_EQ(read("loop1"), "errno " + std::to_string(ELOOP));
    EXPECT_EQ(read("missing.txt"), "errno " + std::to_string(ENOENT));
    ASSERT_EQ(::mkfifo((root_ + "/pipe.nc").c_str(), 0644), 0);
    ncafs::ConfinedRoots roots({root_});
    auto r = ncafs::open_regular_file(root_ + "/pipe.nc", &roots);  // would block without O_NONBLOCK
    EXPECT_FALSE(r.fd);
    EXPECT_NE(r.reason.find("FIFO"), std::string::npos) << r.reason;
    auto direct = ncafs::open_regular_file(root_ + "/pipe.nc", nullptr);
    EXPECT_FALSE(direct.fd);
    struct stat st {};
    EXPECT_TRUE(roots.stat(root_ + "/dir", st) && S_ISDIR(st.st_mode));
}

TEST_P(ConfinedOpen, ARefusalByARuleIsToldFromTheSystemsOwnError) {
    // Callers tell "the file is missing or unreadable" (a gap, a caller's
    // permission) from "a rule of ours refused it" by the flag, not by text.
    ncafs::ConfinedRoots roots({root_});
    stdfs::create_symlink(base_ / "outside" / "secret.txt", base_ / "root" / "s.txt");
    const auto out = ncafs::open_regular_file(root_ + "/s.txt", &roots);
    EXPECT_TRUE(!out.fd && out.error == EXDEV && out.refused_by_rule) << out.reason;
    const auto lexically_out = roots.open(root_ + "/../outside/secret.txt", O_RDONLY);
    EXPECT_TRUE(!lexically_out.fd && lexically_out.error == EACCES && lexically_out.refused_by_rule);
    const auto missing = ncafs::open_regular_file(root_ + "/missing.txt", &roots);
    EXPECT_TRUE(!missing.fd && missing.error == ENOENT && !missing.refused_by_rule) << missing.reason;
}

TEST_P(ConfinedOpen, ARootMadeAgainIsFollowed) {
    // The root's descriptor is held between opens: a root removed and made
    // again under its name is opened again when a name is not found beneath
    // the held one, never served from the removed tree.
    EXPECT_EQ(read("dir/inner/file.txt"), "inside");
    stdfs::rename(base_ / "root", base_ / "root.old");
    stdfs::create_directories(base_ / "root" / "new");
    write(base_ / "root" / "new" / "file.txt", "remade");
    EXPECT_EQ(read("new/file.txt"), "remade");
    stdfs::remove_all(base_ / "root");
    EXPECT_EQ(read("new/file.txt"), "errno " + std::to_string(ENOENT));
}

// The check that spares std::filesystem on every open: it must accept
// exactly the paths lexically_normal_absolute leaves as they are.
TEST(LexicallyNormalAbsolute, TheQuickCheckAgreesWithStdFilesystem) {
    for (const std::string path : {"/", "/a", "/a/b.nc", "/a/.b", "/a/..b", "/a/b..", "/a/...", "//a", "/a//b", "/a/",
                                   "/a/.", "/a/..", "/./a", "/../a", "/a/./b", "/a/../b", "a", "a/b", "", ".", "/a/b/"}) {
        SCOPED_TRACE(path);
        const bool normal = !path.empty() && path[0] == '/' && ncafs::lexically_normal_absolute(path) == path;
        EXPECT_EQ(ncafs::is_lexically_normal_absolute(path), normal);
    }
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, ConfinedOpen, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "openat2" : "walk"; });

}  // namespace
