// libFuzzer target: any bytes opened as a ds file end in a Dataset whose
// values can be read, or in FormatError / SourceError; anything else (crash,
// other exception, sanitizer report, hang) is a bug.
#include <cstddef>
#include <cstdint>

#include "codecs/ds/ds_reader.hpp"
#include "codecs/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static ncafs::fuzz::MemoryFile file;
    const std::string& path = file.hold(data, size);
    try {
        const ncafs::Dataset d = ncafs::ds::open_ds_dataset(path);
        ncafs::fuzz::read_every_variable(d, 4096);
    } catch (const ncafs::FormatError&) {
    } catch (const ncafs::SourceError&) {
    }
    return 0;
}
