// Where a Zarr store's keys lie: a local folder held open (ZarrFolder) or
// a URL prefix on an HTTP(S) server or in S3 (RemoteZarrPrefix). Every key
// is a path beneath the store; one that is empty, absolute, or holds an
// empty, "." or ".." component is refused before anything is opened or
// fetched: nothing is read outside the store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "aggregation/zarr_store/zarr_chunk_readers.hpp"
#include "io/open_file.hpp"

namespace ncafs::agg {

class ZarrKeys {
public:
    virtual ~ZarrKeys() = default;

    // The store's folder or URL, for messages.
    virtual const std::string& path() const = 0;
    std::string path_of(const std::string& key) const { return key.empty() ? path() : path() + "/" + key; }

    // The object at key; nullptr when it does not exist. Throws SourceError
    // naming the object and the reason when the key is refused or the object
    // cannot be opened. With `readers` (allow_other, local stores), every
    // component after the first `trusted` ones must be readable by all of them.
    virtual std::shared_ptr<const OpenFile> open(const std::string& key, const ZarrReaders* readers = nullptr,
                                                 size_t trusted = 0) const = 0;
    // The whole object at key, at most max_bytes (more is an error); nullopt when absent.
    virtual std::optional<std::string> read(const std::string& key, uint64_t max_bytes) const;
    // Calls visit(name) for each sub-folder (array or group) of the store's
    // top (names starting with '.' skipped) until visit returns false, at
    // most max_entries entries looked at; returns false when it stopped there.
    virtual bool for_each_subfolder(uint64_t max_entries,
                                    const std::function<bool(const std::string&)>& visit) const = 0;
};

// The whole of file (null: absent), at most max_bytes (more is an error).
std::optional<std::string> read_whole(const std::shared_ptr<const OpenFile>& file, uint64_t max_bytes);

// One metadata file (.zarray, zarr.json, .zmetadata...) at most.
inline constexpr uint64_t kMaxZarrMetadataFileBytes = 16 << 20;

// A metadata file's JSON object, its depth checked and its parse charged to
// the metadata budget. Throws std::runtime_error naming `what` otherwise.
nlohmann::json parse_metadata_json(const std::string& text, const std::string& what);

// Why a key cannot name an object beneath a store ("" when it can).
std::string key_refusal(const std::string& key);

}  // namespace ncafs::agg
