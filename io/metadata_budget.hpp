// Every claim of a file within a budget: what the daemon builds from what a
// file says (variables, dimensions, attributes, references, chunks,
// partitions) is counted before it is built, against a limit per file and a
// total for the whole process (max_metadata_mem=, docs/security.md "Hostile
// input"). A file over either is refused with a message naming it, what was
// counted and the limit; nothing of it is built.
//
// The reader of one file opens a MetadataScope on its thread; the parsers
// below it call charge_metadata (no parameter threaded through every
// reader), which charges the innermost scope of the thread. What was built
// keeps the scope's charge (MetadataScope::take) for as long as it lives;
// the bytes return to the total when the last holder lets go. Without a
// scope (a unit test of a parser) a charge is checked against the per-file
// limit alone.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "io/error.hpp"

namespace ncafs {

struct MetadataLimits {
    // One file's metadata (its partitions count on their own): max_file_metadata_mem=; an
    // aggregation of 1,000,000 partitions is charged about 540 MB (docs/performance.md).
    uint64_t per_file = uint64_t{1} << 30;
    uint64_t total = uint64_t{2} << 30;  // every file held at once: max_metadata_mem=
};

// What the readers count per item they will build, beyond the item's struct:
// a variable with its source and its place in every view's layout; a name's
// heap block; a parsed JSON or protobuf text, per byte of the text.
inline constexpr uint64_t kVariableCost = 512;
inline constexpr uint64_t kNameCost = 32;
inline constexpr uint64_t kParsedTextFactor = 4;

// Process-wide; set once from the mount options (or a command's) before any file is read.
void set_metadata_limits(const MetadataLimits& limits);
MetadataLimits metadata_limits();
// Bytes charged by every live file, for tests and the log.
uint64_t metadata_bytes_in_use();

// Refused for the budget: "FILE: N WHAT would take B bytes of memory, more than ...".
class MetadataBudgetError : public SourceError {
public:
    MetadataBudgetError(const std::string& file, const std::string& reason, bool total)
        : SourceError(file, reason), total_(total) {}
    // The process total was short (may pass once other files are dropped), not the file's own limit.
    bool total() const { return total_; }

private:
    bool total_;
};

// Bytes held against the total; released when destroyed.
class MetadataCharge {
public:
    explicit MetadataCharge(uint64_t bytes) : bytes_(bytes) {}
    ~MetadataCharge();
    MetadataCharge(const MetadataCharge&) = delete;
    MetadataCharge& operator=(const MetadataCharge&) = delete;
    uint64_t bytes() const { return bytes_; }

private:
    uint64_t bytes_;
};

class MetadataScope {
public:
    explicit MetadataScope(std::string file);
    ~MetadataScope();  // releases what was charged unless taken
    MetadataScope(const MetadataScope&) = delete;
    MetadataScope& operator=(const MetadataScope&) = delete;

    // The charge, to keep with what was built; the scope holds nothing afterwards.
    std::shared_ptr<const MetadataCharge> take();
    uint64_t bytes() const { return bytes_; }

private:
    friend void charge_metadata(uint64_t, uint64_t, const char*);
    std::string file_;
    uint64_t bytes_ = 0;
    MetadataScope* outer_;
};

// count items of at least bytes_each bytes each, described by `what`
// ("arrays", "references"...). Throws MetadataBudgetError (nothing charged).
void charge_metadata(uint64_t count, uint64_t bytes_each, const char* what);

}  // namespace ncafs
