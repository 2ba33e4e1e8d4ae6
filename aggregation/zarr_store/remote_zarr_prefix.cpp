#include "aggregation/zarr_store/remote_zarr_prefix.hpp"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "aggregation/read/dataset_cache.hpp"
#include "codecs/error.hpp"
#include "io/percent_encode.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

namespace {

using json = nlohmann::json;

std::string without_trailing_slashes(std::string url) {
    while (url.size() > 1 && url.back() == '/') url.pop_back();
    return url;
}

// The entries of consolidated metadata as key -> JSON text; each must be an object.
void add_entries(const json& metadata, const std::string& suffix, const std::string& what,
                 std::unordered_map<std::string, std::string>& into) {
    if (!metadata.is_object()) throw std::runtime_error(what + ": \"metadata\" is not an object");
    for (const auto& [key, value] : metadata.items()) {
        if (!value.is_object()) throw std::runtime_error(what + ": the entry \"" + key + "\" is not an object");
        into[key + suffix] = value.dump();
    }
}

}  // namespace

bool names_zarr_store(const std::string& name) {
    const std::string trimmed = without_trailing_slashes(name);
    const std::string last = trimmed.substr(trimmed.rfind('/') + 1);
    return last.size() > 5 && last.compare(last.size() - 5, 5, ".zarr") == 0;
}

namespace {

// url + "/" + key: each component percent-encoded in an http(s) URL, the '/'
// between them kept, so a key's '?', '#' or '%' cannot change what the URL
// names; an S3 key is literal (remote/ encodes it for the request).
std::string joined(const std::string& url, const std::string& key) {
    if (auto why = key_refusal(key); !why.empty()) throw SourceError(url + "/" + key, "Zarr key refused: " + why);
    const bool s3 = url.size() > 3 && (url[0] == 's' || url[0] == 'S') && url[1] == '3' && url[2] == ':';
    return url + "/" + (s3 ? key : percent_encode(key, "-._~/"));
}

}  // namespace

RemoteZarrPrefix::RemoteZarrPrefix(std::string url, std::string group)
    : root_(without_trailing_slashes(std::move(url))), group_(std::move(group)),
      url_(group_.empty() ? root_ : joined(root_, group_)) {}

std::string RemoteZarrPrefix::url_of(const std::string& key) const { return joined(url_, key); }

std::shared_ptr<const OpenFile> RemoteZarrPrefix::open(const std::string& key, const ZarrReaders*, size_t) const {
    return open_url(url_of(key), key);
}

std::shared_ptr<const OpenFile> RemoteZarrPrefix::open_url(const std::string& url, const std::string& key) const {
    auto& store = remote::RemoteStore::shared();
    const auto now = std::chrono::steady_clock::now();
    {
        MutexLock lock(mutex_);
        // Opened (or found absent) a moment ago and not seen replaced since: one request per object and interval.
        if (auto hit = opens_.get(key); hit && now - hit->when < DatasetCache::kRemoteRevalidate &&
                                        !(hit->file && store.replaced(*hit->file->remote_bytes())))
            return hit->file;
    }
    auto object = store.open_if_present(url);  // outside the lock: a request
    auto file = object ? OpenFile::remote(std::move(object)) : nullptr;
    MutexLock lock(mutex_);
    opens_.put(key, Opened{file, now});
    return file;
}

std::optional<std::unordered_map<std::string, std::string>> RemoteZarrPrefix::root_entries() const {
    std::unordered_map<std::string, std::string> entries;
    const std::string v3_key = joined(root_, "zarr.json"), v2_key = joined(root_, ".zmetadata");
    const std::string above = group_.empty() ? "" : "/";  // cache keys of the root's objects, not the group's
    if (auto root = read_whole(open_url(v3_key, above + "zarr.json"), kMaxZarrMetadataFileBytes)) {  // v3: root node
        const json node = parse_metadata_json(*root, v3_key);
        const json consolidated = node.value("consolidated_metadata", json());
        if (!consolidated.is_object()) return std::nullopt;
        add_entries(consolidated.value("metadata", json()), "/zarr.json", v3_key, entries);
        entries["zarr.json"] = *root;
    } else if (auto text = read_whole(open_url(v2_key, above + ".zmetadata"), kMaxZarrMetadataFileBytes)) {  // v2
        add_entries(parse_metadata_json(*text, v2_key).value("metadata", json()), "", v2_key, entries);
    } else {
        return std::nullopt;
    }
    return entries;
}

bool RemoteZarrPrefix::load_consolidated() const {
    std::call_once(consolidated_once_, [this] {
        auto entries = root_entries();
        if (!entries || group_.empty()) {
            consolidated_ = std::move(entries);
            return;
        }
        std::unordered_map<std::string, std::string> in_group;  // the group's keys, relative to it
        const std::string prefix = group_ + "/";
        for (auto& [key, text] : *entries)
            if (key.compare(0, prefix.size(), prefix) == 0) in_group[key.substr(prefix.size())] = std::move(text);
        consolidated_ = std::move(in_group);
    });
    return consolidated_.has_value();
}

std::optional<std::string> RemoteZarrPrefix::read(const std::string& key, uint64_t max_bytes) const {
    if (auto why = key_refusal(key); !why.empty()) throw SourceError(path_of(key), "Zarr key refused: " + why);
    if (!load_consolidated()) return ZarrKeys::read(key, max_bytes);
    auto it = consolidated_->find(key);
    if (it == consolidated_->end()) return std::nullopt;
    if (it->second.size() > max_bytes)
        throw SourceError(path_of(key), std::to_string(it->second.size()) +
                                            " bytes of consolidated metadata exceed the bound of " +
                                            std::to_string(max_bytes));
    return it->second;
}

bool RemoteZarrPrefix::for_each_subfolder(uint64_t max_entries,
                                          const std::function<bool(const std::string&)>& visit) const {
    if (!load_consolidated())
        throw SourceError(url_, "a remote Zarr group cannot be listed: its arrays are named by its consolidated "
                                "metadata (.zmetadata, or consolidated_metadata in zarr.json), which it lacks");
    std::vector<std::string> names;  // the first component of each key below the top, once each
    std::unordered_set<std::string> seen;
    uint64_t looked = 0;
    for (const auto& [key, text] : *consolidated_) {
        if (++looked > max_entries) return false;
        const size_t slash = key.find('/');
        if (slash == std::string::npos || slash == 0 || key[0] == '.') continue;
        std::string name = key.substr(0, slash);
        if (seen.insert(name).second) names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());  // a stable order: the map's is not
    for (const auto& name : names)
        if (!visit(name)) break;
    return true;
}

}  // namespace ncafs::agg
