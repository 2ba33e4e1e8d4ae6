// VolumeStore over the object-store directory form (openvds-notes.md §2.3,
// §2.9): VolumeDataLayout and LayerStatus JSON, chunk objects in
// <layer>/<index>, hashes in raw pages <layer>/ChunkMetadata/<page> of
// chunkMetadataPageSize x chunkMetadataByteSize bytes. LayerStatus is the
// only list of layers; layer names must be file names in the volume's folder
// (no '/', no leading '.'). Every member is opened from the volume
// directory's fd, one component at a time, never
// following a symlink (O_NOFOLLOW), and must be a regular file: a member
// cannot lead out of the directory the catalog opened confined.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "codecs/error.hpp"
#include "codecs/vds/vds_layout.hpp"
#include "codecs/vds/vds_store.hpp"
#include "io/system_call_error.hpp"

namespace ncafs::vds {
namespace {

using Json = nlohmann::json;
constexpr uint64_t kMaxJsonBytes = 16u << 20;

using SharedDirFd = std::shared_ptr<const UniqueFd>;

// The folder dir/components[0]/.../components[count-1], walked one component
// at a time from dir's fd without following any symlink (O_NOFOLLOW on every
// step): the one walk every member access takes. `at` is the folder's fd
// (dir's own when count is 0), valid while this lives; -1 with `error` set to
// the errno of the step that failed.
struct Folder {
    UniqueFd owned;
    int at = -1;
    int error = 0;
};

Folder open_folder(const UniqueFd& dir, const std::vector<std::string>& components, size_t count) {
    Folder folder;
    folder.at = dir.get();
    for (size_t i = 0; i < count; ++i) {
        const int fd = ::openat(folder.at, components[i].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
        if (fd < 0) {
            folder.error = errno;
            folder.at = -1;
            return folder;
        }
        folder.owned = UniqueFd(fd);
        folder.at = fd;
    }
    return folder;
}

// dir_path/components[0]/.../components[n-1], for messages and listings.
std::string member_path(const std::string& dir_path, const std::vector<std::string>& components) {
    std::string path = dir_path;
    for (const auto& c : components) path += "/" + c;
    return path;
}

// dir/components[0]/.../components[n-1], opened from dir's fd without
// following any symlink; the last must be a regular file. SourceError naming
// the member otherwise.
std::shared_ptr<const OpenFile> open_member(const SharedDirFd& dir, const std::string& dir_path,
                                            const std::vector<std::string>& components) {
    if (components.empty()) throw UsageError("open_member: no member named");
    const std::string path = member_path(dir_path, components);
    const Folder folder = open_folder(*dir, components, components.size() - 1);
    const int fd = folder.at < 0 ? -1
                                 : ::openat(folder.at, components.back().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        const int e = folder.at < 0 ? folder.error : errno;
        const std::string why = e == ELOOP || e == ENOTDIR
                                    ? "a symlink or not a directory: members are not followed through symlinks"
                                    : std::strerror(e);
        throw SourceError(path, "VDS directory member cannot be opened: " + why);
    }
    return OpenFile::adopt(fd, path);  // refuses anything but a regular file
}

std::vector<uint8_t> read_member(const SharedDirFd& dir, const std::string& dir_path,
                                 const std::vector<std::string>& components, uint64_t max_bytes) {
    return read_small_file(*open_member(dir, dir_path, components), max_bytes);
}

// Regular files of dir/components named by a decimal number below `limit`
// (chunk objects, hash pages: the only ones a read can open), as paths under
// dir_path; nothing when the folder is absent or a symlink (reads of its
// members fail anyway). A folder holding any number of other files adds at
// most `limit` names.
void add_numbered_files(const SharedDirFd& dir, const std::string& dir_path, const std::vector<std::string>& components,
                        uint64_t limit, std::vector<std::string>& out) {
    const Folder folder = open_folder(*dir, components, components.size());
    if (folder.at < 0) return;
    const int at = folder.at;
    const std::string path = member_path(dir_path, components);
    DIR* listing = ::fdopendir(::dup(at));
    if (!listing) return;
    while (const dirent* e = ::readdir(listing)) {
        const std::string name = e->d_name;
        if (name.empty() || name.size() > 19 ||
            !std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
            std::stoull(name) >= limit)
            continue;
        struct stat st {};
        if (::fstatat(at, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) out.push_back(path + "/" + name);
    }
    ::closedir(listing);
}

struct LayerStatus {
    std::string name;
    Compression compression = Compression::None;
    uint64_t chunk_count = 0, page_size = 0, entry_size = 0;
    // Stored page name per page, -1 = none; empty when LayerStatus has no
    // pageDirectory (page p is then stored as p: nothing sized by chunkCount).
    std::vector<int64_t> page_directory;
    int64_t stored_page(uint64_t page) const {
        return page_directory.empty() ? static_cast<int64_t>(page) : page_directory[page];
    }
};

int64_t integer(const Json& o, const char* key, int64_t lo, int64_t hi, const std::string& file, const std::string& layer) {
    if (!o.contains(key) || !o[key].is_number_integer())
        throw FormatError(file, 0, "LayerStatus: layer " + layer + ": '" + key + "' missing or not an integer");
    const int64_t v = o[key].get<int64_t>();
    if (v < lo || v > hi)
        throw FormatError(file, 0, "LayerStatus: layer " + layer + ": '" + key + "' = " + std::to_string(v) + " out of range");
    return v;
}

Compression compression_named(const std::string& s, const std::string& file, const std::string& layer) {
    if (s == "None") return Compression::None;
    if (s == "RLE") return Compression::Rle;
    if (s == "Zip") return Compression::Zip;
    if (s.rfind("Wavelet", 0) == 0) throw FormatError(file, 0, "layer " + layer + ": Wavelet compression is not supported");
    throw FormatError(file, 0, "layer " + layer + ": unknown compression method '" + s + "'");
}

LayerStatus parse_status(const Json& o, const std::string& file) {
    if (!o.is_object() || !o.contains("layerName") || !o["layerName"].is_string())
        throw FormatError(file, 0, "LayerStatus: an entry without a layerName");
    LayerStatus s;
    s.name = o["layerName"].get<std::string>();
    if (s.name.empty() || s.name.find('/') != std::string::npos || s.name[0] == '.' || s.name.find('\0') != std::string::npos)
        throw FormatError(file, 0,
                          "LayerStatus: layer name '" + s.name + "' is not a file name in the volume's folder");
    const Json method = o.contains("compressionMethod") ? o["compressionMethod"] : Json("None");
    if (!method.is_string()) throw FormatError(file, 0, "LayerStatus: layer " + s.name + ": compressionMethod not a string");
    s.compression = compression_named(method.get<std::string>(), file, s.name);
    s.chunk_count = static_cast<uint64_t>(integer(o, "chunkCount", 0, int64_t{1} << 31, file, s.name));
    s.page_size = static_cast<uint64_t>(integer(o, "chunkMetadataPageSize", 1, int64_t{1} << 20, file, s.name));
    s.entry_size = static_cast<uint64_t>(integer(o, "chunkMetadataByteSize", 8, 4096, file, s.name));
    if (!o.contains("hasChunkMetadataPages") || o["hasChunkMetadataPages"] != true)
        throw FormatError(file, 0, "LayerStatus: layer " + s.name + ": no chunk metadata pages (hasChunkMetadataPages)");
    const uint64_t pages = s.chunk_count == 0 ? 0 : (s.chunk_count - 1) / s.page_size + 1;
    if (o.contains("pageDirectory")) {
        const Json& d = o["pageDirectory"];
        if (!d.is_array() || d.size() != pages)
            throw FormatError(file, 0, "LayerStatus: layer " + s.name + ": pageDirectory does not list " + std::to_string(pages) + " pages");
        for (const auto& p : d) {
            if (!p.is_number_integer() || p.get<int64_t>() < -1)
                throw FormatError(file, 0, "LayerStatus: layer " + s.name + ": bad pageDirectory entry");
            s.page_directory.push_back(p.get<int64_t>());
        }
    }
    return s;
}

// One past the highest hash page name a read of this layer can open.
uint64_t page_limit(const LayerStatus& s) {
    const uint64_t pages = s.chunk_count == 0 ? 0 : (s.chunk_count - 1) / s.page_size + 1;
    if (s.page_directory.empty()) return pages;
    int64_t highest = -1;
    for (int64_t p : s.page_directory) highest = std::max(highest, p);
    return static_cast<uint64_t>(highest + 1);
}

class DirectoryLayer final : public LayerStore {
public:
    DirectoryLayer(SharedDirFd fd, std::string dir, LayerStatus s)
        : fd_(std::move(fd)), dir_(std::move(dir)), status_(std::move(s)) {}
    uint64_t chunk_count() const override { return status_.chunk_count; }
    Compression compression() const override { return status_.compression; }
    uint64_t hash(uint64_t index) const override {
        if (index >= status_.chunk_count) throw UsageError("layer " + status_.name + ": chunk index out of range");
        const int64_t page = status_.stored_page(index / status_.page_size);
        if (page < 0) return 0;  // page never written
        auto f = open_member(fd_, dir_, {status_.name, "ChunkMetadata", std::to_string(page)});
        const std::string& path = f->path();
        const uint64_t at = (index % status_.page_size) * status_.entry_size;
        if (f->size() < at + 8)
            throw FormatError(path, at, "layer " + status_.name + " chunk " + std::to_string(index) + ": metadata page too short");
        uint64_t h;
        f->pread_exact(&h, 8, at);
        return h;
    }
    StoredObject read(uint64_t index, uint64_t max_bytes) const override {
        // Refused from fstat when larger: a sparse 1 GiB object is never read.
        return {read_member(fd_, dir_, {status_.name, std::to_string(index)}, max_bytes),
                dir_ + "/" + status_.name + "/" + std::to_string(index), 0};
    }

private:
    SharedDirFd fd_;
    std::string dir_;
    LayerStatus status_;
};

class DirectoryStore final : public VolumeStore {
public:
    DirectoryStore(SharedDirFd fd, std::string dir) : fd_(std::move(fd)), dir_(std::move(dir)) {
        const std::string file = dir_ + "/LayerStatus";
        const auto status_file = open_member(fd_, dir_, {"LayerStatus"});
        const auto bytes = read_small_file(*status_file, kMaxJsonBytes);
        const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        check_json_shape(text, file);
        Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
        if (doc.is_discarded() || !doc.is_array()) throw FormatError(file, 0, "LayerStatus is not a JSON array");
        for (auto& o : doc) raw_.push_back(std::move(o));
        for (const auto& o : raw_) {
            if (!o.is_object() || !o.contains("layerName") || !o["layerName"].is_string())
                throw FormatError(file, 0, "LayerStatus: an entry without a layerName");
            names_.push_back(o["layerName"].get<std::string>());
        }
        identity_ = status_file->identity();
    }
    const std::string& path() const override { return dir_; }
    FileIdentity identity() const override { return identity_; }
    std::string layout_text() const override {
        const auto bytes = read_member(fd_, dir_, {"VolumeDataLayout"}, kMaxJsonBytes);
        return std::string(bytes.begin(), bytes.end());
    }
    std::vector<std::string> layer_names() const override { return names_; }
    std::vector<std::string> member_files() const override {
        std::vector<std::string> files{dir_ + "/VolumeDataLayout", dir_ + "/LayerStatus"};
        for (size_t i = 0; i < names_.size(); ++i) {
            const std::string& name = names_[i];
            if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') continue;  // never opened
            const LayerStatus status = parse_status(raw_[i], dir_ + "/LayerStatus");
            add_numbered_files(fd_, dir_, {name}, status.chunk_count, files);
            add_numbered_files(fd_, dir_, {name, "ChunkMetadata"}, page_limit(status), files);
        }
        return files;
    }
    std::shared_ptr<const LayerStore> layer(const std::string& name) const override {
        for (size_t i = 0; i < names_.size(); ++i)
            if (names_[i] == name)
                return std::make_shared<const DirectoryLayer>(fd_, dir_, parse_status(raw_[i], dir_ + "/LayerStatus"));
        return nullptr;
    }

private:
    SharedDirFd fd_;
    std::string dir_;
    std::vector<Json> raw_;
    std::vector<std::string> names_;
    FileIdentity identity_;
};

}  // namespace

std::shared_ptr<const VolumeStore> open_directory_store(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        throw SystemCallError(path, std::string("cannot open the VDS directory: ") + std::strerror(e), e);
    }
    return open_directory_store(UniqueFd(fd), path);
}

std::shared_ptr<const VolumeStore> open_directory_store(UniqueFd directory, const std::string& path) {
    return std::make_shared<const DirectoryStore>(std::make_shared<const UniqueFd>(std::move(directory)), path);
}

}  // namespace ncafs::vds
