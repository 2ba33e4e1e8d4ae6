#include "codecs/netcdf/raw_chunks.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "codecs/checked_math.hpp"
#include "codecs/dataset.hpp"
#include "codecs/inflate.hpp"
#include "codecs/netcdf/hdf5_handle.hpp"
#include "io/error.hpp"

namespace ncafs::netcdf {

namespace {

constexpr int kMaxFilters = 8;
constexpr size_t kMaxShuffleSize = 1024;
std::atomic<uint64_t> decoded_count{0};

// Whether HDF5's file id is the descriptor's file (HDF5 reached it by name).
bool same_file(hid_t file, const OpenFile& opened) {
    void* handle = nullptr;
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || !handle) return false;
    struct stat st {};
    if (::fstat(*static_cast<int*>(handle), &st) != 0) return false;
    return st.st_dev == opened.identity().device && st.st_ino == opened.identity().inode;
}

// HDF5 addresses count from the end of the user block: only without one
// are they the file offsets the chunks are read at.
bool addresses_are_offsets(hid_t file) {
    Hid fcpl(H5Fget_create_plist(file), H5Pclose);
    hsize_t userblock = 1;
    return fcpl.ok() && H5Pget_userblock(fcpl, &userblock) >= 0 && userblock == 0;
}

// The filters of dcpl, when every one is decoded here.
bool read_pipeline(hid_t dcpl, size_t element_size, RawChunkPlan& plan) {
    const int n = H5Pget_nfilters(dcpl);
    if (n <= 0 || n > kMaxFilters) return false;
    for (int i = 0; i < n; ++i) {
        unsigned flags = 0, config = 0, values[8] = {};
        size_t nvalues = 8;
        const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, 0, nullptr, &config);
        if (id == H5Z_FILTER_DEFLATE) {
            if (std::count(plan.pipeline.begin(), plan.pipeline.end(), RawChunkPlan::Filter::Deflate)) return false;
            plan.pipeline.push_back(RawChunkPlan::Filter::Deflate);
        } else if (id == H5Z_FILTER_SHUFFLE) {
            plan.shuffle_size = nvalues > 0 && values[0] > 0 ? values[0] : element_size;
            if (plan.shuffle_size > kMaxShuffleSize) return false;
            plan.pipeline.push_back(RawChunkPlan::Filter::Shuffle);
        } else if (id == H5Z_FILTER_FLETCHER32) {
            plan.pipeline.push_back(RawChunkPlan::Filter::Fletcher32);
        } else {
            return false;  // szip, nbit, scaleoffset, plugins: netcdf-c decodes
        }
    }
    return true;
}

// The stored type as the netCDF type reads it: same size, integer, float or
// 1-byte text; its byte order.
bool read_type(hid_t dset, NcType type, RawChunkPlan& plan) {
    Hid t(H5Dget_type(dset), H5Tclose);
    if (!t.ok() || H5Tget_size(t) != type_size(type)) return false;
    const H5T_class_t c = H5Tget_class(t);
    if (c != H5T_INTEGER && c != H5T_FLOAT && !(c == H5T_STRING && type_size(type) == 1)) return false;
    const H5T_order_t order = H5Tget_order(t);
    plan.big_endian = order == H5T_ORDER_BE;
    if (type_size(type) > 1 && order != H5T_ORDER_BE && order != H5T_ORDER_LE) return false;
    return std::endian::native == std::endian::little || plan.big_endian;
}

bool same_extent(hid_t dset, const std::vector<uint64_t>& shape) {
    Hid space(H5Dget_space(dset), H5Sclose);
    if (!space.ok() || H5Sget_simple_extent_ndims(space) != static_cast<int>(shape.size())) return false;
    std::vector<hsize_t> dims(shape.size());
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    return std::equal(dims.begin(), dims.end(), shape.begin());
}

