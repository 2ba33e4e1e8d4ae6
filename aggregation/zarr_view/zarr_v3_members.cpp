// The members of a v3 store (ZarrStoreLayout with format 3): "zarr.json",
// "VAR", "VAR/zarr.json", and the chunk key encoding `default` with "/":
// "VAR/c" (a scalar's chunk, else a folder), "VAR/c/i" ... "VAR/c/i/j/k"
// (the chunk), each index decimal without leading zeros and inside the grid.
#include <string_view>

#include "aggregation/zarr_view/zarr_store_layout.hpp"

namespace ncafs::agg::zarr_view {

namespace {

constexpr const char* kNode = "zarr.json";
constexpr const char* kChunks = "c";

// A decimal index below `bound` written as key_of writes it; -1 otherwise.
int64_t parse_index(std::string_view text, uint64_t bound) {
    if (text.empty() || text.size() > 20 || (text[0] == '0' && text.size() > 1)) return -1;
    uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return -1;
        value = value * 10 + static_cast<uint64_t>(c - '0');
        if (value >= bound) return -1;
    }
    return static_cast<int64_t>(value);
}

}  // namespace

std::optional<ZarrMember> ZarrStoreLayout::v3_member(const std::string& path) const {
    using Kind = ZarrMember::Kind;
    if (path == kNode) return ZarrMember{Kind::Metadata, nullptr, &zgroup_, 0};
    const auto slash = path.find('/');
    auto found = by_name_.find(path.substr(0, slash));
    if (found == by_name_.end()) return std::nullopt;
    const ZarrArray& a = arrays_[found->second];
    if (slash == std::string::npos) return ZarrMember{Kind::Folder, &a, nullptr, 0};
    std::string_view rest = std::string_view(path).substr(slash + 1);
    if (rest == kNode) return ZarrMember{Kind::Metadata, &a, &a.zarray, 0};
    if (rest.substr(0, 1) != kChunks || (rest.size() > 1 && rest[1] != '/')) return std::nullopt;
    const size_t rank = a.grid.shape.size();
    ZarrMember m{Kind::Folder, &a, nullptr, 0, true, 0};
    rest.remove_prefix(rest.size() > 1 ? 2 : 1);
    if (rank == 0) return rest.empty() && path.back() != '/' ? ZarrMember{Kind::Chunk, &a, nullptr, 0} : std::optional<ZarrMember>();
    if (path.back() == '/') return std::nullopt;
    while (!rest.empty()) {
        if (m.depth == rank) return std::nullopt;
        const auto next = rest.find('/');
        const int64_t index = parse_index(rest.substr(0, next), a.grid.per_dim[m.depth]);
        if (index < 0) return std::nullopt;
        m.chunk = m.chunk * a.grid.per_dim[m.depth] + static_cast<uint64_t>(index);
        ++m.depth;
        rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
        if (next != std::string_view::npos && rest.empty()) return std::nullopt;
    }
    if (m.depth == rank) {
        if (!a.has_chunk(m.chunk)) return std::nullopt;
        m.kind = Kind::Chunk;
        m.chunk_folder = false;
    }
    return m;
}

uint64_t ZarrStoreLayout::v3_listing_size(const ZarrMember& folder) const {
    if (!folder.array) return 1 + arrays_.size();
    if (!folder.chunk_folder) return 2;
    return folder.array->grid.per_dim.at(folder.depth);
}

std::pair<std::string, bool> ZarrStoreLayout::v3_listing_entry(const ZarrMember& folder, uint64_t i) const {
    if (!folder.array) return i == 0 ? std::pair<std::string, bool>{kNode, false}
                                     : std::pair<std::string, bool>{arrays_.at(i - 1).variable->name, true};
    if (!folder.chunk_folder) {
        if (i == 0) return {kNode, false};
        return {kChunks, !folder.array->grid.shape.empty()};
    }
    const bool last = folder.depth + 1 == folder.array->grid.shape.size();
    if (last && !folder.array->has_chunk(folder.chunk * folder.array->grid.per_dim[folder.depth] + i))
        return {std::string(), false};  // absent
    return {std::to_string(i), !last};
}

}  // namespace ncafs::agg::zarr_view
