// The record every block and local copy in the disk cache ends with: a
// magic, the entry's own name (which stands for the object's URL, version
// and block), the payload's length and its SHA-256. A file under a cache
// name whose record does not say that name, that length and that hash was
// torn (a crash before the data reached the disk), written by something
// else, or belongs to another entry: it is a miss, never bytes served.
// Several processes (mounts, `ncafs export`, `ncafs check`) fill one
// cache_dir at once; each writes its own temporary and publishes it whole,
// so a reader sees a sealed entry or none.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ncafs::remote {

constexpr size_t kRecordBytes = 16 + 64 + 8 + 32;  // magic, name, length, SHA-256

using Digest = std::array<unsigned char, 32>;

// SHA-256 of a payload written in pieces, then its record.
class EntrySeal {
public:
    EntrySeal();
    void add(const void* data, size_t n);
    // The record for `name` (64 hex digits) of the bytes added (`length` of them).
    std::string finish(std::string_view name, uint64_t length);

private:
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

// What a record says, when it is one.
struct EntryRecord {
    std::string name;
    uint64_t length = 0;
    Digest digest{};
};
bool parse_record(std::string_view bytes, EntryRecord& out);

// True when `record` is the record of `payload` (length bytes) under `name`.
bool record_matches(std::string_view record, std::string_view name, const void* payload, uint64_t length);

// SHA-256 of the first `length` bytes of fd; false on a read error or a short file.
bool digest_of_file(int fd, uint64_t length, Digest& out);

}  // namespace ncafs::remote
