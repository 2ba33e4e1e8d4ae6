// The HDF5 indirection walk (codecs/netcdf/hdf5_indirection.hpp) on files
// h5py writes at test time: external storage, virtual datasets, external
// links (also one whose target does not exist: netcdf-c would fail the whole
// file if the link were followed), a soft link to a refused dataset, and
// groups nested beyond the walk's bound.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/hdf5_indirection.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/netcdf/netcdf_library.hpp"
#include "python_written_files.hpp"

namespace ncafs::netcdf {
namespace {

namespace fs = std::filesystem;

// Writes the files into argv[1]; `ok` holds 11, -7, 2024, 31337 everywhere.
constexpr const char* kWriter = R"PY(
import os, sys
import h5py, numpy as np
d = sys.argv[1]
secret = os.path.join(d, "secret.bin")
open(secret, "wb").write(b"SECRET" * 10)
with h5py.File(os.path.join(d, "source.h5"), "w") as f:
    f["s"] = np.arange(60, dtype="u1")
ok = np.array([11, -7, 2024, 31337], dtype="i4")
def base(name):
    f = h5py.File(os.path.join(d, name), "w")
    f["ok"] = ok
    return f
with base("external.nc4") as f:
    f.create_dataset("x", shape=(60,), dtype="u1", external=[(secret, 0, 30), (secret, 30, 30)])
    f["alias"] = h5py.SoftLink("/x")
with base("virtual.nc4") as f:
    layout = h5py.VirtualLayout(shape=(60,), dtype="u1")
    layout[:] = h5py.VirtualSource(os.path.join(d, "source.h5"), "s", shape=(60,))
    f.create_virtual_dataset("x", layout)
with base("link.nc4") as f:
    f["x"] = h5py.ExternalLink(os.path.join(d, "source.h5"), "/s")
    f.create_group("g")["deep"] = h5py.ExternalLink(os.path.join(d, "no-such-file.h5"), "/s")
with base("dangling.nc4") as f:
    f["x"] = h5py.ExternalLink(os.path.join(d, "no-such-file.h5"), "/s")
with base("no_indirection.nc4") as f:
    f.create_group("a/b")["y"] = np.arange(3, dtype="f8")
with base("deep.nc4") as f:
    f.create_group("/".join(["g"] * 40))
)PY";

class Hdf5IndirectionTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto folder = test::write_with_python(kWriter, "ncafs-h5walk");
        ASSERT_TRUE(folder) << "h5py could not write";
        dir_ = *folder;
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    static std::string path(const std::string& name) { return dir_ + "/" + name; }
    static Hdf5Indirections walk(const std::string& name) {
        LibraryLock lock;
        return Hdf5Indirections::find(path(name), name);
    }
    static std::vector<int32_t> read_ok(const Dataset& ds) {
        const Variable* ok = ds.find_variable("ok");
        EXPECT_NE(ok, nullptr);
        std::vector<int32_t> values(4);
        if (ok) ok->source->read_linear(0, 4, ByteOrder::Native, values.data());
        return values;
    }
    static inline std::string dir_;
};

const std::vector<int32_t> kOk{11, -7, 2024, 31337};

TEST_F(Hdf5IndirectionTest, ExternalStorageIsFoundAndItsReadsRefused) {
    const auto found = walk("external.nc4");
    ASSERT_EQ(found.findings().size(), 2u);  // x, and x again through the soft link "alias"
    EXPECT_EQ(found.findings()[0].kind, Hdf5IndirectionKind::ExternalStorage);
    EXPECT_NE(found.findings()[0].target.find(path("secret.bin") + " and 1 more file(s)"), std::string::npos);
    EXPECT_FALSE(found.refusal("", "ok"));
    ASSERT_TRUE(found.refusal("", "x"));
    EXPECT_EQ(found.refusal("", "x")->rfind("variable x uses HDF5 external storage (" + path("secret.bin"), 0), 0u);
    EXPECT_TRUE(found.refusal("/", "alias"));
    EXPECT_NE(found.refusal("", "unseen")->find("could not be checked"), std::string::npos);

    const Dataset ds = open_netcdf_dataset(path("external.nc4"));
    EXPECT_EQ(read_ok(ds), kOk);
    const Variable* x = ds.find_variable("x");
    ASSERT_NE(x, nullptr);  // the reader lists it; the views leave it out (fs/backend.cpp)
    ASSERT_TRUE(x->source->refusal());
    std::vector<uint8_t> out(60);
    try {
        x->source->read_linear(0, 60, ByteOrder::Native, out.data());
        FAIL() << "x was read";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("external.nc4: variable x uses HDF5 external storage"), std::string::npos);
    }
    EXPECT_EQ(out, std::vector<uint8_t>(60, 0));
    size_t refused = 0;
    for (const auto& note : ds.notes) refused += note.refused && note.listed;
    EXPECT_EQ(refused, 2u);
}

