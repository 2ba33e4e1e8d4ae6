// The VolumeDataLayout JSON document (openvds-notes.md §2.2): layout
// descriptor, axes, channels and metadata entries. The text is checked for
// nesting depth (at most 256) before nlohmann_json parses it; every field is
// type- and range-checked. Throws FormatError naming the file and the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ncafs::vds {

// Enum values of the binary structures (§2.2).
enum class Format { Bit1 = 0, U8 = 1, U16 = 2, R32 = 3, U32 = 4, R64 = 5, U64 = 6 };

struct Axis {
    std::string name, unit;
    int64_t samples = 0;
    float min = 0, max = 0;
};

struct Channel {
    std::string name, unit;
    Format format = Format::R32;
    int components = 1;
    bool per_trace = false;  // channelMapping PerTrace
    bool use_no_value = false;
    float no_value = 0, scale = 1, offset = 0;
};

struct MetadataEntry {
    std::string category, name, type;
    nlohmann::json value;
};

struct Layout {
    int brick_log2 = 6;      // BrickSize_N: includes the margins
    int negative_margin = 0, positive_margin = 0;
    int multiplier_2d = 4;
    int lod_levels = 0;      // stored LODs besides LOD0
    int full_resolution_dimension = -1;  // -1 unless forced
    std::vector<Axis> axes;
    std::vector<Channel> channels;
    std::vector<MetadataEntry> metadata;
};

constexpr size_t kMaxJsonDepth = 256;
constexpr size_t kMaxAxes = 6;

Layout parse_layout(std::string_view text, const std::string& file);
// A parsed document's memory grows with its values, not its bytes ("[{},{},
// ...]" costs ~80 bytes a value in 3 bytes of text): the text is weighed
// first, 8 units per object or array and 1 per further element.
constexpr uint64_t kMaxJsonUnits = uint64_t{1} << 22;

// Throws FormatError when [ and { (outside strings) nest deeper than 256, or
// the text weighs more than kMaxJsonUnits (about 100 MiB parsed at most).
void check_json_shape(std::string_view text, const std::string& file);

}  // namespace ncafs::vds