// The declared chunk shape and its bytes, when no more than max_bytes.
bool read_chunk_shape(hid_t dcpl, size_t rank, size_t element_size, uint64_t max_bytes, RawChunkPlan& plan) {
    if (H5Pget_layout(dcpl) != H5D_CHUNKED) return false;
    std::vector<hsize_t> chunk(rank);
    if (H5Pget_chunk(dcpl, static_cast<int>(rank), chunk.data()) != static_cast<int>(rank)) return false;
    std::optional<uint64_t> bytes = element_size;
    for (hsize_t c : chunk) {
        if (c == 0) return false;
        if (bytes) bytes = checked::mul(*bytes, c);
    }
    if (!bytes || *bytes > max_bytes) return false;
    plan.declared.assign(chunk.begin(), chunk.end());
    plan.declared_bytes = plan.inflated_bytes = *bytes;
    // A checksum computed before deflating is deflated with the chunk.
    for (RawChunkPlan::Filter f : plan.pipeline) {
        if (f == RawChunkPlan::Filter::Deflate) break;
        if (f == RawChunkPlan::Filter::Fletcher32) plan.inflated_bytes += 4;
    }
    return true;
}

uint32_t load_le32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// HDF5's fletcher32 filter, reading: checks the 4-byte sum at the end and
// returns the bytes before it. HDF5 before 1.6.3 stored the sum with each
// 16-bit half byte-swapped on little-endian machines; both forms are
// accepted, as HDF5 does.
std::span<const uint8_t> check_fletcher32(std::span<const uint8_t> in) {
    if (in.size() < 4) throw std::runtime_error("chunk shorter than its fletcher32 checksum");
    const auto data = in.first(in.size() - 4);
    const uint32_t stored = load_le32(in.data() + data.size());
    const uint32_t sum = hdf5_fletcher32(data);
    const uint32_t old_form = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
    if (stored != sum && stored != old_form) throw std::runtime_error("data error detected by the fletcher32 checksum");
    return data;
}

void swap_elements(uint8_t* p, uint64_t bytes, size_t size) {
    for (uint64_t i = 0; i + size <= bytes; i += size) std::reverse(p + i, p + i + size);
}

}  // namespace

