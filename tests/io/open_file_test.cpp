// OpenFile's check after a read of a file changed within the last second:
// bytes are served only once no process holds the file open for writing and
// a second read gives the same bytes (the test runs as root or as the files'
// owner, so read leases are available); the same for the head read at the
// open (open_with_head), whose one fstat also refuses non-regular files.
#include "io/open_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "io/error.hpp"
#include "io/confined_open.hpp"

namespace {

namespace stdfs = std::filesystem;

class SettlingRead : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = (stdfs::temp_directory_path() / ("ncafs-settling-" + std::to_string(::getpid()))).string();
        writer_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ASSERT_GE(writer_, 0);
        ASSERT_EQ(::write(writer_, "version one", 11), 11);  // just now: within the settling window
        file_ = ncafs::OpenFile::open(path_);
    }
    void TearDown() override {
        if (writer_ >= 0) ::close(writer_);
        ncafs::set_settling_window(std::chrono::seconds(1));
        ::unlink(path_.c_str());
    }
    std::string read_all() const {
        std::string text(11, '\0');
        file_->pread_exact(text.data(), text.size(), 0);
        return text;
    }
    std::string path_;
    int writer_ = -1;
    std::shared_ptr<const ncafs::OpenFile> file_;
};

TEST_F(SettlingRead, AFileHeldOpenForWritingIsNotServed) {
    try {
        read_all();
        FAIL() << "served while a writer holds the file";
    } catch (const ncafs::SourceError& e) {
        EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("being written by another process"), std::string::npos) << e.what();
    }
}

TEST_F(SettlingRead, AHeadReadAtTheOpenIsCheckedLikeAnyRead) {
    auto r = ncafs::open_for_reading(path_, nullptr);
    ASSERT_TRUE(r.fd);
    try {
        ncafs::OpenFile::open_with_head(r.fd.release(), path_, 64);
        FAIL() << "a head served while a writer holds the file";
    } catch (const ncafs::SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("being written by another process"), std::string::npos) << e.what();
    }
    ::close(writer_);
    writer_ = -1;
    r = ncafs::open_for_reading(path_, nullptr);
    const auto head = ncafs::OpenFile::open_with_head(r.fd.release(), path_, 64)->take_head();
    EXPECT_EQ(std::string(head.begin(), head.end()), "version one");
}

TEST_F(SettlingRead, AWriterThatClosesSoonIsWaitedFor) {
    std::thread closer([this] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        ::close(writer_);
        writer_ = -1;
    });
    EXPECT_EQ(read_all(), "version one");
    closer.join();
}

TEST_F(SettlingRead, TwoReadsThatDifferAreNotServed) {
    ::close(writer_);
    writer_ = -1;
    const char first[] = "torn";
    try {
        file_->check_after_read(first, 4, [](void* again) { std::memcpy(again, "TORN", 4); });
        FAIL() << "two different reads were accepted";
    } catch (const ncafs::SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("changing while being read"), std::string::npos) << e.what();
    }
    file_->check_after_read(first, 4, [](void* again) { std::memcpy(again, "torn", 4); });
}

TEST_F(SettlingRead, ASettledFileIsReadOnce) {
    ncafs::set_settling_window(std::chrono::nanoseconds(0));
    int second_reads = 0;
    const char first[] = "x";
    file_->check_after_read(first, 1, [&](void*) { ++second_reads; });  // writer open, yet settled
    EXPECT_EQ(second_reads, 0);
}

// open_with_head: one pread before the one fstat; what is not a regular
// file is refused by that fstat (a FIFO without blocking).
class OpenWithHead : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = stdfs::temp_directory_path() / ("ncafs-head-" + std::to_string(::getpid()));
        stdfs::create_directories(dir_);
    }
    void TearDown() override { stdfs::remove_all(dir_); }
    std::shared_ptr<const ncafs::OpenFile> open(const stdfs::path& p, size_t limit) const {
        auto r = ncafs::open_for_reading(p.string(), nullptr);
        if (!r.fd) throw ncafs::SourceError(p.string(), r.reason);
        return ncafs::OpenFile::open_with_head(r.fd.release(), p.string(), limit);
    }
    stdfs::path dir_;
};

TEST_F(OpenWithHead, TheHeadIsTheFirstBytesUpToTheLimit) {
    const std::string text = "0123456789abcdef";
    { std::ofstream(dir_ / "f") << text; }
    auto whole = open(dir_ / "f", 64);
    EXPECT_EQ(whole->size(), text.size());
    const auto head = whole->take_head();
    EXPECT_EQ(std::string(head.begin(), head.end()), text);
    EXPECT_TRUE(whole->take_head().empty());  // once
    const auto first = open(dir_ / "f", 4)->take_head();
    EXPECT_EQ(std::string(first.begin(), first.end()), "0123");
    { std::ofstream(dir_ / "empty"); }
    EXPECT_TRUE(open(dir_ / "empty", 64)->take_head().empty());
}

TEST_F(OpenWithHead, WhatIsNotARegularFileIsRefused) {
    ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
    for (const char* name : {"pipe", "."}) {
        try {
            open(dir_ / name, 64);
            FAIL() << name << " was opened";
        } catch (const ncafs::SourceError& e) {
            EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
        }
    }
}

// keep_first_read: the kept bytes serve one read; a share (a read along in
// the opener's open) lets them serve one more, and an unused share is
// taken back when it ends.
TEST_F(OpenWithHead, AKeptFileServesOneReadMoreForEachShareUsed) {
    const std::string text = "0123456789abcdef";
    { std::ofstream(dir_ / "f") << text; }
    auto file = open(dir_ / "f", 64);
    auto keep = [&] {
        auto head = file->take_head();
        if (head.empty()) head.assign(text.begin(), text.end());
        file->keep_first_read(std::move(head));
    };
    keep();
    {
        ncafs::OpenFile::ShareKeptFile share(*file);
        const auto along = file->take_kept_file();
        EXPECT_EQ(std::string(along.begin(), along.end()), text);
    }
    const auto own = file->take_kept_file();
    EXPECT_EQ(std::string(own.begin(), own.end()), text);
    EXPECT_TRUE(file->take_kept_file().empty());  // both serves used

    keep();
    { ncafs::OpenFile::ShareKeptFile unused(*file); }
    EXPECT_EQ(file->take_kept_file().size(), text.size());
    EXPECT_TRUE(file->take_kept_file().empty());  // the unused share was taken back

    ncafs::OpenFile::ShareKeptFile nothing_kept(*file);
    EXPECT_TRUE(file->take_kept_file().empty());
}

}  // namespace
