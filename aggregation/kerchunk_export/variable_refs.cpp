#include "aggregation/kerchunk_export/variable_refs.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "aggregation/kerchunk_export/chunk_grid.hpp"
#include "aggregation/kerchunk_export/file_pieces.hpp"
#include "aggregation/kerchunk_export/fragment_pieces.hpp"
#include "aggregation/kerchunk_export/inline_chunks.hpp"
#include "aggregation/kerchunk_export/zarr_values.hpp"
#include "aggregation/kerchunk_export/zarr_metadata.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "codecs/array_source.hpp"  // OpenFile
#include "codecs/error.hpp"

namespace ncafs::agg::kerchunk {

namespace {

constexpr uint64_t kMaxInlineChunkBytes = uint64_t{1} << 30;
// A coordinate variable up to this size is stored inline whole: one key
// instead of one per record, and readers need it at once anyway.
constexpr uint64_t kSmallCoordinateBytes = uint64_t{1} << 20;

// Thrown inside the chunk walk: the variable is left out for this reason.
struct LeftOut {
    std::string reason;
    bool converted = false;  // --inline-converted would have written it
};

std::string box_text(const Box& b) {
    std::string t = "[";
    for (size_t i = 0; i < b.start.size(); ++i) t += (i ? ", " : "") + std::to_string(b.start[i]);
    return t + "]";
}

bool inside(const Box& b, const Piece& p) {
    for (size_t d = 0; d < b.start.size(); ++d)
        if (b.start[d] < p.start[d] || b.start[d] + b.count[d] > p.start[d] + p.count[d]) return false;
    return true;
}

// Whether box holds the point (an empty box holds none).
bool holds(const Box& box, const std::vector<uint64_t>& point) {
    for (size_t d = 0; d < point.size(); ++d)
        if (point[d] < box.start[d] || point[d] - box.start[d] >= box.count[d]) return false;
    return true;
}

// The pieces of a variable and how to find the one holding a chunk.
struct VariablePieces {
    std::vector<std::optional<Piece>> pieces;
    std::vector<Box> boxes;                      // every fragment's box
    const AggregatedSource* aggregated = nullptr;  // null: one piece, the whole variable
};

bool small_coordinate(const Dataset& ds, const Variable& v, const std::vector<uint64_t>& shape) {
    return v.dimids.size() == 1 && ds.dimensions.at(v.dimids[0]).name == v.name &&
           shape[0] <= kSmallCoordinateBytes / type_size(v.type);
}

VariablePieces pieces_of(const Dataset& ds, const Variable& v, const std::vector<uint64_t>& shape,
                         const DatasetOrigin& origin, const ExportOptions& options) {
    VariablePieces vp;
    vp.aggregated = dynamic_cast<const AggregatedSource*>(v.source.get());
    if (small_coordinate(ds, v, shape)) {
        vp.aggregated = nullptr;
        Piece p;
        p.start = {0};
        p.count = shape;
        p.make_inline("a small coordinate variable", false);
        vp.pieces.push_back(std::move(p));
        vp.boxes.push_back({{0}, shape});
        return vp;
    }
    if (vp.aggregated) {
        FragmentPieces fp = fragment_pieces(*vp.aggregated, options.max_chunks);
        if (fp.unreadable) throw LeftOut{"a partition cannot be read: " + *fp.unreadable};
        vp.pieces = std::move(fp.pieces);
        for (const Fragment& f : vp.aggregated->aggregate().fragments) vp.boxes.push_back({f.start, f.count});
        return vp;
    }
    Piece p;
    if (origin.aggregation || !origin.file) {
        p.start.assign(shape.size(), 0);
        p.count = shape;
        p.make_inline("held in the aggregation file itself", false);
    } else {
        auto source = v.source;
        p = file_piece({origin.file, nullptr, &v, "", [source] { return source; }},
                       std::vector<uint64_t>(shape.size(), 0), shape, origin.file->path(), options.max_chunks);
    }
    vp.pieces.push_back(std::move(p));
    vp.boxes.push_back({vp.pieces[0]->start, vp.pieces[0]->count});
    return vp;
}

// One element of the fill (native order) a chunk is padded with and an
// absent chunk reads as: the master's fill, else _FillValue, else the
// type's default.
std::vector<uint8_t> fill_element(const Variable& v, const AggregatedSource* aggregated) {
    if (aggregated) return aggregated->aggregate().fill;
    const size_t size = type_size(v.type);
    if (const Attribute* a = v.find_attribute("_FillValue"); a && a->type == v.type && a->values.size() >= size)
        return {a->values.begin(), a->values.begin() + static_cast<long>(size)};
    auto big = default_fill_big_endian(v.type);
    std::vector<uint8_t> e(big.begin(), big.begin() + static_cast<long>(size));
    swap_from_big_endian(v.type, e.data(), 1);
    return e;
}

class ChunkWalk {
public:
    // out null: a first pass that only decides (throws LeftOut), reading no values.
    ChunkWalk(const Variable& v, const std::vector<uint64_t>& shape, VariablePieces& vp, const ChunkGrid& grid,
              const ExportOptions& options, RefsWriter* out)
        : v_(v), shape_(shape), vp_(vp), grid_(grid), options_(options), out_(out), fill_(fill_element(v, vp.aggregated)) {}

