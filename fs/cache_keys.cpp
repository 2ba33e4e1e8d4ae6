#include "fs/cache_keys.hpp"


namespace ncafs::fs {

namespace {

// boost::hash_combine's mixing step.
size_t mix(size_t seed, size_t value) { return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

}  // namespace

ViewKind view_kind_of(const std::string& view) { return view_format_named(view, "view").kind; }

size_t CacheKeyHash::operator()(const FileKey& k) const {
    size_t h = std::hash<std::string>{}(k.path);
    h = mix(h, std::hash<uint64_t>{}(static_cast<uint64_t>(k.identity.device)));
    h = mix(h, std::hash<uint64_t>{}(static_cast<uint64_t>(k.identity.inode)));
    h = mix(h, std::hash<int64_t>{}(k.identity.mtime_ns));
    h = mix(h, std::hash<uint64_t>{}(k.identity.size));
    return mix(h, std::hash<int64_t>{}(k.identity.ctime_ns));
}

size_t CacheKeyHash::operator()(const DatasetKey& k) const { return mix((*this)(k.file), k.aggregation ? 1 : 0); }

size_t CacheKeyHash::operator()(const ViewKey& k) const {
    size_t h = mix((*this)(k.dataset), static_cast<size_t>(k.kind));
    h = mix(h, static_cast<size_t>(k.lod));
    h = mix(h, std::hash<uint64_t>{}(k.epoch));
    return mix(h, std::hash<std::string>{}(k.name));
}

}  // namespace ncafs::fs
