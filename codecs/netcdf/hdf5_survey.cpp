#include "codecs/netcdf/hdf5_survey.hpp"

#include <algorithm>
#include <bit>

#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/hdf5_handle.hpp"
#include "codecs/netcdf/library_calls.hpp"

namespace ncafs::netcdf {

namespace {

constexpr int kMaxFilters = 8;
constexpr size_t kMaxShuffleSize = 1024;
constexpr size_t kMaxRank = 32;

// HDF5 addresses count from the end of the user block: only without one
// are they the file offsets the chunks are read at.
bool addresses_are_offsets(hid_t file) NCAFS_REQUIRES(library_mutex) {
    Hid fcpl(H5Fget_create_plist(file), H5Pclose);
    hsize_t userblock = 1;
    return fcpl.ok() && H5Pget_userblock(fcpl, &userblock) >= 0 && userblock == 0;
}

// The stored type, when an integer, a float or 1-byte text of a known order.
bool read_type(hid_t dset, Hdf5Storage& s) NCAFS_REQUIRES(library_mutex) {
    Hid t(H5Dget_type(dset), H5Tclose);
    if (!t.ok()) return false;
    const H5T_class_t c = H5Tget_class(t);
    s.type_size = H5Tget_size(t);
    if (c != H5T_INTEGER && c != H5T_FLOAT && !(c == H5T_STRING && s.type_size == 1)) return false;
    if (s.type_size == 0 || s.type_size > 8) return false;
    const H5T_order_t order = H5Tget_order(t);
    s.big_endian = order == H5T_ORDER_BE;
    if (s.type_size > 1 && order != H5T_ORDER_BE && order != H5T_ORDER_LE) return false;
    return std::endian::native == std::endian::little || s.big_endian;
}

// The filters of dcpl, when every one is decoded by ncafs.
bool read_pipeline(hid_t dcpl, Hdf5Storage& s) NCAFS_REQUIRES(library_mutex) {
    const int n = H5Pget_nfilters(dcpl);
    if (n < 0 || n > kMaxFilters) return false;
    for (int i = 0; i < n; ++i) {
        unsigned flags = 0, config = 0, values[8] = {};
        size_t nvalues = 8;
        const H5Z_filter_t id =
            H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, 0, nullptr, &config);
        if (id == H5Z_FILTER_DEFLATE) {
            if (std::count(s.pipeline.begin(), s.pipeline.end(), Hdf5Storage::Filter::Deflate)) return false;
            s.pipeline.push_back(Hdf5Storage::Filter::Deflate);
        } else if (id == H5Z_FILTER_SHUFFLE) {
            s.shuffle_size = nvalues > 0 && values[0] > 0 ? values[0] : s.type_size;
            if (s.shuffle_size > kMaxShuffleSize) return false;
            s.pipeline.push_back(Hdf5Storage::Filter::Shuffle);
        } else if (id == H5Z_FILTER_FLETCHER32) {
            s.pipeline.push_back(Hdf5Storage::Filter::Fletcher32);
        } else {
            return false;  // szip, nbit, scaleoffset, plugins: netcdf-c decodes
        }
    }
    return true;
}

// Extents and chunk shape; the number of chunk positions, or nullopt.
std::optional<uint64_t> read_shape(hid_t dset, hid_t dcpl, Hdf5Storage& s) NCAFS_REQUIRES(library_mutex) {
    if (H5Pget_layout(dcpl) != H5D_CHUNKED) return std::nullopt;
    Hid space(H5Dget_space(dset), H5Sclose);
    const int rank = space.ok() ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank <= 0 || rank > static_cast<int>(kMaxRank)) return std::nullopt;
    std::vector<hsize_t> dims(static_cast<size_t>(rank)), chunk(static_cast<size_t>(rank));
    if (H5Sget_simple_extent_dims(space, dims.data(), nullptr) != rank || H5Pget_chunk(dcpl, rank, chunk.data()) != rank)
        return std::nullopt;
    std::optional<uint64_t> positions = 1;
    for (int d = 0; d < rank; ++d) {
        if (chunk[d] == 0) return std::nullopt;
        if (positions) positions = checked::mul(*positions, dims[d] == 0 ? 0 : (dims[d] - 1) / chunk[d] + 1);
    }
    s.dims.assign(dims.begin(), dims.end());
    s.chunk.assign(chunk.begin(), chunk.end());
    return positions;
}

