#include "codecs/zarr/zarr_codecs.hpp"

#include <blosc.h>
#include <lz4.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <bit>
#include <type_traits>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "codecs/inflate.hpp"
#include "codecs/type_dispatch.hpp"
#include "codecs/zarr/bz2_lzma.hpp"
#include "codecs/zarr/zarr_order.hpp"

namespace ncafs::zarr {

namespace {

constexpr const char* kCodecs[] = {"zlib", "gzip",  "zstd",    "lz4",   "blosc",
                                   "bz2",  "lzma",  "shuffle", "delta", "fixedscaleoffset"};

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

bool is_compressor(const std::string& id) {
    return id == "zlib" || id == "gzip" || id == "zstd" || id == "lz4" || id == "blosc" || id == "bz2" || id == "lzma";
}

std::string size_text(uint64_t n) { return std::to_string(n) + " bytes"; }

// A decompressor's output: `exact` bytes when the size is implied, else up to `bound`.
struct OutputSize {
    uint64_t bound;
    bool exact;
};

void check_output(const std::string& id, uint64_t produced, OutputSize out) {
    if (out.exact && produced != out.bound)
        fail(id + " data decode to " + size_text(produced) + ", the chunk needs " + size_text(out.bound));
}

std::vector<uint8_t> zstd_bounded(std::span<const uint8_t> in, OutputSize out) {
    const unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) fail("zstd data are not a Zstandard frame");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > out.bound)
        fail("zstd frame declares " + size_text(declared) + ", more than the chunk's " + size_text(out.bound) +
             ": refused");
    std::vector<uint8_t> buffer(out.bound);
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    if (!ctx) fail("zstd: out of memory");
    const size_t n = ZSTD_decompressDCtx(ctx, buffer.data(), buffer.size(), in.data(), in.size());
    ZSTD_freeDCtx(ctx);
    if (ZSTD_isError(n)) {
        if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall)
            fail("zstd data decode to more than " + size_text(out.bound) + " (the chunk's size): refused");
        fail(std::string("zstd data are corrupt: ") + ZSTD_getErrorName(n));
    }
    check_output("zstd", n, out);
    buffer.resize(n);
    return buffer;
}

// numcodecs LZ4: a 4-byte little-endian decoded size, then one LZ4 block.
std::vector<uint8_t> lz4_bounded(std::span<const uint8_t> in, OutputSize out) {
    if (in.size() < 4) fail("lz4 data shorter than their 4-byte size header");
    const uint32_t declared = uint32_t{in[0]} | uint32_t{in[1]} << 8 | uint32_t{in[2]} << 16 | uint32_t{in[3]} << 24;
    if (declared > out.bound || declared > static_cast<uint32_t>(INT32_MAX))
        fail("lz4 header declares " + size_text(declared) + ", more than the chunk's " + size_text(out.bound) +
             ": refused");
    if (in.size() - 4 > static_cast<size_t>(INT32_MAX)) fail("lz4 block larger than 2 GiB");
    std::vector<uint8_t> buffer(declared);
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + 4), reinterpret_cast<char*>(buffer.data()),
                                      static_cast<int>(in.size() - 4), static_cast<int>(declared));
    if (n < 0 || static_cast<uint32_t>(n) != declared) fail("lz4 data are corrupt");
    check_output("lz4", declared, out);
    return buffer;
}

std::vector<uint8_t> blosc_bounded(std::span<const uint8_t> in, OutputSize out) {
    if (in.size() < BLOSC_MIN_HEADER_LENGTH) fail("blosc data shorter than a Blosc header");
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
    // libblosc reads cbytes bytes of the source: they must all be there.
    if (cbytes > in.size() || cbytes < BLOSC_MIN_HEADER_LENGTH)
        fail("blosc header declares " + size_text(cbytes) + " of compressed data, " + size_text(in.size()) + " are stored");
    if (nbytes > out.bound)
        fail("blosc header declares " + size_text(nbytes) + ", more than the chunk's " + size_text(out.bound) +
             ": refused");
    std::vector<uint8_t> buffer(nbytes);
    if (nbytes == 0) {
        check_output("blosc", 0, out);
        return buffer;
    }
    const int n = blosc_decompress_ctx(in.data(), buffer.data(), buffer.size(), 1);
    if (n <= 0 || static_cast<size_t>(n) != nbytes) fail("blosc data are corrupt");
    check_output("blosc", nbytes, out);
    return buffer;
}

