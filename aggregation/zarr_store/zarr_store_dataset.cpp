#include "aggregation/zarr_store/zarr_store_dataset.hpp"

#include <fcntl.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "aggregation/reference_set/reference_dataset.hpp"
#include "aggregation/reference_set/reference_source.hpp"
#include "aggregation/zarr_store/remote_zarr_prefix.hpp"
#include "aggregation/zarr_store/zarr_directory_store.hpp"
#include "codecs/error.hpp"
#include "aggregation/reference_set/reference_parser.hpp"
#include "io/metadata_budget.hpp"
#include "remote/network_scope.hpp"
#include "io/system_call_error.hpp"

namespace ncafs {

namespace {

using json = nlohmann::json;
using agg::ZarrFolder;
using agg::ZarrKeyLayout;

// What opening gathers: the metadata as inline references, where each
// array's chunks lie, the files read, and what was left out.
struct Gathered {
    agg::ReferenceSet set;
    std::unordered_map<std::string, ZarrKeyLayout> layouts;
    std::vector<std::string> files;
    std::vector<DatasetNote> notes;
    uint64_t metadata_bytes = 0, max_metadata_bytes = 0;
    uint64_t arrays = 0;
    bool serves_other_users = false;  // allow_other: chunks must be as readable as their array's metadata
};

// The metadata file at key, counted against the store's bound; nullopt when absent.
std::optional<std::string> read_metadata(const agg::ZarrKeys& folder, const std::string& key, Gathered& g) {
    auto text = folder.read(key, agg::kMaxZarrMetadataFileBytes);
    if (!text) return std::nullopt;
    g.metadata_bytes += text->size();
    if (g.metadata_bytes > g.max_metadata_bytes)
        throw SourceError(folder.path(),
                          "metadata exceed the limit max_metadata=" + std::to_string(g.max_metadata_bytes));
    charge_metadata(text->size(), 1, "bytes of metadata files");  // kept inline: parsed when the arrays are built
    g.files.push_back(folder.path_of(key));
    return text;
}

// With allow_other, who may read the array's metadata file at key (the
// caller check's judge for its chunks, docs/zarr.md "Confinement").
std::optional<agg::ZarrReaders> readers_for_chunks(const agg::ZarrKeys& folder, const std::string& key,
                                                   const Gathered& g) {
    if (!g.serves_other_users) return std::nullopt;
    auto file = folder.open(key);
    if (!file) throw SourceError(folder.path_of(key), "vanished while the store was opened");
    return agg::readers_of(file->fd());
}

void put_inline(Gathered& g, const std::string& key, std::string data) {
    agg::Reference r;
    r.data = std::move(data);
    g.set.refs[key] = std::move(r);
}

void leave_out(Gathered& g, const std::string& name, const std::string& why, bool refused) {
    g.notes.push_back({refused, false, name, name + (refused ? ": left out: " : ": ") + why});
}

// A v2 array in `dir` ("" for the top), shown as `name`; false when dir holds no .zarray.
bool add_v2_array(const agg::ZarrKeys& folder, const std::string& dir, const std::string& name, Gathered& g) {
    const std::string prefix = dir.empty() ? "" : dir + "/";
    auto zarray = read_metadata(folder, prefix + ".zarray", g);
    if (!zarray) return false;
    put_inline(g, name + "/.zarray", std::move(*zarray));
    if (auto zattrs = read_metadata(folder, prefix + ".zattrs", g))
        put_inline(g, name + "/.zattrs", std::move(*zattrs));
    ZarrKeyLayout layout;
    layout.folder = dir;
    layout.metadata_key = prefix + ".zarray";
    layout.readers = readers_for_chunks(folder, layout.metadata_key, g);
    g.layouts[name] = layout;
    if (!dir.empty()) g.files.push_back(folder.path_of(dir));
    return true;
}

// A v3 node in `dir`, shown as `name` when an array; false when dir holds no zarr.json.
bool add_v3_node(const agg::ZarrKeys& folder, const std::string& dir, const std::string& name, Gathered& g) {
    const std::string key = dir.empty() ? "zarr.json" : dir + "/zarr.json";
    auto text = read_metadata(folder, key, g);
    if (!text) return false;
    const json node = agg::parse_metadata_json(*text, "zarr.json");
    if (node.value("node_type", json()) == "group") {
        if (dir.empty())
            put_inline(g, ".zattrs", node.value("attributes", json::object()).dump());
        else
            leave_out(g, name, "a sub-group (groups are not shown)", false);
        return true;
    }
    agg::V3Array array = agg::translate_v3_array(node);
    array.layout.folder = dir;
    array.layout.metadata_key = key;
    array.layout.readers = readers_for_chunks(folder, key, g);
    if (!dir.empty()) g.files.push_back(folder.path_of(dir));
    put_inline(g, name + "/.zarray", array.zarray.dump());
    put_inline(g, name + "/.zattrs", array.zattrs.dump());
    g.layouts[name] = std::move(array.layout);
    return true;
}

// One sub-folder of the top: an array, a group (left out) or neither
// (ignored); false once the store's bound of arrays is reached.
bool add_member(const agg::ZarrKeys& folder, const std::string& name, bool v3, Gathered& g) {
    if (g.arrays == kMaxZarrArrays) {
        g.notes.push_back({true, false, "",
                           "more than " + std::to_string(kMaxZarrArrays) +
                               " arrays in the store: those after the first " + std::to_string(kMaxZarrArrays) +
                               " (in folder order) left out"});
        return false;
    }
    try {
        const bool found = v3 ? add_v3_node(folder, name, name, g) : add_v2_array(folder, name, name, g);
        if (found) {
            charge_metadata(1, agg::kArrayCost, "arrays");  // the array with its views, as in a reference set
            ++g.arrays;
        }
        else if (!v3 && folder.open(name + "/.zgroup"))
            leave_out(g, name, "a sub-group (groups are not shown)", false);
    } catch (const MetadataBudgetError&) {
        throw;
    } catch (const remote::NetworkNeeded&) {
        throw;
    } catch (const std::runtime_error& e) {
        leave_out(g, name, e.what(), true);
    }
    return true;
}

void gather(const agg::ZarrKeys& folder, const std::string& stem, Gathered& g) {
    const bool v3 = folder.open("zarr.json") != nullptr;
    if (v3) {
        if (add_v3_node(folder, "", stem, g) && g.layouts.count(stem)) return;  // the store is one array
    } else if (add_v2_array(folder, "", stem, g)) {
        return;
    } else if (auto zattrs = read_metadata(folder, ".zattrs", g)) {
        put_inline(g, ".zattrs", std::move(*zattrs));
    }
    const bool complete = folder.for_each_subfolder(
        kMaxZarrTopEntries, [&](const std::string& name) { return add_member(folder, name, v3, g); });
    if (!complete)
        g.notes.push_back({true, false, "",
                           "more than " + std::to_string(kMaxZarrTopEntries) +
                               " entries in the store's top folder: the rest left out"});
}

std::string stem_of(const std::string& path) {
    std::string name = path.substr(path.rfind('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".zarr") == 0) name.resize(name.size() - 5);
    return name;
}

// The Dataset of the store whose keys lie in `keys`: its metadata read now.
std::shared_ptr<const Dataset> dataset_of_zarr_store(std::shared_ptr<const agg::ZarrKeys> keys,
                                                     std::shared_ptr<const agg::PathPolicy> paths,
                                                     const AggregationOptions& options, bool serves_other_users) {
    const std::string& path = keys->path();
    MetadataScope scope(path);  // what the store's metadata makes is counted before it is built
    Gathered g;
    g.max_metadata_bytes = options.limits.max_metadata_bytes;
    g.serves_other_users = serves_other_users;
    g.files.push_back(path);
    try {
        gather(*keys, stem_of(path), g);
    } catch (const SourceError&) {
        throw;
    } catch (const remote::NetworkNeeded&) {
        throw;  // tried from the caches alone: the same open comes again with the network
    } catch (const std::runtime_error& e) {
        throw SourceError(path, std::string("not a readable Zarr store: ") + e.what());
    }
    auto store = std::make_shared<const agg::ZarrDirectoryStore>(std::move(g.set), std::move(paths), keys,
                                                                 std::move(g.layouts), std::move(g.files));
    Dataset dataset = agg::dataset_of_store(store);
    dataset.notes.insert(dataset.notes.end(), g.notes.begin(), g.notes.end());
    dataset.charge = scope.take();
    return std::make_shared<const Dataset>(std::move(dataset));
}

}  // namespace

std::shared_ptr<const Dataset> open_zarr_store(const std::string& path, const ConfinedRoots& confined,
                                               const AggregationOptions& options) {
    auto folder = std::make_shared<const ZarrFolder>(open_store_folder(path, confined), path);
    auto paths = std::make_shared<const agg::PathPolicy>(path, options.allowed_roots, options.path_rewrites,
                                                         options.missing_partitions);
    return dataset_of_zarr_store(folder, std::move(paths), options, options.serves_other_users);
}

std::shared_ptr<const Dataset> open_zarr_fragment_store(UniqueFd folder_fd, const std::string& path,
                                                        std::optional<agg::ZarrReaders> readers) {
    auto folder = std::make_shared<const ZarrFolder>(std::move(folder_fd), path, readers);
    auto paths = std::make_shared<const agg::PathPolicy>(path, std::vector<std::string>{path},
                                                         std::vector<std::pair<std::string, std::string>>{},
                                                         agg::MissingPartitions{});
    return dataset_of_zarr_store(folder, std::move(paths), AggregationOptions{}, false);
}

UniqueFd open_store_folder(const std::string& path, const ConfinedRoots& confined) {
    OpenResult dir = confined.open(path, O_RDONLY | O_DIRECTORY);
    if (!dir.fd)
        throw SystemCallError(path, "cannot open the Zarr store: " +
                                        (dir.reason.empty() ? std::string(std::strerror(dir.error)) : dir.reason),
                              dir.error);
    return std::move(dir.fd);
}

std::shared_ptr<const Dataset> open_remote_zarr_store(const std::string& url, const std::string& group,
                                                      const AggregationOptions& options) {
    std::string key;  // a sub-group of the store: its keys beneath the root's
    if (!group.empty() && group != "/") {
        key = group.front() == '/' ? group.substr(1) : group;
        if (auto why = agg::key_refusal(key); !why.empty())
            throw SourceError(url, "Zarr group \"" + group + "\" refused: " + why);
    }
    auto prefix = std::make_shared<const agg::RemoteZarrPrefix>(url, key);
    // No local file is named: the policy only gives messages a name.
    auto paths = std::make_shared<const agg::PathPolicy>("/", std::vector<std::string>{"/"},
                                                         std::vector<std::pair<std::string, std::string>>{},
                                                         options.missing_partitions);
    return dataset_of_zarr_store(prefix, std::move(paths), options, false);
}

std::vector<std::string> zarr_store_files(const Dataset& dataset) {
    for (const auto& v : dataset.variables)
        if (auto* s = dynamic_cast<const agg::ReferenceArraySource*>(v.source.get()))
            if (auto* z = dynamic_cast<const agg::ZarrDirectoryStore*>(&s->store())) return z->files();
    return {};
}

}  // namespace ncafs