// Where each chunk lies, C order over the grid (false: HDF5 cannot tell).
bool read_chunk_index(hid_t dset, Hdf5Storage& s, uint64_t positions) NCAFS_REQUIRES(library_mutex) {
    const size_t rank = s.dims.size();
    s.chunks.resize(positions);
    std::vector<hsize_t> offset(rank, 0);
    for (uint64_t i = 0; i < positions; ++i) {
        unsigned mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(dset, offset.data(), &mask, &address, &size) < 0) return false;
        if (address != HADDR_UNDEF && size > 0)
            s.chunks[i] = mask == 0 ? StoredChunk{address, size} : StoredChunk{kPartlyFilteredChunk, 0};
        for (size_t d = rank; d-- > 0;) {
            offset[d] += s.chunk[d];
            if (offset[d] < s.dims[d]) break;
            offset[d] = 0;
        }
    }
    return true;
}

// The storage of one dataset, when ncafs decodes its chunks and the survey's
// budget of chunk positions allows; else nullptr (netcdf-c reads it, in a helper).
std::shared_ptr<const Hdf5Storage> read_storage(hid_t dset, hid_t dcpl, uint64_t& budget)
    NCAFS_REQUIRES(library_mutex) {
    auto s = std::make_shared<Hdf5Storage>();
    if (!read_type(dset, *s) || !read_pipeline(dcpl, *s)) return nullptr;
    const auto positions = read_shape(dset, dcpl, *s);
    if (!positions || *positions > budget) return nullptr;
    budget -= *positions;
    if (!read_chunk_index(dset, *s, *positions)) return nullptr;
    return s;
}

// Where a contiguous dataset without filters lies, when its type is one
// ncafs reads (nullopt: netcdf-c reads it, in a helper).
std::optional<Hdf5Contiguous> read_contiguous(hid_t dset, hid_t dcpl) NCAFS_REQUIRES(library_mutex) {
    if (H5Pget_layout(dcpl) != H5D_CONTIGUOUS || H5Pget_nfilters(dcpl) != 0) return std::nullopt;
    Hdf5Storage type;
    if (!read_type(dset, type)) return std::nullopt;
    Hdf5Contiguous c{type.type_size, type.big_endian, {}};
    const haddr_t address = H5Dget_offset(dset);
    if (address != HADDR_UNDEF) c.at = StoredChunk{address, H5Dget_storage_size(dset)};
    return c;
}

}  // namespace

namespace {

Hdf5Survey survey_open_file(hid_t file, const std::string& shown, uint64_t file_size) NCAFS_REQUIRES(library_mutex) {
    Hdf5Survey out;
    out.file_size = file_size;
    const bool offsets = addresses_are_offsets(file);
    uint64_t budget = kMaxSurveyedChunks;
    auto found = Hdf5Indirections::walk(file, shown, [&](int64_t dset, int64_t dcpl, const std::string& at) {
        library_mutex.assert_held();  // called by the walk, under the caller's lock
        if (!offsets) return;
        if (auto s = read_storage(dset, dcpl, budget)) out.storage.emplace(at, std::move(s));
        else if (auto c = read_contiguous(dset, dcpl)) out.contiguous.emplace(at, *c);
    });
    if (hdf5_indirection_check_enabled()) out.indirections = std::move(found);
    return out;
}

}  // namespace

std::optional<Hdf5Survey> Hdf5Survey::take(const std::string& path, const std::string& shown, uint64_t file_size) {
    Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) {
        if (H5Fis_hdf5(path.c_str()) <= 0) return std::nullopt;
        throw SourceError(shown, "HDF5 cannot open it to check for external storage");
    }
    return survey_open_file(file, shown, file_size);
}

std::optional<Hdf5Survey> Hdf5Survey::take_image(const std::vector<char>& image, const std::string& shown) {
    static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    // The signature at 0 (no user block, which netCDF-4 files do not use); else not HDF5.
    if (image.size() < sizeof kSignature || !std::equal(kSignature, kSignature + 8, image.begin())) return std::nullopt;
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    static uint64_t images = 0;  // a name of its own: HDF5 shares files opened by one name
    const std::string name = "ncafs-image-" + std::to_string(++images);
    if (!fapl.ok() || H5Pset_fapl_core(fapl, 1 << 16, 0) < 0 || H5Pset_file_image(fapl, const_cast<char*>(image.data()), image.size()) < 0)
        throw SourceError(shown, "HDF5 cannot take its bytes to check for external storage");
    Hid file(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
    if (!file.ok()) throw SourceError(shown, "HDF5 cannot open it to check for external storage");
    return survey_open_file(file, shown, image.size());
}

}  // namespace ncafs::netcdf
