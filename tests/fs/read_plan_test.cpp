// The read path plans a read once (VirtualFile::pieces, no I/O) and reuses
// the plan for its retry: runs of sources are opened only when read, and a
// source failure on the first try is read again from the same plan. Bytes
// are compared with the file's own bytes, written here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include "codecs/error.hpp"
#include "fs/view_read.hpp"

using namespace ncafs;
using namespace ncafs::fs;

namespace {

// A byte array whose big-endian elements lie in a file from offset 0 (as
// a partition's would): big_endian_extents opens the file; the first call
// fails as a changed partition does.
class FileBytes final : public ArraySource {
public:
    FileBytes(std::string path, uint64_t n) : path_(std::move(path)), shape_{n} {}
    NcType type() const override { return NcType::Byte; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder, void* out) const override {
        OpenFile::open(path_)->pread_exact(out, count[0], start[0]);
    }
    std::optional<std::vector<FileExtent>> big_endian_extents(uint64_t first, uint64_t n) const override {
        if (extents_calls.fetch_add(1) == 0 && fail_first) throw SourceError(path_, "changed since it was opened");
        return std::vector<FileExtent>{{OpenFile::open(path_), first, n}};
    }
    bool fail_first = true;
    mutable std::atomic<int> extents_calls{0};

private:
    std::string path_;
    std::vector<uint64_t> shape_;
};

// Ten computed bytes ('a'...), then the source's elements [0, 10) as a run,
// then ten computed bytes again; counts its plans.
class RunView final : public VirtualFile {
public:
    explicit RunView(const FileBytes& source) : source_(source) {}
    uint64_t size() const override { return 30; }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t('a' + (offset + i) % 26);
    }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        ++plans;
        EXPECT_EQ(offset, 0u);
        EXPECT_EQ(length, 30u);
        return {ViewPiece{0, 10}, ViewPiece{10, 10, std::nullopt, SourceRun{&source_, 0, 10}}, ViewPiece{20, 10}};
    }
    mutable std::atomic<int> plans{0};

private:
    const FileBytes& source_;
};

std::string temp_file(const std::string& bytes) {
    char name[] = "/tmp/ncafs-read-plan-XXXXXX";
    const int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::close(fd);
    std::ofstream(name, std::ios::binary) << bytes;
    return name;
}

}  // namespace

TEST(ReadPlan, PlanningOpensNothing) {
    const std::string path = temp_file("0123456789");
    FileBytes source(path, 10);
    RunView view(source);
    ReadPlan plan = plan_read(view, 0, 30);
    EXPECT_EQ(source.extents_calls.load(), 0) << "planning opened the source's file";
    ASSERT_EQ(plan.pieces.size(), 3u);
    EXPECT_TRUE(plan.pieces[1].run.has_value());
    ::unlink(path.c_str());
    EXPECT_NO_THROW(plan_read(view, 0, 30)) << "a plan must not depend on the file being there";
    std::vector<uint8_t> out(30);
    source.fail_first = false;
    EXPECT_THROW(read_view(view, plan, out), SourceError);  // the read meets the missing file
}

TEST(ReadPlan, TheRetryReusesThePlan) {
    const std::string path = temp_file("0123456789");
    FileBytes source(path, 10);
    RunView view(source);
    std::vector<uint8_t> out(30);
    read_view(view, 0, out);
    EXPECT_EQ(view.plans.load(), 1) << "the retry planned the read again";
    EXPECT_EQ(source.extents_calls.load(), 2) << "the run was not read again after the first failure";
    EXPECT_EQ(std::string(out.begin() + 10, out.begin() + 20), "0123456789");
    EXPECT_EQ(out[0], uint8_t('a'));
    EXPECT_EQ(out[29], uint8_t('a' + 29 % 26));
    ::unlink(path.c_str());
}

TEST(ReadPlan, PlansThatDoNotCoverTheRangeAreRefused) {
    class Gap final : public VirtualFile {
    public:
        uint64_t size() const override { return 30; }
        void read(uint64_t, std::span<uint8_t>) const override {}
        std::vector<ViewPiece> pieces(uint64_t, uint64_t) const override { return {ViewPiece{0, 10}, ViewPiece{15, 15}}; }
    } gap;
    EXPECT_THROW(plan_read(gap, 0, 30), UsageError);
    EXPECT_THROW(plan_read(gap, 20, 11), UsageError);  // outside the file
}
