// Chunks of netCDF-4 variables decoded outside netcdf-c (codecs/netcdf/
// raw_chunks.hpp): every variable netCDF4-python and h5py write at test time
// (deflate, shuffle, fletcher32, chunk shapes with partial edge chunks,
// chunks never written, big-endian storage, unfiltered chunks, contiguous
// storage of both byte orders and never written, a filter left to netcdf-c) read
// through the view's source and compared byte for byte with what h5py reads
// from the same file; concurrent readers; stored bytes flipped and an
// inflate bomb give an error naming the file and the variable.
#include <gtest/gtest.h>
#include <dirent.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/netcdf/decoded_chunk_cache.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/netcdf/raw_chunks.hpp"
#include "io/error.hpp"
#include "chunk_test_suite.hpp"

namespace ncafs::netcdf {
namespace {

namespace fs = std::filesystem;

// values.nc: the variables; NAME.bin: h5py's reading of NAME, native order;
// fast.txt / slow.txt / flat.txt: which variables take the raw path / stay
// with netcdf-c / are read contiguous by pread.
constexpr const char* kWriter = R"PY(
import os, sys, zlib
import h5py, netCDF4, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
fast, slow, flat = [], [], []
with netCDF4.Dataset(os.path.join(d, "values.nc"), "w", format="NETCDF4") as ds:
    ds.createDimension("t", None); ds.createDimension("y", 37); ds.createDimension("x", 53)
    ds.createDimension("n", 5000)
    def var(name, dtype, dims, data, **kw):
        v = ds.createVariable(name, dtype, dims, **kw)
        v[:] = data
        return v
    f32 = rng.normal(size=(20, 37, 53)).astype("f4")
    var("deflate", "f4", ("t", "y", "x"), f32, zlib=True, chunksizes=(3, 16, 32))
    var("shuffled", "f8", ("t", "y", "x"), f32.astype("f8") * 1e7, zlib=True, shuffle=True, chunksizes=(4, 37, 20))
    var("checked", "i4", ("t", "y", "x"), (f32 * 1000).astype("i4"), zlib=True, shuffle=True, fletcher32=True,
        chunksizes=(3, 9, 53))
    var("bigend", ">i2", ("t", "y", "x"), (f32 * 100).astype("i2"), zlib=True, endian="big", chunksizes=(6, 20, 20))
    var("line", "u8", ("n",), np.arange(5000, dtype="u8") * 977, zlib=True, chunksizes=(700,))
    # Chunks of 600 KiB: above what a thread's scratch buffers keep (raw_chunks.cpp).
    ds.createDimension("w", 300000)
    var("wide", "f4", ("w",), rng.normal(size=300000).astype("f4"), zlib=True, shuffle=True, chunksizes=(150000,))
    fill = ds.createVariable("holes", "f4", ("t", "y", "x"), zlib=True, chunksizes=(4, 16, 16), fill_value=-7.5)
    fill[0:4, 0:16, 0:16] = f32[0:4, 0:16, 0:16]
    fill[12:20, 20:37, 30:53] = f32[12:20, 20:37, 30:53]
    var("text", "S1", ("t", "y", "x"), np.full((20, 37, 53), b"q"), zlib=True, chunksizes=(10, 37, 53))
    # Named like a dimension it does not index: stored as _nc4_non_coord_y.
    var("y", "f4", ("t", "x"), f32[:, 0, :] + 1, zlib=True, chunksizes=(20, 53))
    # Contiguous (read by pread, swapped), never written (its fill value), chunks without filters.
    var("flat", "f8", ("y", "x"), f32[0].astype("f8"), contiguous=True)
    var("flat_big", ">i4", ("y", "x"), (f32[1] * 1000).astype(">i4"), contiguous=True, endian="big")
    ds.createVariable("flat_empty", "f4", ("y", "x"), contiguous=True, fill_value=-7.5)
    var("unfiltered_chunks", "i2", ("t", "y", "x"), (f32 * 100).astype("i2"), chunksizes=(5, 37, 53))
    fast += ["deflate", "shuffled", "checked", "bigend", "line", "wide", "holes", "text", "y", "unfiltered_chunks"]
    flat += ["flat", "flat_big", "flat_empty"]
    g = ds.createGroup("g")
    inner = g.createVariable("inner", "f8", ("t", "y", "x"), zlib=True, chunksizes=(2, 37, 53))
    inner[:] = f32.astype("f8") * 3
    (f32.astype("f8") * 3).astype("=f8").tofile(os.path.join(d, "g_inner.bin"))
# (Chunks of at least 4 KiB: smaller ones are left to HDF5, chunked_read.hpp.)
# An HDF5 filter netcdf-c reads but raw_chunks does not decode: scaleoffset.
with h5py.File(os.path.join(d, "other.nc"), "w") as f:
    ints = (rng.normal(size=(70, 130)) * 500).astype("i4")
    f.create_dataset("scaled", data=ints, chunks=(32, 64), scaleoffset=0, compression="gzip")
    f.create_dataset("gz", data=ints, chunks=(32, 64), compression="gzip", fillvalue=3)
    g = f.create_dataset("sparse", shape=(128, 128), dtype="i2", chunks=(64, 64), compression="gzip", fillvalue=-3)
    g[0:64, 64:128] = 11
    slow += ["scaled"]
    fast += ["gz", "sparse"]
for name in ("values.nc", "other.nc"):
    with h5py.File(os.path.join(d, name), "r") as f:
        for v in f.values():
            shadowed = "_nc4_non_coord_" + v.name.strip("/") in f  # then only a dimension's scale
            wanted = v.name.strip("/").replace("_nc4_non_coord_", "") in fast + slow + flat
            if isinstance(v, h5py.Dataset) and v.ndim > 0 and not shadowed and wanted:
                data = v[...]
                if data.dtype.kind != "S":
                    data = data.astype(data.dtype.newbyteorder("="))
                data.tofile(os.path.join(d, v.name.strip("/").replace("_nc4_non_coord_", "") + ".bin"))
open(os.path.join(d, "fast.txt"), "w").write("\n".join(fast))
open(os.path.join(d, "slow.txt"), "w").write("\n".join(slow))
open(os.path.join(d, "flat.txt"), "w").write("\n".join(flat))
# Hostile copies: the stored bytes of one chunk flipped; a chunk of 4 KiB
# whose zlib stream inflates to 64 MiB.
import shutil
shutil.copy(os.path.join(d, "values.nc"), os.path.join(d, "flipped.nc"))
with h5py.File(os.path.join(d, "values.nc"), "r") as f:
    info = f["deflate"].id.get_chunk_info(3)
with open(os.path.join(d, "flipped.nc"), "r+b") as out:
    out.seek(info.byte_offset + info.size // 2)
    b = out.read(8)
    out.seek(info.byte_offset + info.size // 2)
    out.write(bytes(x ^ 0x5A for x in b))
with h5py.File(os.path.join(d, "bomb.nc"), "w") as f:
    b = f.create_dataset("bomb", shape=(8, 1024), dtype="f4", chunks=(1, 1024), compression="gzip")
    b[:] = 1
    b.id.write_direct_chunk((3, 0), zlib.compress(bytes(64 << 20), 9))
)PY";

class RawChunksTest : public test::ChunkTestSuite<RawChunksTest> {
public:
    static constexpr const char* kScript = kWriter;
    static constexpr const char* kPrefix = "ncafs-raw-chunks";

protected:
    static std::vector<std::string> lines(const std::string& name) {
        std::ifstream in(path(name));
        std::vector<std::string> out;
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(line);
        return out;
    }
    static std::vector<uint8_t> expected(const std::string& name) {
        std::ifstream in(path(name + ".bin"), std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    // The box read through src against the same box of the whole array `all`.
    static void check_box(const ArraySource& src, const std::vector<uint8_t>& all, const std::vector<uint64_t>& start,
                          const std::vector<uint64_t>& count, const std::string& name) {
        const size_t esize = type_size(src.type());
        const auto& shape = src.shape();
        std::vector<uint8_t> out(element_count(count) * esize);
        src.read(start, count, ByteOrder::Native, out.data());
        std::vector<uint8_t> want(out.size());
        std::vector<uint64_t> origin(shape.size(), 0);
        copy_box_overlap(all.data(), origin, shape, start, count, esize, want.data());
        ASSERT_EQ(out, want) << name << " box at " << start[0];
    }
    static void random_boxes(const ArraySource& src, const std::vector<uint8_t>& all, unsigned seed, int n,
                             const std::string& name) {
        std::mt19937 rng(seed);
        const auto& shape = src.shape();
        for (int k = 0; k < n; ++k) {
            std::vector<uint64_t> start(shape.size()), count(shape.size());
            for (size_t d = 0; d < shape.size(); ++d) {
                start[d] = rng() % shape[d];
                count[d] = 1 + rng() % std::min<uint64_t>(shape[d] - start[d], 40);
            }
            check_box(src, all, start, count, name);
        }
    }
    static const std::vector<uint64_t> whole_origin(const ArraySource& src) {
        return std::vector<uint64_t>(src.shape().size(), 0);
    }
    static const ArraySource* find(const std::vector<Dataset>& sets, const std::string& name) {
        for (const auto& ds : sets)
            for (const auto& v : ds.variables)
                if (v.name == name) return v.source.get();
        return nullptr;
    }
};

size_t open_descriptors() {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

TEST_F(RawChunksTest, EveryVariableAgreesWithH5pyAndTheRightOnesDecodeOutsideNetcdfC) {
    std::vector<Dataset> sets;
    sets.push_back(open_netcdf_dataset(OpenFile::open(path("values.nc"))));
    sets.push_back(open_netcdf_dataset(OpenFile::open(path("other.nc"))));
    for (const auto& list : {"fast.txt", "slow.txt", "flat.txt"})
        for (const std::string& name : lines(list)) {
            SCOPED_TRACE(name);
            const ArraySource* src = find(sets, name);
            ASSERT_NE(src, nullptr);
            const auto all = expected(name);
            ASSERT_EQ(all.size(), element_count(src->shape()) * type_size(src->type()));
            const bool fast = std::string(list) == "fast.txt";
            const auto* netcdf = dynamic_cast<const NetcdfVariableSource*>(src);
            ASSERT_NE(netcdf, nullptr);
            EXPECT_EQ(netcdf->reads_raw_chunks(), fast) << name;
            EXPECT_EQ(netcdf->reads_contiguous(), std::string(list) == "flat.txt") << name;
            const uint64_t before = raw_chunks_decoded();
            check_box(*src, all, whole_origin(*src), src->shape(), name);  // cold: every chunk
            // (Decode-ahead of earlier variables may count too: only "some" is checked.)
            if (fast) EXPECT_GT(raw_chunks_decoded() - before, 0u) << name << " did not take the raw path";
            DecodedChunkCache::shared().clear();
            random_boxes(*src, all, 3, 60, name);  // cold and warm boxes, edges included
        }
}

TEST_F(RawChunksTest, AVariableOfAGroupDecodesOutsideNetcdfC) {
    auto ds = open_netcdf_dataset(OpenFile::open(path("values.nc")), nullptr, "/g");
    const uint64_t before = raw_chunks_decoded();
    check_box(source(ds, "inner"), expected("g_inner"), {0, 0, 0}, {20, 37, 53}, "inner");
    EXPECT_GT(raw_chunks_decoded() - before, 0u);
}

TEST_F(RawChunksTest, TheHdf5FileIdCostsNoDescriptor) {
    const size_t before = open_descriptors();
    auto ds = open_netcdf_dataset(OpenFile::open(path("values.nc")));
    const size_t opened = open_descriptors();
    check_box(source(ds, "deflate"), expected("deflate"), {0, 0, 0}, {20, 37, 53}, "deflate");
    EXPECT_EQ(open_descriptors(), opened);
    // Ours and netcdf-c's (HDF5 shares netcdf-c's open file rather than opening it again).
    EXPECT_LE(opened - before, 2u);
}

TEST_F(RawChunksTest, ConcurrentReadersAgree) {
    auto& cache = DecodedChunkCache::shared();
    cache.set_capacity(256 << 10);  // evicts all the time
    auto ds = open_netcdf_dataset(OpenFile::open(path("values.nc")));
    std::vector<std::thread> readers;
    std::atomic<int> failures{0};
    const std::vector<std::string> names = {"deflate", "shuffled", "checked", "holes"};
    for (unsigned i = 0; i < 8; ++i)
        readers.emplace_back([&, i] {
            const std::string& name = names[i % names.size()];
            try {
                random_boxes(source(ds, name), expected(name), 100 + i, 80, name);
            } catch (const std::exception& e) {
                ADD_FAILURE() << name << ": " << e.what();
            }
            if (::testing::Test::HasFailure()) ++failures;
        });
    for (auto& r : readers) r.join();
    EXPECT_EQ(failures, 0);
    EXPECT_LE(cache.weight(), cache.capacity());
    cache.set_capacity(DecodedChunkCache::kDefaultCapacity);
}

// The error of reading `name` whole from `file`; empty when the read succeeded.
std::string read_error(const std::string& file, const std::string& name) {
    auto ds = open_netcdf_dataset(OpenFile::open(file));
    for (const auto& v : ds.variables) {
        if (v.name != name) continue;
        std::vector<uint8_t> out(element_count(v.source->shape()) * type_size(v.source->type()));
        try {
            v.source->read(std::vector<uint64_t>(v.source->shape().size(), 0), v.source->shape(), ByteOrder::Native,
                           out.data());
        } catch (const SourceError& e) {
            return e.what();
        }
        return "";
    }
    return "no variable " + name;
}

TEST_F(RawChunksTest, FlippedStoredBytesAreAnErrorNamingFileAndVariable) {
    const std::string error = read_error(path("flipped.nc"), "deflate");
    EXPECT_NE(error.find(path("flipped.nc")), std::string::npos) << error;
    EXPECT_NE(error.find("variable deflate"), std::string::npos) << error;
    EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
    // The other chunks still read.
    auto ds = open_netcdf_dataset(OpenFile::open(path("flipped.nc")));
    check_box(source(ds, "deflate"), expected("deflate"), {0, 0, 0}, {3, 16, 16}, "deflate");
}

TEST_F(RawChunksTest, AnInflateBombStopsAtTheChunkSize) {
    const std::string error = read_error(path("bomb.nc"), "bomb");
    EXPECT_NE(error.find(path("bomb.nc")), std::string::npos) << error;
    EXPECT_NE(error.find("variable bomb"), std::string::npos) << error;
    EXPECT_NE(error.find("more than 4096 bytes"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncafs::netcdf
