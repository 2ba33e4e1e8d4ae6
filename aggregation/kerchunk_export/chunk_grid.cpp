#include "aggregation/kerchunk_export/chunk_grid.hpp"
#include "aggregation/model/shape_text.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace ncafs::agg::kerchunk {

namespace {

uint64_t chunk_bytes(const std::vector<uint64_t>& chunk, uint64_t element_size) {
    uint64_t n = element_size;
    for (uint64_t c : chunk) n = c != 0 && n > UINT64_MAX / c ? UINT64_MAX : n * c;
    return n;
}

// Pieces of one kind, the first of them setting what the others must match.
std::vector<Piece*> of_kind(const std::vector<Piece*>& pieces, Piece::Kind kind) {
    std::vector<Piece*> out;
    for (Piece* p : pieces)
        if (p->kind == kind) out.push_back(p);
    return out;
}

ChunkGrid hdf5_grid(const std::vector<uint64_t>& shape, const std::vector<Piece*>& pieces) {
    auto chunked = of_kind(pieces, Piece::Kind::Chunks);
    const Piece& first = *chunked.front();
    ChunkGrid g{first.hdf5->chunk, first.hdf5->filters, first.big_endian};
    for (Piece* p : pieces) {
        if (p->kind == Piece::Kind::Runs) {
            p->make_inline("its values are stored unchunked while other partitions use HDF5 chunks", true);
            continue;
        }
        if (p->kind != Piece::Kind::Chunks) continue;
        if (p->hdf5->chunk != g.chunk || p->hdf5->filters != g.filters || p->big_endian != g.big_endian) {
            p->make_inline("its HDF5 chunks " + shape_text(p->hdf5->chunk) + " (or filters, or byte order) differ from " +
                               first.label + "'s " + shape_text(g.chunk),
                           true);
            continue;
        }
        for (size_t d = 0; d < shape.size(); ++d) {
            const bool starts = p->start[d] % g.chunk[d] == 0;
            const bool ends = p->count[d] % g.chunk[d] == 0 || p->start[d] + p->count[d] == shape[d];
            if (!starts || !ends) {
                p->make_inline("its HDF5 chunks " + shape_text(g.chunk) + " do not tile the master array at its box " +
                                   shape_text(p->start) + " + " + shape_text(p->count),
                               true);
                break;
            }
        }
    }
    return g;
}

// The runs grid before it is tested: gcd of the boundaries, whole inner dims.
std::vector<uint64_t> runs_chunk(const std::vector<uint64_t>& shape, const std::vector<Box>& boxes) {
    const size_t rank = shape.size();
    std::vector<uint64_t> chunk(rank, 1);
    size_t d = rank;
    while (d-- > 0) {
        const uint64_t whole = boxes.front().count[d];
        bool same = whole > 0;
        for (const Box& b : boxes) same = same && b.count[d] == whole && b.start[d] % whole == 0;
        if (same) {
            chunk[d] = whole;
            continue;
        }
        uint64_t g = 0;
        for (const Box& b : boxes) g = std::gcd(g, std::gcd(b.start[d], b.count[d]));
        chunk[d] = std::max<uint64_t>(g, 1);
        break;  // outer dimensions: one index a chunk
    }
    return chunk;
}

// Splits the outermost dimension that is more than one index long: to its
// largest divisor under the byte bound, or (bound false) to one index.
bool split_outer(std::vector<uint64_t>& chunk, uint64_t element_size, bool bound) {
    for (size_t d = 0; d < chunk.size(); ++d) {
        if (chunk[d] <= 1) continue;
        const uint64_t c = chunk[d];
        chunk[d] = 1;
        const uint64_t rest = std::max<uint64_t>(chunk_bytes(chunk, element_size), 1);
        uint64_t q = bound ? std::min(c - 1, kMaxChunkBytes / rest) : 1;
        while (q > 1 && c % q != 0) --q;
        chunk[d] = std::max<uint64_t>(q, 1);
        return true;
    }
    return false;
}

// True when the first chunk of every run piece is one run of its file.
bool runs_hold(const std::vector<Piece*>& runs, const std::vector<uint64_t>& chunk) {
    uint64_t n = 1;
    for (uint64_t c : chunk) n *= c;
    for (Piece* p : runs)
        if (p->run && !p->run(0, n)) return false;
    return true;
}

ChunkGrid runs_grid(const std::vector<uint64_t>& shape, uint64_t element_size, const std::vector<Piece*>& pieces,
                    const std::vector<Box>& boxes) {
    auto runs = of_kind(pieces, Piece::Kind::Runs);
    ChunkGrid g{runs_chunk(shape, boxes), {}, runs.front()->big_endian};
    for (Piece* p : runs)
        if (p->big_endian != g.big_endian) p->make_inline("its byte order differs from " + runs.front()->label + "'s", true);
    runs = of_kind(pieces, Piece::Kind::Runs);
    while (chunk_bytes(g.chunk, element_size) > kMaxChunkBytes && split_outer(g.chunk, element_size, true)) {
    }
    while (!runs_hold(runs, g.chunk))
        if (!split_outer(g.chunk, element_size, false)) {
            for (Piece* p : runs)
                if (p->run && !p->run(0, 1)) p->make_inline("its bytes are not one run per chunk", true);
            break;
        }
    return g;
}

}  // namespace

ChunkGrid choose_grid(const std::vector<uint64_t>& shape, uint64_t element_size, const std::vector<Piece*>& pieces,
                      const std::vector<Box>& boxes) {
    if (!of_kind(pieces, Piece::Kind::Chunks).empty()) return hdf5_grid(shape, pieces);
    if (!of_kind(pieces, Piece::Kind::Runs).empty() && !boxes.empty()) return runs_grid(shape, element_size, pieces, boxes);
    ChunkGrid g;
    g.chunk.assign(shape.size(), 1);
    for (size_t d = 1; d < shape.size(); ++d) g.chunk[d] = std::max<uint64_t>(shape[d], 1);
    if (!shape.empty()) {
        const uint64_t row = std::max<uint64_t>(chunk_bytes(g.chunk, element_size), 1);
        g.chunk[0] = std::clamp<uint64_t>(kMaxChunkBytes / row, 1, std::max<uint64_t>(shape[0], 1));
    }
    return g;
}

std::vector<uint64_t> chunks_per_dim(const std::vector<uint64_t>& shape, const std::vector<uint64_t>& chunk) {
    std::vector<uint64_t> n(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) n[d] = shape[d] == 0 ? 0 : (shape[d] - 1) / chunk[d] + 1;
    return n;
}

}  // namespace ncafs::agg::kerchunk
