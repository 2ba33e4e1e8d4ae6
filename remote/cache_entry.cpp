#include "remote/cache_entry.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

namespace ncafs::remote {
namespace {

constexpr char kMagic[16] = "ncafs-entry-v1\n";
constexpr size_t kNameBytes = 64;

void put_u64(std::string& out, uint64_t v) {
    for (int i = 7; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_u64(const unsigned char* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
    return v;
}

Digest digest_of(const void* data, uint64_t n) {
    Digest d{};
    unsigned int length = 0;
    EVP_Digest(data, static_cast<size_t>(n), d.data(), &length, EVP_sha256(), nullptr);
    return d;
}

}  // namespace

EntrySeal::EntrySeal() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) throw std::bad_alloc();
}

void EntrySeal::add(const void* data, size_t n) { EVP_DigestUpdate(context_.get(), data, n); }

std::string EntrySeal::finish(std::string_view name, uint64_t length) {
    Digest d{};
    unsigned int n = 0;
    EVP_DigestFinal_ex(context_.get(), d.data(), &n);
    std::string record(kMagic, sizeof kMagic);
    std::string padded(name.substr(0, kNameBytes));
    padded.resize(kNameBytes, '\0');
    record += padded;
    put_u64(record, length);
    record.append(reinterpret_cast<const char*>(d.data()), d.size());
    return record;
}

bool parse_record(std::string_view bytes, EntryRecord& out) {
    if (bytes.size() != kRecordBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return false;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + sizeof kMagic;
    out.name.assign(reinterpret_cast<const char*>(p), strnlen(reinterpret_cast<const char*>(p), kNameBytes));
    out.length = get_u64(p + kNameBytes);
    std::memcpy(out.digest.data(), p + kNameBytes + 8, out.digest.size());
    return true;
}

bool record_matches(std::string_view record, std::string_view name, const void* payload, uint64_t length) {
    EntryRecord r;
    return parse_record(record, r) && r.name == name && r.length == length && r.digest == digest_of(payload, length);
}

bool digest_of_file(int fd, uint64_t length, Digest& out) {
    EntrySeal seal;
    std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(length, 1 << 20)));
    for (uint64_t at = 0; at < length;) {
        ssize_t n = ::pread(fd, buffer.data(), static_cast<size_t>(std::min<uint64_t>(buffer.size(), length - at)),
                            static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        seal.add(buffer.data(), static_cast<size_t>(n));
        at += static_cast<uint64_t>(n);
    }
    EntryRecord r;
    return parse_record(seal.finish("", length), r) && (out = r.digest, true);
}

}  // namespace ncafs::remote
