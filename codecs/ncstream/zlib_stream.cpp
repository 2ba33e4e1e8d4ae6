#include "codecs/ncstream/zlib_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::ncstream {

namespace {
constexpr size_t kChunk = 1 << 18;
}

struct ZlibDeflater::State {
    z_stream z{};
};

ZlibDeflater::ZlibDeflater(int level, Sink sink) : state_(new State), sink_(std::move(sink)), buffer_(kChunk) {
    if (level < -1 || level > 9) {
        delete state_;
        throw UsageError("deflate level must be -1 or 0..9, not " + std::to_string(level));
    }
    // windowBits 15 without +16/-: a zlib (RFC 1950) stream, not gzip or raw.
    if (deflateInit2(&state_->z, level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        delete state_;
        throw Error("zlib: deflateInit failed");
    }
}

ZlibDeflater::~ZlibDeflater() {
    deflateEnd(&state_->z);
    delete state_;
}

void ZlibDeflater::run(std::span<const uint8_t> input, int flush) {
    z_stream& z = state_->z;
    size_t done = 0;
    do {
        // avail_in is 32-bit: feed at most 1 GiB per round.
        const size_t take = std::min<size_t>(input.size() - done, size_t{1} << 30);
        z.next_in = const_cast<Bytef*>(input.data() + done);
        z.avail_in = static_cast<uInt>(take);
        const int f = (done + take == input.size()) ? flush : Z_NO_FLUSH;
        int rc;
        do {
            z.next_out = buffer_.data();
            z.avail_out = static_cast<uInt>(buffer_.size());
            rc = deflate(&z, f);
            if (rc == Z_STREAM_ERROR) throw Error("zlib: deflate failed");
            const size_t produced = buffer_.size() - z.avail_out;
            if (produced) {
                out_total_ += produced;
                sink_(std::span<const uint8_t>(buffer_.data(), produced));
            }
        } while (z.avail_out == 0 || (f == Z_FINISH && rc != Z_STREAM_END));
        done += take;
    } while (done < input.size());
}

void ZlibDeflater::feed(std::span<const uint8_t> input) {
    if (!input.empty()) run(input, Z_NO_FLUSH);
}

void ZlibDeflater::finish() { run({}, Z_FINISH); }

std::optional<std::string> inflate_streaming(uint64_t compressed_size, uint64_t expected,
                                             const std::function<void(uint64_t, std::span<uint8_t>)>& fetch,
                                             const std::function<bool(std::span<const uint8_t>, uint64_t)>& consume) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK) return std::string("zlib: inflateInit failed");
    struct Closer {
        z_stream* z;
        ~Closer() { inflateEnd(z); }
    } closer{&z};
    std::vector<uint8_t> in(std::min<uint64_t>(kChunk, std::max<uint64_t>(compressed_size, 1)));
    std::vector<uint8_t> out(kChunk);
    uint64_t fed = 0, produced = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        if (z.avail_in == 0) {
            if (fed == compressed_size) return std::string("deflated payload ends before its zlib stream does");
            const size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), compressed_size - fed));
            fetch(fed, std::span<uint8_t>(in.data(), n));
            z.next_in = in.data();
            z.avail_in = static_cast<uInt>(n);
            fed += n;
        }
        // Never let zlib produce past `expected` (+1 byte to notice a bomb).
        const uint64_t room = expected + 1 - produced;
        z.next_out = out.data();
        z.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size(), room));
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
            return std::string("corrupt zlib stream: ") + (z.msg ? z.msg : "inflate error");
        const size_t got = static_cast<size_t>(std::min<uint64_t>(out.size(), room)) - z.avail_out;
        if (produced + got > expected)
            return "zlib stream inflates to more than the " + std::to_string(expected) + " bytes announced";
        if (got && !consume(std::span<const uint8_t>(out.data(), got), produced)) return std::nullopt;
        produced += got;
        if (rc == Z_BUF_ERROR && got == 0 && z.avail_in != 0)
            return std::string("zlib stream makes no progress");
    }
    if (produced != expected)
        return "zlib stream inflates to " + std::to_string(produced) + " bytes, not the " + std::to_string(expected) +
               " announced";
    if (z.avail_in != 0 || fed != compressed_size) return std::string("bytes after the end of the zlib stream");
    return std::nullopt;
}

std::optional<std::string> inflate_exact(std::span<const uint8_t> compressed, uint8_t* out, uint64_t expected) {
    return inflate_streaming(
        compressed.size(), expected,
        [&](uint64_t off, std::span<uint8_t> buf) { std::memcpy(buf.data(), compressed.data() + off, buf.size()); },
        [&](std::span<const uint8_t> chunk, uint64_t at) {
            std::memcpy(out + at, chunk.data(), chunk.size());
            return true;
        });
}

}  // namespace ncafs::ncstream