TEST_F(Hdf5IndirectionTest, VirtualLayoutIsFound) {
    const auto found = walk("virtual.nc4");
    ASSERT_EQ(found.findings().size(), 1u);
    EXPECT_EQ(found.findings()[0].kind, Hdf5IndirectionKind::VirtualDataset);
    EXPECT_EQ(found.findings()[0].target, path("source.h5"));
    EXPECT_NE(found.refusal("", "x")->find("uses an HDF5 virtual layout"), std::string::npos);
    const Dataset ds = open_netcdf_dataset(path("virtual.nc4"));
    EXPECT_EQ(read_ok(ds), kOk);
    EXPECT_TRUE(ds.find_variable("x")->source->refusal());
}

TEST_F(Hdf5IndirectionTest, ExternalLinksAreFoundAnywhereAndNeverFollowed) {
    const auto found = walk("link.nc4");
    std::map<std::string, std::string> targets;  // path -> target (the walk's order is HDF5's)
    for (const auto& f : found.findings()) {
        EXPECT_EQ(f.kind, Hdf5IndirectionKind::ExternalLink);
        targets[f.path] = f.target;
    }
    EXPECT_EQ(targets, (std::map<std::string, std::string>{{"/g/deep", path("no-such-file.h5") + ":/s"},
                                                          {"/x", path("source.h5") + ":/s"}}));
    const Dataset ds = open_netcdf_dataset(path("link.nc4"));
    EXPECT_EQ(read_ok(ds), kOk);
    EXPECT_EQ(ds.find_variable("x"), nullptr);
    ASSERT_EQ(ds.notes.size(), 3u);  // the two links, and group g left out (not x's stand-in group)
    EXPECT_EQ(ds.notes[2].text, "group g left out: only the root group is presented");
    const DatasetNote& x = ds.notes[0].name == "x" ? ds.notes[0] : ds.notes[1];
    EXPECT_EQ(x.name, "x");
    EXPECT_TRUE(x.refused);
    EXPECT_FALSE(x.listed);
    EXPECT_EQ(x.text, "link /x is an HDF5 external link (" + path("source.h5") + ":/s): refused, left out");
    // netcdf-c fails a whole file whose external link leads nowhere when it
    // follows the link: opening shows that it does not.
    const Dataset dangling = open_netcdf_dataset(path("dangling.nc4"));
    EXPECT_EQ(read_ok(dangling), kOk);
}

TEST_F(Hdf5IndirectionTest, FilesWithoutIndirectionHaveNoFindingsAndGroupsAreChecked) {
    const auto found = walk("no_indirection.nc4");
    EXPECT_TRUE(found.findings().empty());
    EXPECT_FALSE(found.refusal("/a/b", "y"));
    const Dataset group = open_netcdf_dataset(path("no_indirection.nc4"), nullptr, "/a/b");
    EXPECT_FALSE(group.find_variable("y")->source->refusal());
    EXPECT_TRUE(group.notes.empty());
}

TEST_F(Hdf5IndirectionTest, GroupsNestedTooDeepRefuseTheFile) {
    try {
        walk("deep.nc4");
        FAIL() << "a 40-deep group tree was walked";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("nested deeper than 32"), std::string::npos) << e.what();
    }
    EXPECT_THROW(open_netcdf_dataset(path("deep.nc4")), SourceError);
}

}  // namespace
}  // namespace ncafs::netcdf
