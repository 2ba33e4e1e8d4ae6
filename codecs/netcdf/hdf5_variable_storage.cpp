#include "codecs/netcdf/hdf5_variable_storage.hpp"

#include <hdf5.h>

#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/hdf5_handle.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs::netcdf {

namespace {

constexpr int kMaxRank = 32;

// netCDF-4 stores a variable named like a dimension it is not the
// coordinate of under this prefix.
hid_t open_variable(hid_t file, const std::string& group, const std::string& variable) NCAFS_REQUIRES(library_mutex) {
    const std::string prefix = group.empty() || group == "/" ? "/" : group + "/";
    for (const std::string& name : {variable, "_nc4_non_coord_" + variable}) {
        const std::string path = prefix + name;
        if (H5Lexists(file, path.c_str(), H5P_DEFAULT) > 0) return H5Dopen2(file, path.c_str(), H5P_DEFAULT);
    }
    return -1;
}

// The filters of the dataset as Zarr codecs, or why they have none.
std::optional<std::string> map_filters(hid_t dcpl, uint64_t element_size, std::vector<ZarrCodec>& out) NCAFS_REQUIRES(library_mutex) {
    const int n = H5Pget_nfilters(dcpl);
    if (n < 0 || n > 16) return "its HDF5 filter pipeline cannot be read";
    for (int i = 0; i < n; ++i) {
        unsigned flags = 0, config = 0;
        size_t nvalues = 8;
        unsigned values[8] = {};
        char name[64] = {};
        const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, sizeof name,
                                               name, &config);
        if (id == H5Z_FILTER_DEFLATE) {
            out.push_back({ZarrCodec::Id::Zlib, nvalues > 0 && values[0] <= 9 ? static_cast<int>(values[0]) : 6, 1});
        } else if (id == H5Z_FILTER_SHUFFLE) {
            out.push_back({ZarrCodec::Id::Shuffle, 0, static_cast<uint32_t>(element_size)});
        } else {
            std::string what = id == H5Z_FILTER_FLETCHER32 ? "fletcher32 checksums" : "HDF5 filter " + std::to_string(id);
            if (name[0] && id != H5Z_FILTER_FLETCHER32) what += " (" + std::string(name) + ")";
            return "its chunks use " + what + ", which Zarr has no codec for";
        }
    }
    return std::nullopt;
}

// Reads the address of every chunk of the grid; unusable set on the first problem.
void read_chunk_addresses(hid_t dset, Hdf5VariableStorage& s, const std::string& shown, uint64_t file_size,
                          uint64_t max_chunks) NCAFS_REQUIRES(library_mutex) {
    const size_t rank = s.dims.size();
    std::vector<uint64_t> grid(rank);
    uint64_t cells = 1;
    for (size_t d = 0; d < rank; ++d) {
        grid[d] = s.dims[d] == 0 ? 0 : (s.dims[d] - 1) / s.chunk[d] + 1;
        auto product = checked::mul(cells, grid[d]);
        if (!product || *product > max_chunks) {
            s.unusable = "its chunk grid has more than " + std::to_string(max_chunks) + " chunks";
            return;
        }
        cells = *product;
    }
    uint64_t whole = s.element_size;  // the grid is bounded, so one chunk's bytes are too
    for (uint64_t c : s.chunk) whole = checked::mul(whole, c).value_or(UINT64_MAX);
    s.chunks.resize(cells);
    std::vector<hsize_t> coord(rank, 0);
    for (uint64_t i = 0; i < cells; ++i) {
        uint64_t rest = i;
        for (size_t d = rank; d-- > 0;) {
            coord[d] = (rest % grid[d]) * s.chunk[d];
            rest /= grid[d];
        }
        unsigned mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(dset, coord.data(), &mask, &address, &size) < 0) {
            s.unusable = "HDF5 cannot say where chunk " + std::to_string(i) + " lies";
            return;
        }
        if (address == HADDR_UNDEF || size == 0) continue;  // never written: fill
        auto end = checked::add(address, size);
        if (!end || *end > file_size) {
            s.unusable = "chunk " + std::to_string(i) + " lies beyond the end of " + shown;
            return;
        }
        if (mask != 0) {
            s.unusable = "chunk " + std::to_string(i) + " is stored without some of its filters";
            return;
        }
        if (s.filters.empty() && size != whole) {
            s.unusable = "unfiltered chunk " + std::to_string(i) + " holds " + std::to_string(size) +
                         " bytes instead of " + std::to_string(whole);
            return;
        }
        s.chunks[i] = {address, size};
    }
}

