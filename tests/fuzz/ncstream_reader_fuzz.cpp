// libFuzzer target: any bytes opened as an ncstream (.ncs) file end in a
// Dataset whose values can be read, or in FormatError / SourceError; anything
// else (crash, other exception, sanitizer report, hang) is a bug.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "codecs/error.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

// protobuf logs every malformed message on stderr; the reader reports them
// as FormatError already, and the log would drown libFuzzer's output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static ncafs::fuzz::MemoryFile file;
    const std::string& path = file.hold(data, size);
    // Small caches so that both inflate paths (cached, streamed) run.
    ncafs::ncstream::ReaderOptions options;
    options.inflate_cache_bytes = 1 << 16;
    options.max_string_variable_bytes = 1 << 20;
    try {
        const ncafs::Dataset d = ncafs::ncstream::open_ncstream_dataset(path, options);
        ncafs::fuzz::read_every_variable(d, 4096);
    } catch (const ncafs::FormatError&) {
    } catch (const ncafs::SourceError&) {
    }
    return 0;
}