// numcodecs LZMA's `format` (default 1, xz); codec_refusal has checked it.
LzmaFormat lzma_format(const ZarrCodec& c) {
    const auto f = c.config.value("format", nlohmann::json(1));
    return static_cast<LzmaFormat>(f.get<int>());
}

std::vector<uint8_t> decompress(const ZarrCodec& c, std::span<const uint8_t> in, OutputSize out) {
    if (c.id == "zlib" || c.id == "gzip") return inflate_bounded(in, out.bound, out.exact, c.id == "gzip");
    if (c.id == "zstd") return zstd_bounded(in, out);
    if (c.id == "lz4") return lz4_bounded(in, out);
    if (c.id == "bz2") return bz2_bounded(in, out.bound, out.exact);
    if (c.id == "lzma") return lzma_bounded(in, lzma_format(c), out.bound, out.exact);
    return blosc_bounded(in, out);
}

// A positive integer parameter of a codec.
uint64_t positive_parameter(const ZarrCodec& c, const char* name, uint64_t fallback) {
    if (!c.config.contains(name)) return fallback;
    const auto& v = c.config[name];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > 1024)
        fail(c.id + ": " + name + " " + v.dump() + " is not a positive element size");
    return v.get<uint64_t>();
}

// numcodecs Shuffle: byte j of every element stored together; a tail that
// is not a whole element is kept as it is.
std::vector<uint8_t> unshuffle(const ZarrCodec& c, std::span<const uint8_t> in) {
    return unshuffle_bytes(in, positive_parameter(c, "elementsize", 4));
}

ZarrDtype codec_dtype(const ZarrCodec& c, const char* name, const char* fallback_name = nullptr) {
    const char* key = c.config.contains(name) ? name : fallback_name;
    if (!key || !c.config.contains(key) || !c.config[key].is_string()) fail(c.id + ": no " + name);
    std::string why;
    auto d = parse_zarr_dtype(c.config[key].get<std::string>(), why);
    if (!d) fail(c.id + ": " + why);
    return *d;
}

template <typename T>
T load(const uint8_t* p, bool big_endian) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, p, sizeof(T));
    if (big_endian != (std::endian::native == std::endian::big)) std::reverse(b, b + sizeof(T));
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
}

template <typename T>
void store(uint8_t* p, T v, bool big_endian) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if (big_endian != (std::endian::native == std::endian::big)) std::reverse(b, b + sizeof(T));
    std::memcpy(p, b, sizeof(T));
}

template <typename T, bool = std::is_integral_v<T>>
struct Accumulator {
    using type = T;
};
template <typename T>
struct Accumulator<T, true> {
    using type = std::make_unsigned_t<T>;
};

// numcodecs Delta (dtype == astype only): the running sum, wrapping like NumPy.
std::vector<uint8_t> undelta(const ZarrCodec& c, std::span<const uint8_t> in) {
    const ZarrDtype d = codec_dtype(c, "dtype");
    const ZarrDtype as = c.config.contains("astype") ? codec_dtype(c, "astype") : d;
    if (as.type != d.type || as.big_endian != d.big_endian)
        fail("delta with astype other than dtype is not supported");
    std::vector<uint8_t> out(in.begin(), in.end());
    visit_type<uint8_t>(d.type, [&](auto zero) {
        using T = decltype(zero);
        using Sum = typename Accumulator<T>::type;  // unsigned for integers: wraps, never UB
        Sum sum{};
        for (size_t i = 0; i + sizeof(T) <= out.size(); i += sizeof(T)) {
            sum = static_cast<Sum>(sum + static_cast<Sum>(load<T>(out.data() + i, d.big_endian)));
            store<T>(out.data() + i, static_cast<T>(sum), d.big_endian);
        }
    });
    return out;
}

double number_parameter(const ZarrCodec& c, const char* name) {
    if (!c.config.contains(name) || !c.config[name].is_number()) fail(c.id + ": no number " + name);
    return c.config[name].get<double>();
}

