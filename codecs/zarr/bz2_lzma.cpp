#include "codecs/zarr/bz2_lzma.hpp"

#include <bzlib.h>
#include <lzma.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace ncafs::zarr {
namespace {

[[noreturn]] void refuse_stream(const std::string& why) { throw std::runtime_error(why); }

std::string size_text(uint64_t n) { return std::to_string(n) + " bytes"; }

// The output buffer holds one byte more than the chunk may have: filling it
// is the proof of a bomb, found before anything past it is decoded.
[[noreturn]] void refuse_bomb(const char* id, uint64_t bound) {
    refuse_stream(std::string(id) + " data decode to more than " + size_text(bound) + " (the chunk's size): refused");
}

void finish(const char* id, std::vector<uint8_t>& out, uint64_t produced, uint64_t bound, bool exact) {
    if (produced > bound) refuse_bomb(id, bound);
    if (exact && produced != bound)
        refuse_stream(std::string(id) + " data decode to " + size_text(produced) + ", the chunk needs " + size_text(bound));
    out.resize(produced);
}

// One bzip2 stream from in[used...] into out[produced...]: true when it
// ended, false when the bytes there are no bzip2 stream at all.
bool bz2_stream(std::span<const uint8_t> in, size_t& used, std::vector<uint8_t>& out, uint64_t& produced) {
    bz_stream s{};
    if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) refuse_stream("bz2: out of memory");
    int ret = BZ_OK;
    while (ret == BZ_OK) {
        const size_t in_left = in.size() - used, out_left = out.size() - produced;
        s.next_in = const_cast<char*>(reinterpret_cast<const char*>(in.data() + used));
        s.avail_in = static_cast<unsigned>(std::min<size_t>(in_left, UINT_MAX));
        s.next_out = reinterpret_cast<char*>(out.data() + produced);
        s.avail_out = static_cast<unsigned>(std::min<size_t>(out_left, UINT_MAX));
        const unsigned in_before = s.avail_in, out_before = s.avail_out;
        ret = BZ2_bzDecompress(&s);
        used += in_before - s.avail_in;
        produced += out_before - s.avail_out;
        if (ret != BZ_OK) break;
        if (produced == out.size()) break;  // a bomb: the caller refuses it
        if (in_before == s.avail_in && out_before == s.avail_out) {
            BZ2_bzDecompressEnd(&s);
            refuse_stream("bz2 data are truncated (the stream ends before its end marker)");
        }
    }
    BZ2_bzDecompressEnd(&s);
    if (ret == BZ_STREAM_END || produced == out.size()) return true;
    if (ret == BZ_DATA_ERROR_MAGIC) return false;
    refuse_stream(ret == BZ_MEM_ERROR ? "bz2: out of memory" : "bz2 data are corrupt");
}

lzma_ret lzma_start(lzma_stream& s, LzmaFormat format) {
    switch (format) {
        case LzmaFormat::Auto: return lzma_auto_decoder(&s, kLzmaMemoryLimit, LZMA_CONCATENATED);
        case LzmaFormat::Xz: return lzma_stream_decoder(&s, kLzmaMemoryLimit, LZMA_CONCATENATED);
        case LzmaFormat::Alone: return lzma_alone_decoder(&s, kLzmaMemoryLimit);
    }
    return LZMA_PROG_ERROR;
}

[[noreturn]] void lzma_fail(lzma_ret ret, bool input_left) {
    switch (ret) {
        case LZMA_MEMLIMIT_ERROR:
            refuse_stream("lzma data need more than " + size_text(kLzmaMemoryLimit) + " of decoder memory: refused");
        case LZMA_FORMAT_ERROR: refuse_stream("lzma data are not in the declared format");
        case LZMA_OPTIONS_ERROR: refuse_stream("lzma data use options liblzma does not support");
        case LZMA_MEM_ERROR: refuse_stream("lzma: out of memory");
        case LZMA_BUF_ERROR:
            if (!input_left) refuse_stream("lzma data are truncated (the stream ends early)");
            [[fallthrough]];
        default: refuse_stream("lzma data are corrupt");
    }
}

}  // namespace

std::vector<uint8_t> bz2_bounded(std::span<const uint8_t> in, uint64_t bound, bool exact) {
    std::vector<uint8_t> out(bound + 1);
    size_t used = 0;
    uint64_t produced = 0;
    // Streams one after the other; bytes after a whole stream that start no
    // stream are ignored (Python's bz2.decompress).
    bool first = true;
    while (used < in.size() && produced <= bound) {
        if (!bz2_stream(in, used, out, produced)) {
            if (first) refuse_stream("bz2 data are not a bzip2 stream");
            break;
        }
        first = false;
    }
    if (first) refuse_stream("bz2 data are empty");
    finish("bz2", out, produced, bound, exact);
    return out;
}

std::vector<uint8_t> lzma_bounded(std::span<const uint8_t> in, LzmaFormat format, uint64_t bound, bool exact) {
    std::vector<uint8_t> out(bound + 1);
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret ret = lzma_start(s, format);
    if (ret != LZMA_OK) lzma_fail(ret, true);
    s.next_in = in.data();
    s.avail_in = in.size();
    s.next_out = out.data();
    s.avail_out = out.size();
    while ((ret = lzma_code(&s, LZMA_FINISH)) == LZMA_OK && s.avail_out > 0) {
    }
    const uint64_t produced = s.total_out;
    const bool input_left = s.avail_in > 0;
    lzma_end(&s);
    if (s.avail_out == 0) refuse_bomb("lzma", bound);
    if (ret != LZMA_STREAM_END) lzma_fail(ret, input_left);
    finish("lzma", out, produced, bound, exact);
    return out;
}

}  // namespace ncafs::zarr
