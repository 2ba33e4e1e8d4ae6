// Kerchunk reference sets (fsspec ReferenceFileSystem JSON): version 1
// ({"version": 1, "templates": {...}, "refs": {...}}) and version 0 (the refs
// object alone). Each key of refs maps to inline bytes (a string, "base64:"
// for binary) or to bytes of another object: [url] (all of it) or
// [url, offset, length]. "{{name}}" in a URL is replaced by templates[name];
// "gen" (keys generated from ranges) is refused. Nothing is opened here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ncafs::agg {

struct Reference {
    enum class Kind : uint8_t { Inline, Whole, Range };
    Kind kind = Kind::Inline;
    uint32_t url = 0;  // Whole, Range: index into ReferenceSet::urls
    uint64_t offset = 0, length = 0;  // Range
    std::string data;  // Inline: the bytes themselves
};

struct ReferenceSet {
    int version = 1;
    std::vector<std::string> urls;  // each distinct URL once, templates expanded, as written
    std::unordered_map<std::string, Reference> refs;
};

// What one array at the top of the store costs once shown, its views
// included (a variable, its source and Zarr metadata, its entries in the
// views' headers and layouts): counted by parse_reference_set.
inline constexpr uint64_t kArrayCost = 4096;

// Bytes of the file's beginning that looks_like_reference_set reads.
inline constexpr size_t kReferenceSniffBytes = 64 << 10;

// From the first bytes: a JSON object with "version" and "refs", or whose
// keys include ".zgroup", ".zattrs" or "NAME/.zarray". Cheap, no parse.
bool looks_like_reference_set(std::span<const uint8_t> first_bytes);

// Parses the whole text (`allocated` bytes readable from text.data(), for
// simdjson). At most max_refs keys. Throws std::runtime_error with the reason
// (the caller names the file), or MetadataBudgetError when what it declares
// does not fit the file's budget (io/metadata_budget.hpp).
ReferenceSet parse_reference_set(std::string_view text, size_t allocated, uint64_t max_refs);

}  // namespace ncafs::agg