// numcodecs FixedScaleOffset to a floating dtype: value = stored / scale + offset.
std::vector<uint8_t> unscale(const ZarrCodec& c, std::span<const uint8_t> in) {
    const ZarrDtype d = codec_dtype(c, "dtype");
    const ZarrDtype as = codec_dtype(c, "astype", "dtype");
    if (d.type != NcType::Float && d.type != NcType::Double)
        fail("fixedscaleoffset to the integer dtype is not supported (only to f4 or f8)");
    const double scale = number_parameter(c, "scale"), offset = number_parameter(c, "offset");
    if (!(scale != 0) || !std::isfinite(scale) || !std::isfinite(offset)) fail("fixedscaleoffset: bad scale or offset");
    const size_t in_size = type_size(as.type), out_size = type_size(d.type);
    const size_t n = in.size() / in_size;
    if (n * in_size != in.size()) fail("fixedscaleoffset: input is not a whole number of elements");
    std::vector<uint8_t> out(n * out_size);
    for (size_t i = 0; i < n; ++i) {
        const double stored = visit_type<uint8_t>(
            as.type, [&](auto zero) { return static_cast<double>(load<decltype(zero)>(in.data() + i * in_size, as.big_endian)); });
        const double v = stored / scale + offset;
        if (d.type == NcType::Float) store<float>(out.data() + i * out_size, static_cast<float>(v), d.big_endian);
        else store<double>(out.data() + i * out_size, v, d.big_endian);
    }
    return out;
}

std::vector<uint8_t> apply_filter(const ZarrCodec& c, std::span<const uint8_t> in) {
    if (c.id == "shuffle") return unshuffle(c, in);
    if (c.id == "delta") return undelta(c, in);
    return unscale(c, in);
}

// Bytes a filter's decode needs as input to give `output` bytes; nullopt for a compressor.
std::optional<uint64_t> input_size(const ZarrCodec& c, uint64_t output) {
    if (is_compressor(c.id)) return std::nullopt;
    if (c.id != "fixedscaleoffset") return output;
    const size_t in_size = type_size(codec_dtype(c, "astype", "dtype").type);
    const size_t out_size = type_size(codec_dtype(c, "dtype").type);
    return output / out_size * in_size;
}

}  // namespace

bool is_supported_codec(std::string_view id) {
    return std::find(std::begin(kCodecs), std::end(kCodecs), id) != std::end(kCodecs);
}

std::string supported_codec_names() {
    std::string names;
    for (const char* c : kCodecs) names += (names.empty() ? "" : ", ") + std::string(c);
    return names;
}

std::optional<std::string> codec_refusal(const ZarrCodec& c) {
    if (c.id != "lzma") return std::nullopt;
    const auto f = c.config.value("format", nlohmann::json(1));
    if (!f.is_number_integer() || f.get<int64_t>() < 0 || f.get<int64_t>() > 3)
        return "lzma format " + f.dump() + " is not one of 0 (auto), 1 (xz), 2 (alone), 3 (raw)";
    if (f.get<int64_t>() == 3) return std::string("lzma format 3 (raw, with its own filter chain) is not supported");
    if (c.config.contains("filters") && !c.config["filters"].is_null())
        return std::string("lzma filters are only for format 3 (raw): numcodecs cannot decode these chunks either");
    return std::nullopt;
}

uint64_t max_encoded_bytes(const ZarrArray& array) {
    return array.chunk_bytes + array.chunk_bytes / 8 + (uint64_t{1} << 20);
}

std::vector<uint8_t> decode_chunk(std::span<const uint8_t> stored, const ZarrArray& array) {
    const uint64_t max_intermediate = max_encoded_bytes(array);
    std::vector<const ZarrCodec*> stages;  // decode order
    if (array.compressor) stages.push_back(&*array.compressor);
    for (auto it = array.filters.rbegin(); it != array.filters.rend(); ++it) stages.push_back(&*it);
    // What each stage must produce, from the last (the chunk) backwards.
    std::vector<std::optional<uint64_t>> produce(stages.size());
    std::optional<uint64_t> needed = array.chunk_bytes;
    for (size_t i = stages.size(); i-- > 0;) {
        produce[i] = needed;
        needed = needed ? input_size(*stages[i], *needed) : std::nullopt;
    }
    if (needed && stored.size() != *needed)
        fail("stored chunk holds " + size_text(stored.size()) + ", the chunk needs " + size_text(*needed));
    std::vector<uint8_t> buffer;
    std::span<const uint8_t> current = stored;
    for (size_t i = 0; i < stages.size(); ++i) {
        const ZarrCodec& c = *stages[i];
        if (is_compressor(c.id)) {
            const OutputSize out{produce[i].value_or(max_intermediate), produce[i].has_value()};
            buffer = decompress(c, current, out);
        } else {
            buffer = apply_filter(c, current);
        }
        current = buffer;
    }
    if (stages.empty()) buffer.assign(stored.begin(), stored.end());
    if (buffer.size() != array.chunk_bytes)
        fail("chunk decodes to " + size_text(buffer.size()) + ", not " + size_text(array.chunk_bytes));
    if (array.fortran_order) return fortran_to_c_order(buffer, array.chunks, type_size(array.dtype.type));
    return buffer;
}

}  // namespace ncafs::zarr