std::unique_ptr<Hdf5ChunkFile> Hdf5ChunkFile::open(const OpenFile& file) {
    if (file.fd() < 0) return nullptr;
    const hid_t id = H5Fopen(file.proc_path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (id < 0) return nullptr;
    std::unique_ptr<Hdf5ChunkFile> opened(new Hdf5ChunkFile(id, file.path(), file.size()));
    if (!same_file(id, file) || !addresses_are_offsets(id)) return nullptr;
    return opened;
}

Hdf5ChunkFile::~Hdf5ChunkFile() {
    for (auto& [path, id] : datasets_)
        if (id >= 0) H5Dclose(id);
    H5Fclose(file_);
}

hid_t Hdf5ChunkFile::dataset_id(const std::string& path) {
    auto [it, added] = datasets_.try_emplace(path, -1);
    if (added && H5Lexists(file_, path.c_str(), H5P_DEFAULT) > 0) it->second = H5Dopen2(file_, path.c_str(), H5P_DEFAULT);
    return it->second;
}

std::optional<RawChunkPlan> Hdf5ChunkFile::plan(const std::string& group_path, const std::string& name, NcType type,
                                                const std::vector<uint64_t>& shape, uint64_t max_bytes) {
    const std::string prefix = group_path == "/" ? "/" : group_path + "/";
    RawChunkPlan plan;
    hid_t dset = -1;
    // netCDF-4 stores a variable named like a dimension it is not the
    // coordinate of under this prefix (the plain name is then the
    // dimension's scale): looked for first.
    for (const std::string& candidate : {"_nc4_non_coord_" + name, name}) {
        plan.dataset = prefix + candidate;
        if ((dset = dataset_id(plan.dataset)) >= 0) break;
    }
    if (dset < 0) return std::nullopt;
    Hid dcpl(H5Dget_create_plist(dset), H5Pclose);
    plan.type = type;
    if (!dcpl.ok() || !read_pipeline(dcpl, type_size(type), plan) || !read_type(dset, type, plan) ||
        !same_extent(dset, shape) || !read_chunk_shape(dcpl, shape.size(), type_size(type), max_bytes, plan))
        return std::nullopt;
    return plan;
}

std::optional<StoredChunk> Hdf5ChunkFile::locate(const RawChunkPlan& plan, std::span<const uint64_t> chunk_start) {
    const hid_t dset = dataset_id(plan.dataset);
    std::vector<hsize_t> offset(chunk_start.begin(), chunk_start.end());
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    if (dset < 0 || H5Dget_chunk_info_by_coord(dset, offset.data(), &mask, &address, &size) < 0)
        throw SourceError(shown_, "HDF5 cannot say where a chunk of " + plan.dataset + " lies");
    if (address == HADDR_UNDEF || size == 0 || mask != 0) return std::nullopt;
    const auto end = checked::add(address, size);
    if (!end || *end > file_size_)
        throw SourceError(shown_, "a chunk of " + plan.dataset + " lies beyond the end of the file");
    if (size > max_stored_bytes(plan))
        throw SourceError(shown_, "a chunk of " + plan.dataset + " is stored in " + std::to_string(size) +
                                      " bytes, more than a chunk of " + std::to_string(plan.declared_bytes) +
                                      " bytes can need");
    return StoredChunk{address, size};
}

uint64_t max_stored_bytes(const RawChunkPlan& plan) {
    return plan.inflated_bytes + plan.inflated_bytes / 8 + (uint64_t{1} << 20) + 4;
}

namespace {

// The two buffers a thread's chunk decodes alternate between: reused, so a
// decode neither zero-fills nor page-faults fresh memory. Released after a
// chunk larger than kKeptScratch: up to 64 FUSE threads and the pool's
// decode, and what they keep is outside cache_mem=.
constexpr size_t kKeptScratch = size_t{512} << 10;

struct Scratch {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
    std::span<uint8_t> take(size_t n) {
        if (n > size) bytes.reset(new uint8_t[n]), size = n;  // uninitialized: every byte is written before it is read
        return {bytes.get(), n};
    }
    void trim() {
        if (size > kKeptScratch) bytes.reset(), size = 0;
    }
};

thread_local Scratch scratch[2];

// The stored bytes through the filters in reverse, each into the scratch
// buffer the previous one did not write; the result may be `stored` itself.
std::span<const uint8_t> undo_filters(const RawChunkPlan& plan, std::span<const uint8_t> stored) {
    std::span<const uint8_t> current = stored;
    size_t next = 0;
    for (auto it = plan.pipeline.rbegin(); it != plan.pipeline.rend(); ++it) {
        if (*it == RawChunkPlan::Filter::Fletcher32) {
            current = check_fletcher32(current);
            continue;
        }
        std::span<uint8_t> out;
        if (*it == RawChunkPlan::Filter::Deflate) {
            out = scratch[next].take(plan.inflated_bytes);
            out = out.first(inflate_bounded_into(current, out, true));
        } else {
            out = scratch[next].take(current.size());
            unshuffle_bytes_into(current, plan.shuffle_size, out.data());
        }
        current = out;
        next ^= 1;
    }
    return current;
}

}  // namespace

void decode_raw_chunk(const RawChunkPlan& plan, std::span<const uint8_t> stored, std::span<const uint64_t> count,
                      void* dst) {
    struct Trim {
        ~Trim() { scratch[0].trim(), scratch[1].trim(); }
    } trim;
    const std::span<const uint8_t> decoded = undo_filters(plan, stored);
    if (decoded.size() != plan.declared_bytes)
        throw std::runtime_error("chunk decodes to " + std::to_string(decoded.size()) + " bytes, not " +
                                 std::to_string(plan.declared_bytes));
    const size_t esize = type_size(plan.type);
    const std::vector<uint64_t> origin(count.size(), 0);
    auto* out = static_cast<uint8_t*>(dst);
    copy_box_overlap(decoded.data(), origin, plan.declared, origin, count, esize, out);
    // Swapped where it lands: the box of `count` only, no copy of the chunk.
    if (plan.big_endian && std::endian::native == std::endian::little)
        swap_elements(out, element_count(count) * esize, esize);
    ++decoded_count;
}

uint32_t hdf5_fletcher32(std::span<const uint8_t> data) {
    const uint8_t* p = data.data();
    size_t words = data.size() / 2;
    uint32_t sum1 = 0, sum2 = 0;
    while (words) {
        size_t run = std::min<size_t>(words, 360);  // no overflow of the 32-bit sums
        words -= run;
        do {
            sum1 += static_cast<uint32_t>((uint32_t{p[0]} << 8) | p[1]);
            p += 2;
            sum2 += sum1;
        } while (--run);
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (data.size() % 2) {
        sum1 += uint32_t{*p} << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return (sum2 << 16) | sum1;
}

uint64_t raw_chunks_decoded() { return decoded_count; }

}  // namespace ncafs::netcdf
