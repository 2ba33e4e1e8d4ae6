// zlib streams (RFC 1950: header, deflate data, Adler-32 trailer), the form
// netcdf-java's Deflater/Inflater use for compressed ncstream payloads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ncafs::ncstream {

// Incremental compressor; the output goes to a sink as it is produced.
class ZlibDeflater {
public:
    using Sink = std::function<void(std::span<const uint8_t>)>;
    // level -1 (zlib default) or 0..9; throws UsageError otherwise.
    ZlibDeflater(int level, Sink sink);
    ~ZlibDeflater();
    ZlibDeflater(const ZlibDeflater&) = delete;
    ZlibDeflater& operator=(const ZlibDeflater&) = delete;

    void feed(std::span<const uint8_t> input);
    void finish();
    uint64_t bytes_out() const { return out_total_; }

private:
    void run(std::span<const uint8_t> input, int flush);
    struct State;
    State* state_;
    Sink sink_;
    std::vector<uint8_t> buffer_;
    uint64_t out_total_ = 0;
};

// Inflates a whole zlib stream that must produce exactly `expected` bytes.
// Never writes more than `expected` bytes (a stream that would is refused as
// a decompression bomb). Returns the reason on failure.
std::optional<std::string> inflate_exact(std::span<const uint8_t> compressed, uint8_t* out, uint64_t expected);

// Inflates a zlib stream whose compressed bytes are fetched in order through
// `fetch(offset, buffer)`, handing each produced chunk to
// `consume(chunk, output_offset)`; stops early when consume returns false.
// The output is checked against `expected` as above (when not stopped early).
std::optional<std::string> inflate_streaming(uint64_t compressed_size, uint64_t expected,
                                             const std::function<void(uint64_t, std::span<uint8_t>)>& fetch,
                                             const std::function<bool(std::span<const uint8_t>, uint64_t)>& consume);

}  // namespace ncafs::ncstream
