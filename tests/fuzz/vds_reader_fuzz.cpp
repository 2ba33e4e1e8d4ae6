// libFuzzer target for the OpenVDS reader: input starting with the
// container magic ("HueDataStore") is opened as a .vds container and every
// variable's values are read (bounded), so the container walk, the layout
// JSON, the chunk geometry, the hashes and the RLE/Zip decoders all run;
// any other input is parsed as a VolumeDataLayout JSON text. Both must end
// in a result or in FormatError / SourceError; anything else (crash, other
// exception, sanitizer report, hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "codecs/error.hpp"
#include "codecs/vds/vds_chunk_cache.hpp"
#include "codecs/vds/vds_container.hpp"
#include "codecs/vds/vds_failure_memo.hpp"
#include "codecs/vds/vds_layout.hpp"
#include "codecs/vds/vds_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The memfd keeps its inode from one input to the next: keep no decoded
    // chunk and no remembered failure, so that every input is parsed from its own bytes.
    static const bool no_cache = (ncafs::vds::set_chunk_cache_budget(0), ncafs::vds::set_failure_memo_entries(0), true);
    (void)no_cache;
    static ncafs::fuzz::MemoryFile file;
    try {
        if (ncafs::vds::has_vds_magic(std::span<const uint8_t>(data, size))) {
            const ncafs::Dataset d = ncafs::vds::open_vds_dataset(file.hold(data, size));
            ncafs::fuzz::read_every_variable(d, 4096);
        } else {
            const std::string_view text(reinterpret_cast<const char*>(data), size);
            ncafs::vds::check_json_shape(text, "fuzz-layout");
            (void)ncafs::vds::parse_layout(text, "fuzz-layout");
        }
    } catch (const ncafs::FormatError&) {
    } catch (const ncafs::SourceError&) {
    }
    return 0;
}