    // Returns whether some chunk was left absent (reads as fill).
    bool run() {
        const auto per_dim = chunks_per_dim(shape_, grid_.chunk);
        const uint64_t cells = element_count(per_dim);
        if (cells > options_.max_chunks)
            throw LeftOut{std::to_string(cells) + " chunks, more than the bound of " + std::to_string(options_.max_chunks)};
        const size_t rank = shape_.size();
        std::vector<uint64_t> index(rank, 0);
        // Reused from chunk to chunk: millions of them allocate nothing.
        Box b{std::vector<uint64_t>(rank), std::vector<uint64_t>(rank)};
        std::string key;
        for (uint64_t c = 0; c < cells; ++c) {
            key.assign(v_.name);
            key += '/';
            for (size_t d = 0; d < rank; ++d) {
                b.start[d] = index[d] * grid_.chunk[d];
                b.count[d] = std::min(grid_.chunk[d], shape_[d] - b.start[d]);
                if (d) key += '.';
                key += std::to_string(index[d]);
            }
            if (rank == 0) key += "0";
            chunk(b, key);
            for (size_t d = rank; d-- > 0;) {
                if (++index[d] < per_dim[d]) break;
                index[d] = 0;
            }
        }
        return absent_;
    }

    const std::vector<uint8_t>& fill() const { return fill_; }

private:
    const Piece* piece_at(const Box& b) {
        if (!vp_.aggregated) return &*vp_.pieces[0];
        // Chunks come in C order: most start in the fragment of the chunk
        // before, the one fragment (they never overlap) holding that point.
        if (last_fragment_ >= vp_.boxes.size() || !holds(vp_.boxes[last_fragment_], b.start)) {
            auto i = vp_.aggregated->grid().fragment_at(b.start);
            if (!i) return nullptr;
            last_fragment_ = *i;
        }
        const auto& p = vp_.pieces[last_fragment_];
        return p ? &*p : nullptr;
    }

    void chunk(const Box& b, const std::string& key) {
        const Piece* p = piece_at(b);
        if (p && inside(b, *p)) {
            if (p->kind == Piece::Kind::Inline) stored_inline(b, key, p->converted, p->label + ": " + p->reason);
            else if (!referenced(b, *p, key))
                stored_inline(b, key, true, p->label + ": its bytes of chunk " + box_text(b) + " are not one run");
            return;
        }
        if (vp_.aggregated) {
            if (auto u = vp_.aggregated->uniform_value(b.start, b.count)) {
                if (*u == fill_) absent_ = true;
                else stored_inline(b, key, false, "");  // a constant fragment: the aggregation file's own value
                return;
            }
        }
        std::string why;
        const bool touches = touches_partition_bytes(b, &why);
        stored_inline(b, key, touches, why.empty() ? "chunk at " + box_text(b) + " spans several partitions" : why);
    }

    // A reference for chunk b inside p; false when its bytes are not one run.
    bool referenced(const Box& b, const Piece& p, const std::string& key) {
        const size_t rank = b.start.size();
        if (p.kind == Piece::Kind::Runs) {
            if (!p.run) {
                absent_ = true;  // never written: fill
                return true;
            }
            if (b.count != grid_.chunk) return false;
            uint64_t first = 0;
            for (size_t d = 0; d < rank; ++d) first = first * p.count[d] + (b.start[d] - p.start[d]);
            auto r = p.run(first, element_count(b.count));
            if (!r) return false;
            if (out_) out_->add_range(key, p.url, r->offset, r->length);
            return true;
        }
        const netcdf::Hdf5VariableStorage& s = *p.hdf5;
        const auto per_dim = chunks_per_dim(s.dims, s.chunk);
        uint64_t at = 0;
        for (size_t d = 0; d < rank; ++d) at = at * per_dim[d] + (b.start[d] - p.start[d]) / s.chunk[d];
        const netcdf::StoredRun& c = s.chunks.at(at);
        if (!c.written()) absent_ = true;
        else if (out_) out_->add_range(key, p.url, c.address, c.size);
        return true;
    }

    // Whether an inline chunk over b would hold values of partition files;
    // *why names the first such partition that needs a conversion.
    bool touches_partition_bytes(const Box& b, std::string* why) const {
        auto touches = [&](const Piece& p) {
            if (p.converted && why->empty()) *why = p.label + ": " + p.reason;
            return p.converted || p.kind != Piece::Kind::Inline;
        };
        if (!vp_.aggregated) return touches(*vp_.pieces[0]);
        bool any = false;
        vp_.aggregated->grid().for_each_fragment(b.start, b.count, [&](size_t i) {
            if (vp_.pieces[i] && touches(*vp_.pieces[i])) any = true;
        });
        return any;
    }

