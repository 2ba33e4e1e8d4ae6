#include "codecs/vds/vds_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "codecs/error.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/vds/vds_container.hpp"
#include "codecs/vds/vds_layer_source.hpp"
#include "codecs/vds/vds_layout.hpp"
#include "codecs/vds/vds_dataset_builder.hpp"

namespace ncafs::vds {
namespace {

constexpr uint32_t kTypeJson = 0x4E4F534A;  // "JSON" as a little-endian FourCC
constexpr uint32_t kTypeVds = 0x20534456;   // "VDS "
constexpr uint64_t kMaxLayoutBytes = 16u << 20;

Layout read_layout(const Container& c) {
    const std::string& path = c.file().path();
    const ContainerFile* f = c.find("VolumeDataLayout");
    if (!f) throw FormatError(path, 0, "VDS container has no VolumeDataLayout");
    if (f->type != kTypeJson) throw FormatError(path, 0, "VolumeDataLayout is not JSON (old VDSObject files are not supported)");
    if (f->chunk_count < 1) throw FormatError(path, 0, "VolumeDataLayout has no chunk");
    const ChunkEntry e = c.entry(*f, 0);
    if (e.length == 0 || e.length > kMaxLayoutBytes) throw FormatError(path, e.offset, "VolumeDataLayout is empty or too large");
    const auto bytes = c.read_object(e);
    return parse_layout(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

// "<prefix>Dimensions_<digits>LOD<n>": the last "Dimensions_" and last "LOD".
struct LayerName {
    std::string prefix, group;
    int lod = 0;
};
std::optional<LayerName> split_layer_name(const std::string& name) {
    const size_t dims = name.rfind("Dimensions_"), lod = name.rfind("LOD");
    if (dims == std::string::npos || lod == std::string::npos || lod < dims + 11) return std::nullopt;
    LayerName n{name.substr(0, dims), name.substr(dims + 11, lod - dims - 11), 0};
    const std::string digits = name.substr(lod + 3);
    if (digits.empty() || digits.size() > 2 || !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return std::nullopt;
    n.lod = std::stoi(digits);
    return n;
}

// The primary channel's LOD0 group: a 3-D brick group if stored, else the first 2-D one.
std::vector<int> primary_group(const Container& c, const Layout& l, std::string& digits) {
    for (const auto& f : c.files()) {
        auto n = split_layer_name(f.name);
        if (f.type != kTypeVds || !n || !n->prefix.empty() || n->lod != 0) continue;
        if (digits.empty() || n->group.size() > digits.size()) digits = n->group;
    }
    const std::string& path = c.file().path();
    if (digits.size() != 2 && digits.size() != 3) throw FormatError(path, 0, "VDS container has no primary LOD0 layer");
    std::vector<int> group;
    for (char ch : digits) {
        const int d = ch - '0';
        if (d < 0 || d >= static_cast<int>(l.axes.size()) || (!group.empty() && d <= group.back()))
            throw FormatError(path, 0, "layer Dimensions_" + digits + "LOD0: dimension group does not fit the axes");
        group.push_back(d);
    }
    return group;
}

Compression compression_of(const Container& c, const ContainerFile& f) {
    const std::string& path = c.file().path();
    if (f.file_metadata.size() < 4) throw FormatError(path, 0, "layer " + f.name + ": no compression method in its file metadata");
    int32_t method;
    std::memcpy(&method, f.file_metadata.data(), 4);
    if (method == 0 || method == 2 || method == 3) return static_cast<Compression>(method);
    if (method == 1 || (method >= 4 && method <= 6))
        throw FormatError(path, 0, "layer " + f.name + ": Wavelet compression is not supported");
    throw FormatError(path, 0, "layer " + f.name + ": unknown compression method " + std::to_string(method));
}

LayerInfo make_layer(const Container& c, const Layout& l, const ContainerFile& f, const Channel& ch,
                     const std::vector<int>& group, int lod) {
    LayerInfo info{f.name, &f, compression_of(c, f), make_geometry(l, group, lod), ch};
    if (info.geometry.chunk_count != f.chunk_count)
        throw FormatError(c.file().path(), 0, "layer " + f.name + ": " + std::to_string(f.chunk_count) +
                                                  " chunks, the layout gives " + std::to_string(info.geometry.chunk_count));
    if (f.chunk_count > 0 && f.metadata_length < 8)
        throw FormatError(c.file().path(), 0, "layer " + f.name + ": chunk metadata shorter than the 8-byte hash");
    return info;
}

void check_voxel_count(const Layout& l, const std::string& path) {
    uint64_t total = 1;
    for (const auto& a : l.axes)
        if (__builtin_mul_overflow(total, static_cast<uint64_t>(a.samples), &total) || total > (uint64_t{1} << 60))
            throw FormatError(path, 0, "VolumeDataLayout: more than 2^60 voxels");
}

}  // namespace

bool has_vds_signature(std::span<const uint8_t> first_bytes) { return has_vds_magic(first_bytes); }

Dataset open_vds_dataset(const std::string& path) {
    auto container = std::make_shared<const Container>(OpenFile::open(path));
    const Layout layout = read_layout(*container);
    check_voxel_count(layout, path);
    std::string digits;
    const std::vector<int> group = primary_group(*container, layout, digits);

    DatasetBuilder builder(path, layout);
    for (size_t i = 0; i < layout.channels.size(); ++i) {
        const Channel& ch = layout.channels[i];
        if (ch.per_trace || ch.components != 1) continue;
        const std::string prefix = i == 0 ? "" : ch.name;
        for (int lod = 0; lod <= layout.lod_levels; ++lod) {
            const std::string name = prefix + "Dimensions_" + digits + "LOD" + std::to_string(lod);
            const ContainerFile* f = container->find(name);
            if (!f || f->type != kTypeVds) {
                if (i == 0 && lod == 0) throw FormatError(path, 0, "VDS container has no layer " + name);
                continue;
            }
            LayerInfo info = make_layer(*container, layout, *f, ch, group, lod);
            builder.add_channel(ch, lod, std::make_shared<const VdsLayerSource>(container, std::move(info)));
        }
    }
    builder.add_metadata();
    return builder.finish();
}

}  // namespace ncafs::vds
