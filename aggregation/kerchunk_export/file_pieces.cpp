#include "aggregation/kerchunk_export/file_pieces.hpp"

#include <filesystem>

#include "aggregation/kerchunk_export/classic_ranges.hpp"
#include "codecs/array_source.hpp"  // OpenFile
#include "codecs/error.hpp"
#include "codecs/sniff.hpp"
#include "aggregation/model/shape_text.hpp"

namespace ncafs::agg::kerchunk {

std::string reference_url(const OpenFile& file) {
    if (file.is_remote()) return file.path();
    return std::filesystem::absolute(file.path()).lexically_normal().string();
}

namespace {

// The storage in the master's rank: each axis at its master dimension, the
// master dimensions the variable lacks as one-element chunks (a size-1 axis
// changes no byte's place). nullopt, or why not: a size-1 axis of the
// variable that the master lacks must be chunked by 1 (else a chunk holds
// padding along it).
std::optional<std::string> to_master_rank(netcdf::Hdf5VariableStorage& s, const std::vector<int>& axis_to_master, size_t rank) {
    if (axis_to_master.empty()) return std::nullopt;
    if (axis_to_master.size() != s.dims.size()) return "its HDF5 rank differs from the variable's";
    std::vector<uint64_t> dims(rank, 1), chunk(rank, 1);
    for (size_t k = 0; k < axis_to_master.size(); ++k) {
        const int d = axis_to_master[k];
        if (d < 0) {
            if (s.dims[k] != 1 || s.chunk[k] != 1) return "its HDF5 chunks span an axis the master lacks";
            continue;
        }
        dims[static_cast<size_t>(d)] = s.dims[k];
        chunk[static_cast<size_t>(d)] = s.chunk[k];
    }
    s.dims = std::move(dims);
    s.chunk = std::move(chunk);
    return std::nullopt;
}

// The HDF5 storage of fv as a piece (p has box, label and url set).
void hdf5_piece(const FileVariable& fv, Piece& p, uint64_t max_chunks) {
    const Variable& v = *fv.variable;
    if (fv.file->is_remote()) {
        p.make_inline("a remote netCDF-4 file: HDF5 chunk addresses are read from local files only", true);
        return;
    }
    auto s = std::make_shared<netcdf::Hdf5VariableStorage>(
        netcdf::read_hdf5_variable_storage(fv.file->proc_path(), p.url, fv.group, v.name, fv.file->size(), max_chunks));
    if (s->unusable) {
        // Compact data is small and exact when computed: no conversion involved.
        p.make_inline(*s->unusable, s->layout != netcdf::Hdf5VariableStorage::Layout::Compact);
        return;
    }
    if (s->layout == netcdf::Hdf5VariableStorage::Layout::Chunked)
        if (auto why = to_master_rank(*s, fv.axis_to_master, p.count.size())) {
            p.make_inline(*why, true);
            return;
        }
    // One run: size-1 axes aside, only the number of elements matters.
    if (s->layout == netcdf::Hdf5VariableStorage::Layout::Contiguous && element_count(s->dims) == element_count(p.count)) s->dims = p.count;
    if (s->element_size != type_size(v.type)) {
        p.make_inline("its HDF5 type has " + std::to_string(s->element_size) + "-byte elements", true);
        return;
    }
    if (s->dims != p.count) {
        p.make_inline("its HDF5 extent " + shape_text(s->dims) + " differs from the variable's shape " +
                          shape_text(p.count),
                      true);
        return;
    }
    p.big_endian = s->big_endian;
    if (s->layout == netcdf::Hdf5VariableStorage::Layout::Contiguous) {
        p.kind = Piece::Kind::Runs;
        p.run = s->chunks[0].written() ? contiguous_runs(s->chunks[0].address, s->element_size) : RunFn{};
        p.hdf5 = s;  // unwritten (no run): every chunk reads as fill
        return;
    }
    p.kind = Piece::Kind::Chunks;
    p.hdf5 = std::move(s);
}

}  // namespace

Piece file_piece(const FileVariable& fv, std::vector<uint64_t> start, std::vector<uint64_t> count, std::string label,
                 uint64_t max_chunks) {
    Piece p;
    p.start = std::move(start);
    p.count = std::move(count);
    p.label = std::move(label);
    p.url = reference_url(*fv.file);
    const Variable& v = *fv.variable;
    if (auto why = v.source->refusal()) {
        p.make_inline(*why, true);
        return p;
    }
    if (v.source->type() != v.type) {
        p.make_inline("its values are converted from " + std::string(type_name(v.source->type())) + " to " +
                          std::string(type_name(v.type)),
                      true);
        return p;
    }
    switch (sniff_file(*fv.file)) {
        case FileFormat::Cdf:
            p.kind = Piece::Kind::Runs;
            p.big_endian = true;
            p.run = classic_runs(fv.source_again);
            break;
        case FileFormat::Hdf5:
            hdf5_piece(fv, p, max_chunks);
            break;
        default:
            p.make_inline("its format (neither netCDF classic nor netCDF-4) has no byte ranges to reference", true);
    }
    return p;
}

}  // namespace ncafs::agg::kerchunk
