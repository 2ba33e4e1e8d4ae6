#include "codecs/vds/vds_writer_container.hpp"

#include <cstring>

#include "codecs/error.hpp"
#include "codecs/vds/vds_writer_chunks.hpp"

namespace ncafs::vds {
namespace {

constexpr uint64_t kHeaderSize = 32, kFileHeaderSize = 32, kPageEntries = 1024, kLayerEntrySize = 16 + 8;

uint64_t round8(uint64_t n) { return (n + 7) / 8 * 8; }
uint64_t page_count(uint64_t chunks, uint64_t per_page) { return (chunks + per_page - 1) / per_page; }

template <typename T>
void put(std::vector<uint8_t>& b, uint64_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(T));
}

// One row of the file table (FileHeader + NUL-padded name).
void put_file_header(std::vector<uint8_t>& b, uint64_t at, uint64_t directory, uint64_t chunks, uint64_t per_page,
                     const char* fourcc, uint64_t chunk_md, uint64_t file_md, const std::string& name) {
    put<int64_t>(b, at, static_cast<int64_t>(directory));
    put<int32_t>(b, at + 8, static_cast<int32_t>(chunks));
    put<int32_t>(b, at + 12, 0);  // revision
    put<int32_t>(b, at + 16, static_cast<int32_t>(per_page));
    std::memcpy(b.data() + at + 20, fourcc, 4);
    put<int32_t>(b, at + 24, static_cast<int32_t>(chunk_md));
    put<int32_t>(b, at + 28, static_cast<int32_t>(file_md));
    std::memcpy(b.data() + at + kFileHeaderSize, name.data(), name.size());
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
                       std::vector<uint8_t>& b, uint64_t pages_at, std::vector<DataObject>& objects,
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

ContainerLayout build_container(const WriterPlan& plan) {
    ContainerLayout out;
    out.layers = plan_layers(plan);
    const std::string json = layout_json(plan);
    uint64_t longest = std::string("VolumeDataLayout").size();
    for (const auto& l : out.layers) longest = std::max<uint64_t>(longest, l.name.size());
    const uint64_t name_length = round8(longest + 1);
    const uint64_t files = out.layers.size() + 1;
    const uint64_t table = round8(kHeaderSize + json.size());
    // The JSON file: page directory (16 + 1 page offset) and one 16-byte entry.
    const uint64_t json_directory = table + files * (kFileHeaderSize + name_length);
    uint64_t at = json_directory + 24 + 16;
    std::vector<uint64_t> directories;
    for (const auto& l : out.layers) {
        directories.push_back(at);
        at += 16 + 12 + 8 * page_count(l.geometry.chunk_count, kPageEntries);
        at += page_count(l.geometry.chunk_count, kPageEntries) * kPageEntries * kLayerEntrySize;
    }
    out.prefix.assign(at, 0);
    auto& b = out.prefix;
    std::memcpy(b.data(), "HueDataStore", 12);
    put<int32_t>(b, 12, 0x00010000);
    put<int64_t>(b, 16, static_cast<int64_t>(table));
    put<int32_t>(b, 24, static_cast<int32_t>(files));
    put<int32_t>(b, 28, static_cast<int32_t>(name_length));
    std::memcpy(b.data() + kHeaderSize, json.data(), json.size());
    put_file_header(b, table, json_directory, 1, 1, "JSON", 0, 0, "VolumeDataLayout");
    put<int64_t>(b, json_directory + 16, static_cast<int64_t>(json_directory + 24));  // its one index page
    put<int64_t>(b, json_directory + 24, static_cast<int64_t>(kHeaderSize));
    put<int32_t>(b, json_directory + 32, static_cast<int32_t>(json.size()));
    uint64_t next = at;
    for (size_t i = 0; i < out.layers.size(); ++i) {
        const auto& l = out.layers[i];
        const uint64_t dir = directories[i], pages = page_count(l.geometry.chunk_count, kPageEntries);
        put_file_header(b, table + (i + 1) * (kFileHeaderSize + name_length), dir, l.geometry.chunk_count,
                        kPageEntries, "VDS ", 8, 12, l.name);
        put<int32_t>(b, dir + 16, 0);  // compression None; tolerance 0.0f
        put<int32_t>(b, dir + 24, static_cast<int32_t>(l.geometry.chunk_count));  // validChunkCount
        const uint64_t pages_at = dir + 28 + 8 * pages;
        for (uint64_t p = 0; p < pages; ++p)
            put<int64_t>(b, dir + 28 + 8 * p, static_cast<int64_t>(pages_at + p * kPageEntries * kLayerEntrySize));
        write_layer_pages(plan, l, static_cast<uint32_t>(i), b, pages_at, out.objects, &next);
    }
    out.size = next;
    return out;
}

}  // namespace ncafs::vds
