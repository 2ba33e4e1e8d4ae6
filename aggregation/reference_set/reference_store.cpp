#include "aggregation/reference_set/reference_store.hpp"

#include <algorithm>
#include <cerrno>
#include <set>

#include "aggregation/read/dataset_cache.hpp"
#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "io/file_pins.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

ReferenceStore::ReferenceStore(ReferenceSet set, std::shared_ptr<const PathPolicy> paths)
    : set_(std::move(set)), paths_(std::move(paths)) {
    resolved_.resize(set_.urls.size());
    refusals_.resize(set_.urls.size());
    // Resolved once (lexically, no file opened): a refused URL fails the
    // reads of the keys naming it, with the reason.
    for (size_t i = 0; i < set_.urls.size(); ++i) {
        try {
            resolved_[i] = paths_->resolve(set_.urls[i], false, "");
        } catch (const std::exception& e) {
            refusals_[i] = e.what();
        }
    }
}

void ReferenceStore::refuse(const std::string& key, const std::string& reason) const {
    throw SourceError(file(), "reference \"" + key + "\": " + reason);
}

std::shared_ptr<const OpenFile> ReferenceStore::open_object(const std::string& key, uint32_t url) const {
    if (resolved_[url].empty()) refuse(key, refusals_[url]);
    const std::string& name = resolved_[url];
    try {
        if (remote::is_remote_url(name)) return open_remote(name, url);
    } catch (const SourceError& e) {
        refuse(key, e.what());
    }
    OpenResult r = open_regular_file(name, &paths_->confinement());
    if (!r.fd) refuse(key, name + ": " + (r.error == ENOENT ? std::string("does not exist") : r.reason));
    // The file the callers were checked for, or nothing (io/file_pins.hpp).
    if (std::string refused = FilePins::shared().refusal(name, r.fd.get()); !refused.empty())
        refuse(key, name + ": " + refused);
    return OpenFile::adopt(r.fd.release(), name, r.st);
}

std::shared_ptr<const OpenFile> ReferenceStore::open_remote(const std::string& url_text, uint32_t url) const {
    auto& store = remote::RemoteStore::shared();
    const auto now = std::chrono::steady_clock::now();
    {
        MutexLock lock(remote_mutex_);
        if (auto hit = remote_opens_.get(url);
            hit && now - hit->when < DatasetCache::kRemoteRevalidate && !store.replaced(*hit->file->remote_bytes()))
            return hit->file;
    }
    auto file = OpenFile::remote(store.open(url_text));  // outside the lock: a HEAD
    MutexLock lock(remote_mutex_);
    remote_opens_.put(url, RemoteOpen{file, now});
    return file;
}

std::optional<ReferenceStore::Located> ReferenceStore::locate(const std::string& key, uint64_t max_bytes) const {
    auto it = set_.refs.find(key);
    if (it == set_.refs.end()) return std::nullopt;
    const Reference& ref = it->second;
    Located where;
    if (ref.kind == Reference::Kind::Inline) {
        if (ref.data.size() > max_bytes)
            refuse(key, std::to_string(ref.data.size()) + " inline bytes exceed the bound of " + std::to_string(max_bytes));
        where.tag = "inline";
        return where;
    }
    where.file = open_object(key, ref.url);
    const uint64_t size = where.file->size();
    where.offset = ref.kind == Reference::Kind::Range ? ref.offset : 0;
    where.length = ref.kind == Reference::Kind::Range ? ref.length : size;
    if (!checked::fits_in(where.offset, where.length, size))
        refuse(key, "bytes " + std::to_string(where.offset) + " + " + std::to_string(where.length) + " lie beyond the end of " +
                        where.file->path() + " (" + std::to_string(size) + " bytes)");
    if (where.length > max_bytes)
        refuse(key, std::to_string(where.length) + " bytes of " + where.file->path() + " exceed the bound of " +
                        std::to_string(max_bytes) + " for this key");
    const FileIdentity& id = where.file->identity();
    where.tag = std::to_string(id.device) + ":" + std::to_string(id.inode) + ":" + std::to_string(id.mtime_ns) + ":" +
                std::to_string(id.ctime_ns) + ":" + std::to_string(id.size) + "@" + std::to_string(where.offset) + "+" +
                std::to_string(where.length);
    return where;
}

std::vector<uint8_t> ReferenceStore::read(const std::string& key, const Located& where) const {
    if (!where.file) {
        const std::string& data = set_.refs.at(key).data;
        return std::vector<uint8_t>(data.begin(), data.end());
    }
    std::vector<uint8_t> bytes(where.length);
    if (!bytes.empty()) where.file->pread_exact(bytes.data(), bytes.size(), where.offset);
    return bytes;
}

std::optional<std::vector<uint8_t>> ReferenceStore::fetch(const std::string& key, uint64_t max_bytes) const {
    auto where = locate(key, max_bytes);
    if (!where) return std::nullopt;
    return read(key, *where);
}

std::optional<std::vector<uint8_t>> ReferenceStore::inline_metadata(const std::string& key, uint64_t max_bytes) const {
    auto it = set_.refs.find(key);
    if (it == set_.refs.end()) return std::nullopt;
    const Reference& ref = it->second;
    if (ref.kind != Reference::Kind::Inline) {
        const uint32_t url = ref.url;
        if (resolved_[url].empty()) refuse(key, refusals_[url]);
        refuse(key, "metadata names another object (" + resolved_[url] +
                        "): metadata is read from the reference set itself only");
    }
    return fetch(key, max_bytes);
}

std::vector<std::string> ReferenceStore::verify(size_t max_reports) const {
    std::vector<std::string> keys;
    for (const auto& [key, ref] : set_.refs)
        if (ref.kind != Reference::Kind::Inline) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    std::unordered_map<uint32_t, std::shared_ptr<const OpenFile>> opened;  // per URL: null when refused
    std::unordered_map<uint32_t, std::string> refused;
    std::vector<std::string> problems;
    size_t more = 0;
    for (const auto& key : keys) {
        const Reference& ref = set_.refs.at(key);
        std::string problem;
        if (!opened.count(ref.url)) {
            try {
                opened[ref.url] = open_object(key, ref.url);
            } catch (const SourceError& e) {
                opened[ref.url] = nullptr;
                refused[ref.url] = e.what();
            }
        }
        if (const auto& file = opened[ref.url]; !file) {
            problem = refused[ref.url];
        } else if (ref.kind == Reference::Kind::Range && !checked::fits_in(ref.offset, ref.length, file->size())) {
            problem = file->path() + ": bytes " + std::to_string(ref.offset) + " + " + std::to_string(ref.length) +
                      " lie beyond its end (" + std::to_string(file->size()) + " bytes)";
            problem = SourceError(this->file(), "reference \"" + key + "\": " + problem).what();
        }
        if (problem.empty()) continue;
        if (problems.size() < max_reports) problems.push_back(std::move(problem));
        else ++more;
    }
    if (more) problems.push_back(file() + ": " + std::to_string(more) + " more references refused or out of range");
    return problems;
}

std::vector<std::string> ReferenceStore::local_files() const {
    std::vector<std::string> files;
    std::set<std::string> seen;
    for (const auto& name : resolved_)
        if (!name.empty() && !remote::is_remote_url(name) && seen.insert(name).second) files.push_back(name);
    return files;
}

bool ReferenceStore::names_remote_objects() const {
    for (const auto& name : resolved_)
        if (remote::is_remote_url(name)) return true;
    return false;
}

}  // namespace ncafs::agg
