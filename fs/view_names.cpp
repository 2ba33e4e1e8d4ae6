#include "fs/view_names.hpp"

#include <fnmatch.h>

#include <climits>
#include <cstdint>
#include <iterator>

#include "codecs/lod_dataset.hpp"
#include "codecs/types.hpp"

namespace ncafs::fs {

namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// N of a name STEM.lodN (1 <= N <= max, no leading zero) and STEM; nullopt otherwise.
std::optional<std::pair<std::string, int>> lod_stem(const std::string& stem_lod, int max) {
    const auto dot = stem_lod.rfind(".lod");
    if (dot == std::string::npos || dot == 0) return std::nullopt;
    const std::string digits = stem_lod.substr(dot + 4);
    if (digits.empty() || digits.size() > 2 || digits[0] == '0' ||
        digits.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const int n = std::stoi(digits);
    if (n > max) return std::nullopt;
    return std::make_pair(stem_lod.substr(0, dot), n);
}

// The first dataset file of the stem other than `except` (the name looked up).
std::optional<std::string> first_source(const std::string& stem, const std::string& except,
                                        const ViewNameProbe& probe) {
    for (const char* suffix : kSourceSuffixes) {
        std::string candidate = stem + suffix;
        if (candidate != except && probe.is_dataset(candidate)) return candidate;
    }
    if (probe.glob_sources)
        for (const auto& candidate : probe.glob_sources(stem))
            if (candidate != except && probe.is_dataset(candidate)) return candidate;
    return std::nullopt;
}

// Bytes of values a dataset holds (saturating): what its LOD views would spare a reader.
uint64_t value_bytes(const Dataset& d) {
    uint64_t total = 0;
    for (const auto& v : d.variables) {
        const auto shape = d.shape(v);
        const uint64_t n = element_count(shape), size = type_size(v.type);
        const uint64_t bytes = n > UINT64_MAX / size ? UINT64_MAX : n * size;
        total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
    }
    return total;
}

}  // namespace

bool shows_lod_views(const Dataset& dataset, bool aggregation, uint64_t lod_min_size) {
    return has_lod_views(dataset) && (aggregation || value_bytes(dataset) > lod_min_size);
}

std::optional<std::pair<std::string, int>> source_stem(const std::string& name) {
    for (int rank = 0; rank < static_cast<int>(std::size(kSourceSuffixes)); ++rank)
        if (has_suffix(name, kSourceSuffixes[rank]))
            return std::make_pair(name.substr(0, name.size() - std::string(kSourceSuffixes[rank]).size()), rank);
    return std::nullopt;
}

std::optional<std::pair<std::string, int>> reference_glob_stem(const std::string& name,
                                                               const std::vector<std::string>& globs) {
    if (source_stem(name)) return std::nullopt;
    for (const auto& glob : globs)
        if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
            const auto dot = name.rfind('.');
            return std::make_pair(dot == std::string::npos || dot == 0 ? name : name.substr(0, dot), kReferenceGlobRank);
        }
    return std::nullopt;
}

std::string unservable_name_reason(const std::string& name) {
    if (name.size() > NAME_MAX)
        return "its name is " + std::to_string(name.size()) + " bytes long, more than a name may be (" +
               std::to_string(NAME_MAX) + ")";
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7f) return "its name holds a control character";
    return "";
}

std::string twin_name(const std::string& stem, const std::string& view) { return stem + "." + view; }

std::string lod_name(const std::string& stem, int level, const std::string& view) {
    return stem + ".lod" + std::to_string(level) + "." + view;
}

std::string classic_name(const std::string& stem) { return stem + kClassicSuffix; }

std::optional<ViewName> resolve_view_name(const std::string& name, const ViewNameProbe& probe) {
    std::string view;
    for (const auto& format : view_formats())
        if (has_suffix(name, std::string(".") + format.extension)) view = format.extension;
    if (view.empty() || !probe.view_enabled(view)) return std::nullopt;
    if (has_suffix(name, kClassicSuffix)) {
        std::string source = name.substr(0, name.size() - std::string(kClassicSuffix).size()) + ".nc";
        if (probe.gives_classic(source)) return ViewName{source, "nc", 0, true};
    }
    const std::string stem = name.substr(0, name.size() - view.size() - 1);
    if (auto source = first_source(stem, name, probe)) return ViewName{*source, view, 0, false};
    if (probe.lods == 0) return std::nullopt;
    auto stem_level = lod_stem(stem, probe.lods);
    if (!stem_level) return std::nullopt;
    if (auto source = first_source(stem_level->first, name, probe))
        return ViewName{*source, view, stem_level->second, false};
    return std::nullopt;
}

}  // namespace ncafs::fs
