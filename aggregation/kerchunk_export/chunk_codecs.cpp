#include "aggregation/kerchunk_export/chunk_codecs.hpp"

#include <zlib.h>

#include "codecs/error.hpp"

namespace ncafs::agg::kerchunk {

nlohmann::json codec_json(const ZarrCodec& c) {
    if (c.id == ZarrCodec::Id::Zlib) return {{"id", "zlib"}, {"level", c.level}};
    return {{"id", "shuffle"}, {"elementsize", c.element_size}};
}

namespace {

// HDF5's (and numcodecs') byte shuffle: byte j of every element together;
// a tail shorter than one element stays as it is.
std::vector<uint8_t> shuffled(const std::vector<uint8_t>& in, uint32_t size) {
    if (size <= 1) return in;
    std::vector<uint8_t> out(in);
    const size_t n = in.size() / size;
    for (size_t e = 0; e < n; ++e)
        for (uint32_t j = 0; j < size; ++j) out[j * n + e] = in[e * size + j];
    return out;
}

std::vector<uint8_t> deflated(const std::vector<uint8_t>& in, int level) {
    uLongf bound = compressBound(static_cast<uLong>(in.size()));
    std::vector<uint8_t> out(bound);
    if (compress2(out.data(), &bound, in.data(), static_cast<uLong>(in.size()), level) != Z_OK)
        throw Error("zlib cannot compress an inline chunk");
    out.resize(bound);
    return out;
}

}  // namespace

std::vector<uint8_t> encode_chunk(std::vector<uint8_t> bytes, const std::vector<ZarrCodec>& filters) {
    for (const auto& f : filters)
        bytes = f.id == ZarrCodec::Id::Zlib ? deflated(bytes, f.level) : shuffled(bytes, f.element_size);
    return bytes;
}

}  // namespace ncafs::agg::kerchunk