void read_contiguous(hid_t dset, hid_t dcpl, Hdf5VariableStorage& s, const std::string& shown, uint64_t file_size) NCAFS_REQUIRES(library_mutex) {
    if (H5Pget_external_count(dcpl) > 0) {
        s.unusable = "its values lie in HDF5 external storage";
        return;
    }
    uint64_t bytes = s.element_size;
    for (uint64_t d : s.dims) {
        auto product = checked::mul(bytes, d);
        if (!product) {
            s.unusable = "its size overflows";
            return;
        }
        bytes = *product;
    }
    const haddr_t address = H5Dget_offset(dset);
    s.chunks.resize(1);
    if (address == HADDR_UNDEF || bytes == 0) return;  // never written: fill
    auto end = checked::add(address, bytes);
    if (!end || *end > file_size) {
        s.unusable = "its values lie beyond the end of " + shown;
        return;
    }
    s.chunks[0] = {address, bytes};
}

}  // namespace

Hdf5VariableStorage read_hdf5_variable_storage(const std::string& hdf5_name, const std::string& shown, const std::string& group,
                              const std::string& variable, uint64_t file_size, uint64_t max_chunks) {
    LibraryLock lock;
    Hid file(H5Fopen(hdf5_name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw SourceError(shown, "HDF5 cannot open the file");
    Hid dset(open_variable(file, group, variable), H5Dclose);
    if (!dset.ok()) throw SourceError(shown, "HDF5 has no dataset for variable '" + variable + "'");
    Hdf5VariableStorage s;
    Hid type(H5Dget_type(dset), H5Tclose);
    Hid space(H5Dget_space(dset), H5Sclose);
    Hid dcpl(H5Dget_create_plist(dset), H5Pclose);
    if (!type.ok() || !space.ok() || !dcpl.ok()) throw SourceError(shown, "HDF5 cannot describe '" + variable + "'");
    s.element_size = H5Tget_size(type);
    s.big_endian = H5Tget_order(type) == H5T_ORDER_BE;
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > kMaxRank) throw SourceError(shown, "'" + variable + "' has an unreadable dataspace");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    s.dims.assign(dims.begin(), dims.end());
    const H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout == H5D_COMPACT) {
        s.layout = Hdf5VariableStorage::Layout::Compact;
        s.unusable = "its values are stored compact, inside the HDF5 object header";
    } else if (layout == H5D_CONTIGUOUS) {
        s.layout = Hdf5VariableStorage::Layout::Contiguous;
        read_contiguous(dset, dcpl, s, shown, file_size);
    } else if (layout == H5D_CHUNKED) {
        s.layout = Hdf5VariableStorage::Layout::Chunked;
        std::vector<hsize_t> chunk(static_cast<size_t>(rank));
        if (H5Pget_chunk(dcpl, rank, chunk.data()) != rank) throw SourceError(shown, "'" + variable + "' has no chunk shape");
        for (hsize_t c : chunk)
            if (c == 0) throw SourceError(shown, "'" + variable + "' has a chunk dimension of 0");
        s.chunk.assign(chunk.begin(), chunk.end());
        if (auto why = map_filters(dcpl, s.element_size, s.filters)) s.unusable = why;
        else read_chunk_addresses(dset, s, shown, file_size, max_chunks);
    } else {
        s.unusable = "its HDF5 layout is neither contiguous nor chunked";
    }
    return s;
}

}  // namespace ncafs::netcdf
