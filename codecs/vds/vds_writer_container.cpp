#include "codecs/vds/vds_writer_container.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/vds/vds_writer_chunks.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::vds {
namespace {

constexpr uint64_t kHeaderSize = 32, kFileHeaderSize = 32, kPageEntries = 1024, kLayerEntrySize = 16 + 8;

uint64_t round8(uint64_t n) { return (n + 7) / 8 * 8; }
uint64_t page_count(uint64_t chunks, uint64_t per_page) { return (chunks + per_page - 1) / per_page; }

// A value at container offset `at`, inside run b.
template <typename T>
void put(PrefixRun& b, uint64_t at, T v) {
    std::memcpy(b.bytes.data() + (at - b.offset), &v, sizeof(T));
}

// One row of the file table (FileHeader + NUL-padded name).
void put_file_header(PrefixRun& b, uint64_t at, uint64_t directory, uint64_t chunks, uint64_t per_page,
                     const char* fourcc, uint64_t chunk_md, uint64_t file_md, const std::string& name) {
    put<int64_t>(b, at, static_cast<int64_t>(directory));
    put<int32_t>(b, at + 8, static_cast<int32_t>(chunks));
    put<int32_t>(b, at + 12, 0);  // revision
    put<int32_t>(b, at + 16, static_cast<int32_t>(per_page));
    std::memcpy(b.bytes.data() + (at - b.offset) + 20, fourcc, 4);
    put<int32_t>(b, at + 24, static_cast<int32_t>(chunk_md));
    put<int32_t>(b, at + 28, static_cast<int32_t>(file_md));
    std::memcpy(b.bytes.data() + (at - b.offset) + kFileHeaderSize, name.data(), name.size());
}

std::vector<WrittenLayer> plan_layers(const WriterPlan& plan) {
    if (view_chunk_count(plan) > kMaxViewChunks)
        throw UsageError("the .vds view would have more than " + std::to_string(kMaxViewChunks) + " chunks");
    std::string group = "Dimensions_";
    for (int d : plan.group) group += static_cast<char>('0' + d);
    std::vector<WrittenLayer> layers;
    for (size_t c = 0; c < plan.channels.size(); ++c)
        for (int lod = 0; lod <= plan.layout.lod_levels; ++lod)
            layers.push_back({(c == 0 ? std::string() : plan.layout.channels[c].name) + group + "LOD" + std::to_string(lod),
                              c, make_geometry(plan.layout, plan.group, lod)});
    return layers;
}

// Index pages of one layer: entries {offset, length, reserved, hash}; data
// objects appended to `objects` from offset `*next`.
void write_layer_pages(const WriterPlan& plan, const WrittenLayer& l, uint32_t layer_index,
                       PrefixRun& b, uint64_t pages_at, std::vector<DataObject>& objects,
                       uint64_t* next) {
    const Channel& c = plan.layout.channels[l.channel];
    const WriterChannel& w = plan.channels[l.channel];
    const ArraySource& src = *w.source;
    for (uint64_t i = 0; i < l.geometry.chunk_count; ++i) {
        const ChunkBox box = chunk_box(l.geometry, i);
        const uint64_t at = pages_at + i * kLayerEntrySize;
        auto hash = uniform_chunk_hash(c, w, src, box);
        if (!hash) {
            const uint64_t size = chunk_object_size(c.format, box);
            objects.push_back({*next, size, layer_index, i});
            put<int64_t>(b, at, static_cast<int64_t>(*next));
            put<int32_t>(b, at + 8, static_cast<int32_t>(size));
            // An identity, not a content hash (notes §2.7): high word 'NCAF' is never 0, ~0 or 0x01010101.
            hash = (uint64_t{0x4641434E} << 32) | objects.size();
            *next += size;
        }
        put<uint64_t>(b, at + 16, *hash);
    }
}

}  // namespace

uint64_t view_chunk_count(const WriterPlan& plan) {
    uint64_t per_channel = 0;  // every channel has the same layers
    for (int lod = 0; lod <= plan.layout.lod_levels; ++lod)
        if (__builtin_add_overflow(per_channel, make_geometry(plan.layout, plan.group, lod).chunk_count, &per_channel))
            return UINT64_MAX;
    uint64_t total;
    return __builtin_mul_overflow(per_channel, plan.channels.size(), &total) ? UINT64_MAX : total;
}

namespace {

// What the layout holds besides its runs, per layer (its name, geometry,
// and the LOD store and cache entries of its view).
constexpr uint64_t kLayerBytes = sizeof(WrittenLayer) + 256;

// Where the parts of the prefix go, from the plan alone.
struct PrefixPlan {
    std::vector<WrittenLayer> layers;
    std::string json;
    uint64_t name_length = 0, table = 0, json_directory = 0;
    std::vector<uint64_t> directories;  // per layer
    uint64_t size = 0;                  // of the prefix
    uint64_t held = 0;                  // bytes of its runs
};

PrefixPlan plan_prefix(const WriterPlan& plan) {
    PrefixPlan p;
    p.layers = plan_layers(plan);
    p.json = layout_json(plan);
    uint64_t longest = std::string("VolumeDataLayout").size();
    for (const auto& l : p.layers) longest = std::max<uint64_t>(longest, l.name.size());
    p.name_length = round8(longest + 1);
    const uint64_t files = p.layers.size() + 1;
    p.table = round8(kHeaderSize + p.json.size());
    // The JSON file: page directory (16 + 1 page offset) and one 16-byte entry.
    p.json_directory = p.table + files * (kFileHeaderSize + p.name_length);
    p.size = p.held = p.json_directory + 24 + 16;
    for (const auto& l : p.layers) {
        p.directories.push_back(p.size);
        const uint64_t pages = page_count(l.geometry.chunk_count, kPageEntries);
        p.held += 16 + 12 + 8 * pages + l.geometry.chunk_count * kLayerEntrySize;
        p.size += 16 + 12 + 8 * pages + pages * kPageEntries * kLayerEntrySize;
    }
    return p;
}

uint64_t memory_of(const PrefixPlan& p) { return p.held + p.layers.size() * kLayerBytes; }

}  // namespace

