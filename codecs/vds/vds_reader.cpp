#include "codecs/vds/vds_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "codecs/error.hpp"
#include "codecs/vds/vds_container.hpp"
#include "codecs/vds/vds_failure_memo.hpp"
#include "codecs/vds/vds_store.hpp"
#include "codecs/vds/vds_layer_source.hpp"
#include "codecs/vds/vds_layout.hpp"
#include "codecs/vds/vds_dataset_builder.hpp"

namespace ncafs::vds {
namespace {

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
std::vector<int> primary_group(const VolumeStore& v, const Layout& l, std::string& digits) {
    for (const auto& name : v.layer_names()) {
        auto n = split_layer_name(name);
        if (!n || !n->prefix.empty() || n->lod != 0) continue;
        if (digits.empty() || n->group.size() > digits.size()) digits = n->group;
    }
    const std::string& path = v.path();
    if (digits.size() != 2 && digits.size() != 3) throw FormatError(path, 0, "VDS volume has no primary LOD0 layer");
    std::vector<int> group;
    for (char ch : digits) {
        const int d = ch - '0';
        if (d < 0 || d >= static_cast<int>(l.axes.size()) || (!group.empty() && d <= group.back()))
            throw FormatError(path, 0, "layer Dimensions_" + digits + "LOD0: dimension group does not fit the axes");
        group.push_back(d);
    }
    return group;
}

LayerInfo make_layer(const VolumeStore& v, const Layout& l, std::shared_ptr<const LayerStore> store,
                     const std::string& name, const Channel& ch, const std::vector<int>& group, int lod) {
    LayerInfo info{name, std::move(store), make_geometry(l, group, lod), ch};
    if (info.geometry.chunk_count != info.store->chunk_count())
        throw FormatError(v.path(), 0, "layer " + name + ": " + std::to_string(info.store->chunk_count()) +
                                           " chunks, the layout gives " + std::to_string(info.geometry.chunk_count));
    info.store->check_index();  // only now: its size is the layout's
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

// The dataset of a volume in either physical form.
Dataset dataset_of_volume(const std::shared_ptr<const VolumeStore>& volume);

Dataset open_vds_dataset(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dataset_of_volume(open_directory_store(path));
    return open_vds_dataset(OpenFile::open(path));
}

Dataset open_vds_dataset(std::shared_ptr<const OpenFile> file) {
    const FileIdentity identity = file->identity();
    if (auto failure = remembered_failure(identity)) throw *failure;
    try {
        return dataset_of_volume(open_container_store(std::move(file)));
    } catch (const FormatError& e) {
        remember_failure(identity, e);
        throw;
    }
}

Dataset open_vds_directory(UniqueFd directory, const std::string& path) {
    return dataset_of_volume(open_directory_store(std::move(directory), path));
}

std::vector<std::string> vds_member_files(const Dataset& dataset) {
    for (const auto& v : dataset.variables)
        if (const auto* layer = dynamic_cast<const VdsLayerSource*>(v.source.get())) return layer->volume().member_files();
    return {};
}

Dataset dataset_of_volume(const std::shared_ptr<const VolumeStore>& volume) {
    const std::string path = volume->path();
    const std::string text = volume->layout_text();
    const Layout layout = parse_layout(text, path);
    check_voxel_count(layout, path);
    std::string digits;
    const std::vector<int> group = primary_group(*volume, layout, digits);

    DatasetBuilder builder(path, layout);
    for (size_t i = 0; i < layout.channels.size(); ++i) {
        const Channel& ch = layout.channels[i];
        if (ch.per_trace || ch.components != 1) continue;
        const std::string prefix = i == 0 ? "" : ch.name;
        for (int lod = 0; lod <= layout.lod_levels; ++lod) {
            const std::string name = prefix + "Dimensions_" + digits + "LOD" + std::to_string(lod);
            auto store = volume->layer(name);
            if (!store) {
                if (i == 0 && lod == 0) throw FormatError(path, 0, "VDS volume has no layer " + name);
                continue;
            }
            LayerInfo info = make_layer(*volume, layout, std::move(store), name, ch, group, lod);
            builder.add_channel(ch, lod, std::make_shared<const VdsLayerSource>(volume, std::move(info)));
        }
    }
    builder.add_metadata();
    return builder.finish();
}

}  // namespace ncafs::vds
