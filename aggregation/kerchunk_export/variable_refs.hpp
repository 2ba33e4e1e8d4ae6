// The references of one variable: its `.zarray` and `.zattrs`, and one key
// per chunk of its grid: a byte range of a file, inline data, or no key
// (a chunk that reads as the fill value). Variables whose values the view
// converts from a partition are written only with inline_converted;
// otherwise (or when a partition cannot be read at all) the variable is
// left out, with the reasons.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/dataset.hpp"

namespace ncafs {
class OpenFile;
}

namespace ncafs::agg::kerchunk {

struct ExportOptions {
    bool inline_converted = false;  // store converted partition values inline
    uint64_t max_chunks = uint64_t{1} << 24;  // per variable
    size_t max_notes = 10;          // partitions named per variable; the rest counted
};

// Where the values of a dataset's variables lie: in the partitions of an
// aggregation (master arrays), the aggregation file itself (the other
// variables: inline), or the single-file dataset's file `file`.
struct DatasetOrigin {
    bool aggregation = false;
    std::shared_ptr<const OpenFile> file;  // single-file dataset: the file read
};

struct VariableOutcome {
    bool written = false;
    std::vector<std::string> notes;  // for standard error: "VAR: partition P: reason: what was done"
};

// The members of the refs object, written as they come: a variable's chunks
// are never all in memory at once (there may be 2^24 of them).
class RefsWriter {
public:
    using Sink = std::function<void(std::string_view)>;
    explicit RefsWriter(Sink sink) : sink_(std::move(sink)) {}
    void add(const std::string& key, const nlohmann::json& value);
    // add(key, [url, offset, length]): the same text, one per chunk reference.
    void add_range(const std::string& key, const std::string& url, uint64_t offset, uint64_t length);

private:
    void start_member(const std::string& key);  // text_ = separator, key and colon

    Sink sink_;
    bool first_ = true;
    std::string text_;  // reused
    std::string url_, url_text_;  // the last url of add_range and its JSON text
};

// Writes v's keys to refs (nothing when it is left out: a first pass over
// its chunks decides that, reading no values; the second writes them).
VariableOutcome add_variable_refs(const Dataset& ds, const Variable& v, const DatasetOrigin& origin,
                                  const ExportOptions& options, RefsWriter& refs);

}  // namespace ncafs::agg::kerchunk