uint64_t container_memory(const WriterPlan& plan) {
    // From the plan's numbers alone (no JSON, no layer names: a listing asks
    // this of every dataset): per channel its descriptor in the JSON and its
    // layers, each with its file-table row, directory and chunk entries.
    constexpr uint64_t kDescriptorBytes = 512, kRowBytes = kFileHeaderSize + 64 + 16 + 12;
    uint64_t per_channel = kDescriptorBytes + (plan.layout.lod_levels + 1) * (kRowBytes + kLayerBytes);
    for (int lod = 0; lod <= plan.layout.lod_levels; ++lod) {
        const uint64_t chunks = make_geometry(plan.layout, plan.group, lod).chunk_count;
        per_channel += 8 * page_count(chunks, kPageEntries) + chunks * kLayerEntrySize;
    }
    uint64_t names = 0;
    for (const Channel& c : plan.layout.channels) names += 2 * (c.name.size() + c.unit.size());
    return kHeaderSize + names + plan.channels.size() * per_channel;
}

ContainerLayout build_container(const WriterPlan& plan) {
    PrefixPlan p = plan_prefix(plan);
    charge_metadata(memory_of(p), 1, "bytes of .vds layers and index entries");
    ContainerLayout out;
    out.layers = std::move(p.layers);
    const std::string& json = p.json;
    const uint64_t name_length = p.name_length, files = out.layers.size() + 1, table = p.table;
    const uint64_t json_directory = p.json_directory, at = p.size;
    const std::vector<uint64_t>& directories = p.directories;
    out.prefix_size = at;
    out.prefix.reserve(out.layers.size() + 1);
    PrefixRun& b = out.prefix.emplace_back(PrefixRun{0, std::vector<uint8_t>(json_directory + 24 + 16, 0)});
    std::memcpy(b.bytes.data(), "HueDataStore", 12);
    put<int32_t>(b, 12, 0x00010000);
    put<int64_t>(b, 16, static_cast<int64_t>(table));
    put<int32_t>(b, 24, static_cast<int32_t>(files));
    put<int32_t>(b, 28, static_cast<int32_t>(name_length));
    std::memcpy(b.bytes.data() + kHeaderSize, json.data(), json.size());
    put_file_header(b, table, json_directory, 1, 1, "JSON", 0, 0, "VolumeDataLayout");
    put<int64_t>(b, json_directory + 16, static_cast<int64_t>(json_directory + 24));  // its one index page
    put<int64_t>(b, json_directory + 24, static_cast<int64_t>(kHeaderSize));
    put<int32_t>(b, json_directory + 32, static_cast<int32_t>(json.size()));
    uint64_t next = at;
    for (size_t i = 0; i < out.layers.size(); ++i) {
        const auto& l = out.layers[i];
        const uint64_t dir = directories[i], pages = page_count(l.geometry.chunk_count, kPageEntries);
        put_file_header(out.prefix[0], table + (i + 1) * (kFileHeaderSize + name_length), dir,
                        l.geometry.chunk_count, kPageEntries, "VDS ", 8, 12, l.name);
        const uint64_t pages_at = dir + 28 + 8 * pages;
        PrefixRun& r = out.prefix.emplace_back(
            PrefixRun{dir, std::vector<uint8_t>(pages_at - dir + l.geometry.chunk_count * kLayerEntrySize, 0)});
        put<int32_t>(r, dir + 16, 0);  // compression None; tolerance 0.0f
        put<int32_t>(r, dir + 24, static_cast<int32_t>(l.geometry.chunk_count));  // validChunkCount
        for (uint64_t page = 0; page < pages; ++page)
            put<int64_t>(r, dir + 28 + 8 * page,
                         static_cast<int64_t>(pages_at + page * kPageEntries * kLayerEntrySize));
        write_layer_pages(plan, l, static_cast<uint32_t>(i), r, pages_at, out.objects, &next);
    }
    out.size = next;
    return out;
}

void prefix_pieces(const ContainerLayout& layout, uint64_t offset, uint64_t length, std::vector<HeldBytes>& pieces) {
    static const std::vector<uint8_t> zeros(64 << 10, 0);
    const uint64_t end = std::min(offset + length, layout.prefix_size);
    for (uint64_t pos = offset; pos < end;) {
        auto it = std::upper_bound(layout.prefix.begin(), layout.prefix.end(), pos,
                                   [](uint64_t p, const PrefixRun& r) { return p < r.offset; });
        uint64_t n;
        if (it != layout.prefix.begin() && pos < (it - 1)->offset + (it - 1)->bytes.size()) {
            const PrefixRun& r = *(it - 1);
            n = std::min(end, r.offset + r.bytes.size()) - pos;
            pieces.push_back({nullptr, r.bytes.data() + (pos - r.offset), static_cast<size_t>(n)});
        } else {  // between runs: zeros
            const uint64_t gap_end = it == layout.prefix.end() ? end : std::min(end, it->offset);
            n = std::min<uint64_t>(gap_end - pos, zeros.size());
            pieces.push_back({nullptr, zeros.data(), static_cast<size_t>(n)});
        }
        pos += n;
    }
}

}  // namespace ncafs::vds
