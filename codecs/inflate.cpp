#include "codecs/inflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ncafs {

namespace {

std::string size_text(uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

std::vector<uint8_t> inflate_bounded(std::span<const uint8_t> in, uint64_t bound, bool exact, bool gzip) {
    const std::string id = gzip ? "gzip" : "zlib";
    z_stream z{};
    if (inflateInit2(&z, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) throw std::runtime_error(id + ": inflateInit failed");
    std::vector<uint8_t> buffer(bound);
    z.next_in = const_cast<Bytef*>(in.data());
    uint8_t probe = 0;
    uint64_t in_left = in.size();
    int rc = Z_OK;
    // Inputs and outputs beyond 4 GiB go through in uInt-sized steps.
    while (rc == Z_OK) {
        const uint64_t produced = z.total_out;
        if (produced == buffer.size()) {  // full: one more byte would prove the bomb
            z.next_out = &probe;
            z.avail_out = 1;
        } else {
            z.next_out = buffer.data() + produced;
            z.avail_out = static_cast<uInt>(std::min<uint64_t>(buffer.size() - produced, UINT32_MAX));
        }
        z.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, UINT32_MAX));
        const uInt before = z.avail_in;
        rc = inflate(&z, Z_NO_FLUSH);
        in_left -= before - z.avail_in;
        if (z.total_out > buffer.size()) {
            inflateEnd(&z);
            throw std::runtime_error(id + " data decode to more than " + size_text(buffer.size()) +
                                     " (the chunk's size): refused");
        }
        if (rc == Z_BUF_ERROR && in_left == 0) break;
    }
    const uint64_t produced = z.total_out;
    const std::string message = z.msg ? std::string(": ") + z.msg : "";
    inflateEnd(&z);
    if (rc != Z_STREAM_END) throw std::runtime_error(id + " data are corrupt or truncated" + message);
    if (exact && produced != bound)
        throw std::runtime_error(id + " data decode to " + size_text(produced) + ", the chunk needs " + size_text(bound));
    buffer.resize(produced);
    return buffer;
}

std::vector<uint8_t> unshuffle_bytes(std::span<const uint8_t> in, size_t element_size) {
    std::vector<uint8_t> out(in.begin(), in.end());
    const size_t n = in.size() / element_size;
    if (element_size == 4) {  // the common case, in a loop the compiler unrolls
        for (size_t i = 0; i < n; ++i)
            for (size_t j = 0; j < 4; ++j) out[i * 4 + j] = in[j * n + i];
        return out;
    }
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < element_size; ++j) out[i * element_size + j] = in[j * n + i];
    return out;
}

}  // namespace ncafs