    void stored_inline(const Box& b, const std::string& key, bool converted, const std::string& why) {
        if (converted && !options_.inline_converted) throw LeftOut{why, true};
        uint64_t bytes = type_size(v_.type);
        for (uint64_t c : grid_.chunk) bytes = c != 0 && bytes > UINT64_MAX / c ? UINT64_MAX : bytes * c;
        if (bytes > kMaxInlineChunkBytes)
            throw LeftOut{"a chunk of " + std::to_string(bytes) + " bytes is too big to store inline"};
        if (out_) out_->add(key, inline_chunk(*v_.source, v_.type, b, grid_, fill_));
    }

    const Variable& v_;
    const std::vector<uint64_t>& shape_;
    VariablePieces& vp_;
    const ChunkGrid& grid_;
    const ExportOptions& options_;
    RefsWriter* out_;
    std::vector<uint8_t> fill_;
    bool absent_ = false;
    size_t last_fragment_ = SIZE_MAX;  // piece_at's fragment for the chunk before
};

// One line per piece whose bytes are not referenced for a conversion, at most max_notes.
void note_conversions(const Variable& v, const VariablePieces& vp, const ExportOptions& options,
                      std::vector<std::string>& notes) {
    size_t named = 0, more = 0;
    for (const auto& p : vp.pieces) {
        if (!p || p->kind != Piece::Kind::Inline || !p->converted) continue;
        if (named++ >= options.max_notes) {
            ++more;
            continue;
        }
        notes.push_back(v.name + ": " + p->label + ": not referenced: " + p->reason +
                        (options.inline_converted ? "; the view's values stored inline" : ""));
    }
    if (more) notes.push_back(v.name + ": and " + std::to_string(more) + " more partitions not referenced");
}

std::vector<std::string> dimension_names(const Dataset& ds, const Variable& v) {
    std::vector<std::string> names;
    for (size_t id : v.dimids) names.push_back(ds.dimensions.at(id).name);
    return names;
}

}  // namespace

void RefsWriter::add(const std::string& key, const nlohmann::json& value) {
    start_member(key);
    text_ += json_text(value);
    sink_(text_);
}

void RefsWriter::add_range(const std::string& key, const std::string& url, uint64_t offset, uint64_t length) {
    start_member(key);
    // The text json_text gives the array [url, offset, length], without building it.
    if (url != url_) {
        url_ = url;
        url_text_.clear();
        append_json_string(url_text_, url);
    }
    text_ += '[';
    text_ += url_text_;
    text_ += ',';
    text_ += std::to_string(offset);
    text_ += ',';
    text_ += std::to_string(length);
    text_ += ']';
    sink_(text_);
}

void RefsWriter::start_member(const std::string& key) {
    text_.assign(first_ ? "" : ",");
    first_ = false;
    append_json_string(text_, key);
    text_ += ':';
}

VariableOutcome add_variable_refs(const Dataset& ds, const Variable& v, const DatasetOrigin& origin,
                                  const ExportOptions& options, RefsWriter& refs) {
    VariableOutcome outcome;
    const std::vector<uint64_t> shape = ds.shape(v);
    std::optional<VariablePieces> vp;
    std::optional<ChunkGrid> grid;
    std::string zarray, zattrs;
    try {
        vp = pieces_of(ds, v, shape, origin, options);
        std::vector<Piece*> live;
        for (auto& p : vp->pieces)
            if (p) live.push_back(&*p);
        grid = choose_grid(shape, type_size(v.type), live, vp->boxes);
        note_conversions(v, *vp, options, outcome.notes);
        ChunkWalk decide(v, shape, *vp, *grid, options, nullptr);
        const bool absent = decide.run();
        const bool has_fill = v.find_attribute("_FillValue") != nullptr || absent;
        const nlohmann::json fill = has_fill ? zarr_fill_value(v.type, decide.fill().data()) : nlohmann::json(nullptr);
        const auto dims = dimension_names(ds, v);
        zarray = zarray_text(shape, *grid, v.type, fill);
        zattrs = zattrs_text(v.attributes, &dims);
    } catch (const LeftOut& e) {
        outcome.notes.push_back(v.name + ": left out: " + e.reason +
                                (e.converted ? " (--inline-converted stores the view's values inline)" : ""));
        return outcome;
    } catch (const Error& e) {
        outcome.notes.push_back(v.name + ": left out: " + e.what());
        return outcome;
    }
    // Written now: a value that cannot be read from here on fails the export (no variable half written).
    refs.add(v.name + "/.zarray", zarray);
    refs.add(v.name + "/.zattrs", zattrs);
    ChunkWalk(v, shape, *vp, *grid, options, &refs).run();
    outcome.written = true;
    return outcome;
}

}  // namespace ncafs::agg::kerchunk
