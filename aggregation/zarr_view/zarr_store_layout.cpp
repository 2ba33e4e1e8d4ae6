#include "aggregation/zarr_view/zarr_store_layout.hpp"

#include "aggregation/kerchunk_export/zarr_metadata.hpp"
#include "aggregation/kerchunk_export/zarr_values.hpp"
#include "aggregation/zarr_view/zarr_v3_metadata.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/types.hpp"

namespace ncafs::agg::zarr_view {

namespace {

constexpr const char* kGroupFiles[] = {".zgroup", ".zattrs", ".zmetadata"};
constexpr const char* kArrayFiles[] = {".zarray", ".zattrs"};
constexpr uint64_t kArrayFileCount = 2;
constexpr size_t kMaxNameBytes = 255;

// Why a variable's name cannot name a folder of the store ("" when it can).
std::string unusable_name(const std::string& name) {
    if (name.empty()) return "an empty name";
    if (name.size() > kMaxNameBytes) return "a name longer than 255 bytes";
    if (name[0] == '.') return "a name starting with '.' (the store's own files)";
    for (unsigned char c : name)
        if (c == '/' || c < 0x20 || c == 0x7f) return "a name holding '/' or a control character";
    return "";
}

// The element edge chunks are padded with: _FillValue of the variable's type, else the type's default.
std::vector<uint8_t> fill_stored(const Variable& v, bool big_endian) {
    const size_t size = type_size(v.type);
    auto def = default_fill_big_endian(v.type);
    std::vector<uint8_t> fill(def.begin(), def.begin() + static_cast<long>(size));
    if (const Attribute* f = v.find_attribute("_FillValue"); f && f->type == v.type && f->values.size() >= size) {
        fill.assign(f->values.begin(), f->values.begin() + static_cast<long>(size));
        swap_to_big_endian(v.type, fill.data(), 1);
    }
    if (!big_endian) swap_from_big_endian(v.type, fill.data(), 1);
    return fill;
}

// The fill_value a computed chunk of v is left absent for (native order;
// empty: none): the array's, when the source gives v's values unconverted.
std::vector<uint8_t> absent_value(const Variable& v, const std::vector<uint8_t>& fill_native) {
    if (!v.source || v.source->type() != v.type || v.dimids.empty()) return {};
    return fill_native;
}

// The variable's chunks as its own file stores them, when a Zarr reader
// decodes them so and a chunk never written reads as the array's fill
// value (`fill_native`, native order; empty: none); else null, with a note
// when the file's chunk index is unsound (its chunks are then computed,
// and a read of an unsound one fails).
std::shared_ptr<const DeflatedChunks> stored_chunks(const Variable& v, const std::vector<uint8_t>& fill_native,
                                                    std::vector<std::string>& notes) {
    if (!v.source || v.source->type() != v.type || v.dimids.empty()) return nullptr;
    std::string why;
    auto stored = v.source->deflated_chunks(&why);
    if (!why.empty()) notes.push_back(v.name + ": its chunks are computed, not passed through: " + why);
    if (!stored || !stored->has_unwritten() || stored->fill() == fill_native) return stored;
    return nullptr;  // the chunks never written could not be left absent
}

// The array's grid, fill and metadata where its chunks are the file's (a.stored set).
void use_stored_grid(ZarrArray& a, const Variable& v, const std::vector<uint64_t>& shape) {
    a.grid = zarr_grid_of(shape, a.stored->chunk_shape(), type_size(v.type));
    a.fill_stored = fill_stored(v, a.stored->big_endian());
}

struct ArrayContext {
    std::vector<uint64_t> shape;
    std::vector<std::string> dims;
    std::vector<uint8_t> fill_native;  // the variable's _FillValue, else its type's default fill
    bool stored = true;                // chunks passed through where they can be
};

void describe_v3(ZarrArray& a, const Variable& v, const ArrayContext& c, bool big_endian,
                 std::vector<std::string>& notes) {
    a.absent_value = absent_value(v, c.fill_native);
    if (c.stored && (a.stored = stored_chunks(v, c.fill_native, notes))) use_stored_grid(a, v, c.shape);
    a.zarray = v3_array_json(v, c.dims, a.grid, a.stored ? a.stored->big_endian() : big_endian, c.fill_native,
                             kerchunk::zattrs_text(v.attributes, nullptr), a.stored.get());
}

void describe_v2(ZarrArray& a, const Variable& v, const ArrayContext& c, bool big_endian,
                 std::vector<std::string>& notes) {
    nlohmann::json fill = nullptr;
    std::vector<uint8_t> fill_native;  // the fill_value's, if any
    if (const Attribute* f = v.find_attribute("_FillValue"); f && f->type == v.type && f->length() >= 1) {
        fill = kerchunk::zarr_fill_value(v.type, f->values.data());
        fill_native = c.fill_native;
    }
    a.absent_value = absent_value(v, fill_native);
    kerchunk::ChunkGrid grid{a.grid.chunk, {}, big_endian};
    nlohmann::json compressor = nullptr;
    if (c.stored && (a.stored = stored_chunks(v, fill_native, notes))) {
        use_stored_grid(a, v, c.shape);
        grid = {a.grid.chunk, {}, a.stored->big_endian()};
        if (a.stored->shuffle_size() > 0)
            grid.filters.push_back({ncafs::ZarrCodec::Id::Shuffle, 0, static_cast<uint32_t>(a.stored->shuffle_size())});
        compressor = kerchunk::codec_json({ncafs::ZarrCodec::Id::Zlib, kStoredZlibLevel, 1});
    }
    a.zarray = kerchunk::zarray_text(c.shape, grid, v.type, fill, compressor);
    a.zattrs = kerchunk::zattrs_text(v.attributes, &c.dims);
}

ZarrArray array_of(const Dataset& ds, const Variable& v, bool big_endian, int format, bool stored,
                   std::vector<std::string>& notes) {
    ZarrArray a;
    a.variable = &v;
    ArrayContext c;
    c.shape = ds.shape(v);
    const auto unlimited = ds.unlimited_dimension();
    const bool record = !v.dimids.empty() && unlimited && v.dimids[0] == *unlimited;
    const bool coordinate = v.dimids.size() == 1 && ds.dimensions.at(v.dimids[0]).name == v.name;
    a.grid = choose_zarr_grid(c.shape, type_size(v.type), record, coordinate);
    a.fill_stored = fill_stored(v, big_endian);
    for (size_t id : v.dimids) c.dims.push_back(ds.dimensions.at(id).name);
    c.fill_native = a.fill_stored;
    if (big_endian) swap_from_big_endian(v.type, c.fill_native.data(), 1);
    c.stored = stored;
    if (format == 3)
        describe_v3(a, v, c, big_endian, notes);
    else
        describe_v2(a, v, c, big_endian, notes);
    return a;
}

}  // namespace

bool ZarrArray::has_chunk(uint64_t index) const {
    if (stored) return stored->place(index).has_value();
    if (absent_value.empty()) return true;
    std::vector<uint64_t> start, count;
    grid.box_of(index, start, count);
    const auto uniform = variable->source->uniform_value(start, count);
    return !uniform || *uniform != absent_value;
}

uint64_t ZarrMember::size() const {
    if (kind == Kind::Metadata) return text->size();
    if (kind == Kind::Chunk)
        return array->stored ? array->stored->place(chunk).value_or(DeflatedChunks::Place{}).length
                             : array->grid.chunk_bytes();
    return 0;
}

ZarrStoreLayout::ZarrStoreLayout(std::shared_ptr<const Dataset> dataset, bool big_endian, int format,
                                 bool stored_chunks)
    : dataset_(std::move(dataset)), big_endian_(big_endian), format_(format), stored_chunks_(stored_chunks) {
    arrays_.reserve(dataset_->variables.size());
    for (const Variable& v : dataset_->variables) {
        if (std::string why = unusable_name(v.name); !why.empty()) {
            notes_.push_back(v.name + ": left out of the .zarr view: " + why);
            continue;
        }
        try {
            ZarrArray a = array_of(*dataset_, v, big_endian_, format_, stored_chunks_, notes_);
            by_name_.emplace(v.name, arrays_.size());
            arrays_.push_back(std::move(a));
        } catch (const Error& e) {
            notes_.push_back(v.name + ": left out of the .zarr view: " + e.what());
        }
    }
    zattrs_ = kerchunk::zattrs_text(dataset_->attributes, nullptr);
    zgroup_ = format_ == 3 ? v3_group_json(zattrs_) : kerchunk::zgroup_text();
}

const std::string& ZarrStoreLayout::zmetadata() const {
    // Joined from the texts, never parsed again: a JSON tree of 10^5 arrays would cost a hundred times their bytes.
    std::call_once(zmetadata_once_, [this] {
        size_t bytes = zgroup_.size() + zattrs_.size() + 128;
        for (const ZarrArray& a : arrays_) bytes += a.zarray.size() + a.zattrs.size() + 2 * a.variable->name.size() + 32;
        std::string out;
        out.reserve(bytes);
        out += "{\"metadata\":{\".zgroup\":" + zgroup_ + ",\".zattrs\":" + zattrs_;
        for (const ZarrArray& a : arrays_) {
            out += ',' + kerchunk::json_text(a.variable->name + "/.zarray") + ':' + a.zarray;
            out += ',' + kerchunk::json_text(a.variable->name + "/.zattrs") + ':' + a.zattrs;
        }
        out += "},\"zarr_consolidated_format\":1}";
        zmetadata_ = std::move(out);
    });
    return zmetadata_;
}

std::optional<ZarrMember> ZarrStoreLayout::member(const std::string& path) const {
    using Kind = ZarrMember::Kind;
    if (path.empty()) return ZarrMember{Kind::Folder, nullptr, nullptr, 0};
    if (format_ == 3) return v3_member(path);
    if (path == ".zgroup") return ZarrMember{Kind::Metadata, nullptr, &zgroup_, 0};
    if (path == ".zattrs") return ZarrMember{Kind::Metadata, nullptr, &zattrs_, 0};
    if (path == ".zmetadata") return ZarrMember{Kind::Metadata, nullptr, &zmetadata(), 0};
    const auto slash = path.find('/');
    auto found = by_name_.find(path.substr(0, slash));
    if (found == by_name_.end()) return std::nullopt;
    const ZarrArray& a = arrays_[found->second];
    if (slash == std::string::npos) return ZarrMember{Kind::Folder, &a, nullptr, 0};
    const std::string rest = path.substr(slash + 1);
    if (rest == ".zarray") return ZarrMember{Kind::Metadata, &a, &a.zarray, 0};
    if (rest == ".zattrs") return ZarrMember{Kind::Metadata, &a, &a.zattrs, 0};
    const int64_t index = a.grid.index_of(rest);
    if (index < 0 || !a.has_chunk(static_cast<uint64_t>(index))) return std::nullopt;
    return ZarrMember{Kind::Chunk, &a, nullptr, static_cast<uint64_t>(index)};
}

uint64_t ZarrStoreLayout::listing_size(const ZarrMember& folder) const {
    if (format_ == 3) return v3_listing_size(folder);
    if (!folder.array) return std::size(kGroupFiles) + arrays_.size();
    return kArrayFileCount + folder.array->grid.chunk_count;
}

std::pair<std::string, bool> ZarrStoreLayout::listing_entry(const ZarrMember& folder, uint64_t i) const {
    if (format_ == 3) return v3_listing_entry(folder, i);
    if (!folder.array) {
        if (i < std::size(kGroupFiles)) return {kGroupFiles[i], false};
        return {arrays_.at(i - std::size(kGroupFiles)).variable->name, true};
    }
    if (i < kArrayFileCount) return {kArrayFiles[i], false};
    if (!folder.array->has_chunk(i - kArrayFileCount)) return {std::string(), false};
    return {folder.array->grid.key_of(i - kArrayFileCount), false};
}

}  // namespace ncafs::agg::zarr_view
