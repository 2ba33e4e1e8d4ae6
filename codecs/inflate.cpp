#include "codecs/inflate.hpp"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace ncafs {

namespace {

std::string size_text(uint64_t n) { return std::to_string(n) + " bytes"; }

// libdeflate's decompressors are not thread-safe and cost an allocation: one
// per thread, made on the thread's first inflate.
libdeflate_decompressor* thread_decompressor() {
    struct Free {
        void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
    };
    thread_local const std::unique_ptr<libdeflate_decompressor, Free> decompressor(libdeflate_alloc_decompressor());
    if (!decompressor) throw std::runtime_error("libdeflate: cannot allocate a decompressor");
    return decompressor.get();
}

struct Inflated {
    libdeflate_result result;
    size_t in_used = 0;
    size_t out_made = 0;
};

// One zlib stream or gzip member from the start of `in`; bytes after its end
// are not read.
Inflated inflate_one(std::span<const uint8_t> in, uint8_t* out, size_t out_room, bool gzip) {
    Inflated r{};
    const auto decode = gzip ? libdeflate_gzip_decompress_ex : libdeflate_zlib_decompress_ex;
    r.result = decode(thread_decompressor(), in.data(), in.size(), out, out_room, &r.in_used, &r.out_made);
    return r;
}

// libdeflate reads up to 8 bytes past the end of its input as zeros before it
// notices the input is short, and those can decode to more than the room
// left: a truncated stream then looks like a bomb. zlib's streaming inflate
// never reads past its input and tells them apart (on the error path only,
// into a small scratch buffer).
bool zlib_overflows(std::span<const uint8_t> in, uint64_t room, bool gzip) {
    z_stream z{};
    if (inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) return false;
    std::vector<uint8_t> scratch(64 << 10);
    size_t fed = 0;
    int rc = Z_OK;
    while (rc == Z_OK && z.total_out <= room) {
        z.next_in = const_cast<Bytef*>(in.data() + fed);
        z.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - fed, UINT32_MAX));
        const uInt offered = z.avail_in;
        z.next_out = scratch.data();
        z.avail_out = static_cast<uInt>(scratch.size());
        rc = inflate(&z, Z_NO_FLUSH);
        fed += offered - z.avail_in;
    }
    const bool over = z.total_out > room;
    inflateEnd(&z);
    return over;
}

// What Python's gzip module (numcodecs' decoder) allows between members.
size_t skip_zero_padding(std::span<const uint8_t> in, size_t at) {
    while (at < in.size() && in[at] == 0) ++at;
    return at;
}

}  // namespace

size_t inflate_bounded_into(std::span<const uint8_t> in, std::span<uint8_t> out, bool exact, bool gzip) {
    const std::string id = gzip ? "gzip" : "zlib";
    uint8_t spare = 0;  // an address to write to when `out` is empty
    uint8_t* const base = out.empty() ? &spare : out.data();
    const size_t bound = out.size();
    size_t produced = 0;
    size_t consumed = 0;
    // zlib: one stream, bytes after it ignored (as zlib, HDF5's filter and
    // numcodecs do); gzip: members one after the other (as Python's gzip).
    do {
        const std::span<const uint8_t> rest = in.subspan(consumed);
        const Inflated r = inflate_one(rest, base + produced, bound - produced, gzip);
        if (r.result == LIBDEFLATE_INSUFFICIENT_SPACE && zlib_overflows(rest, bound - produced, gzip))
            throw std::runtime_error(id + " data decode to more than " + size_text(bound) + " (the chunk's size): refused");
        if (r.result != LIBDEFLATE_SUCCESS) throw std::runtime_error(id + " data are corrupt or truncated");
        produced += r.out_made;
        consumed = gzip ? skip_zero_padding(in, consumed + r.in_used) : in.size();
    } while (consumed < in.size());
    if (exact && produced != bound)
        throw std::runtime_error(id + " data decode to " + size_text(produced) + ", the chunk needs " + size_text(bound));
    return produced;
}

std::vector<uint8_t> inflate_bounded(std::span<const uint8_t> in, uint64_t bound, bool exact, bool gzip) {
    std::vector<uint8_t> buffer(bound);
    buffer.resize(inflate_bounded_into(in, buffer, exact, gzip));
    return buffer;
}

void unshuffle_bytes_into(std::span<const uint8_t> in, size_t element_size, uint8_t* out) {
    const size_t n = in.size() / element_size;
    if (element_size == 4) {  // the common case, in a loop the compiler unrolls
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < 4; ++j) out[i * 4 + j] = in[j * n + i];
    } else {
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < element_size; ++j) out[i * element_size + j] = in[j * n + i];
    }
    const size_t whole = n * element_size;
    std::copy(in.begin() + static_cast<std::ptrdiff_t>(whole), in.end(), out + whole);
}

std::vector<uint8_t> unshuffle_bytes(std::span<const uint8_t> in, size_t element_size) {
    std::vector<uint8_t> out(in.size());
    unshuffle_bytes_into(in, element_size, out.data());
    return out;
}

}  // namespace ncafs
