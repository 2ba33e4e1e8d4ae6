// What the steps of `ncafs aggregate` (write_cf_aggregation, cf_writer.cpp)
// share: the inputs as read, the placement of their fragments, then the
// output's names. Each step's header says which members it fills.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aggregation/model/units_conversion.hpp"
#include "aggregation/write/cf_writer.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg::cf_write {

// Attributes that say how values are encoded: per file on aggregated
// variables (each fragment is decoded with its own), never a disagreement.
inline const std::set<std::string> kEncodingAttributes = {"scale_factor", "add_offset", "_FillValue", "missing_value",
                                                          "valid_min", "valid_max", "valid_range"};

// One variable of an input, its dimensions by name.
struct VarInfo {
    std::string name;
    NcType type = NcType::Double;
    std::vector<std::string> dims;
    std::vector<Attribute> attributes;
    const Attribute* find(const std::string& n) const {
        for (const auto& a : attributes)
            if (a.name == n) return &a;
        return nullptr;
    }
};

// One input; of the files but the reference, only path, lengths, coordinates and position are kept.
struct FileInfo {
    std::string path;  // absolute, lexically normal
    std::vector<Dimension> dims;
    std::vector<Attribute> globals;
    std::vector<VarInfo> vars;
    std::vector<uint64_t> agg_len;            // per aggregated dim
    std::vector<std::vector<double>> coords;  // per aggregated dim, in the reference units (empty: no coordinate)
    std::vector<size_t> position;             // per aggregated dim: fragment index (after ordering)
};

// Every reason to refuse the inputs; the first 200 kept as lines, the rest counted.
class Problems {
public:
    void add(std::string line) {
        ++count_;
        if (lines_.size() < kMaxLines) lines_.push_back(std::move(line));
    }
    bool empty() const { return count_ == 0; }
    std::string text() const {
        std::string t;
        for (const auto& l : lines_) t += l + "\n";
        if (count_ > lines_.size()) t += "... and " + std::to_string(count_ - lines_.size()) + " more\n";
        return t;
    }

private:
    static constexpr size_t kMaxLines = 200;
    std::vector<std::string> lines_;
    size_t count_ = 0;
};

// Values of one encoding attribute of one variable across the files:
// value -> (first file with it, number of files with it); O(distinct values).
struct EncodingValues {
    std::map<std::string, std::pair<std::string, size_t>> by_value;
    size_t files = 0;
    void add(const std::string& file, std::string value) {
        auto [it, added] = by_value.try_emplace(std::move(value), file, 0);
        ++it->second.second;
        ++files;
    }
};
using Encodings = std::map<std::string, std::map<std::string, EncodingValues>>;  // var -> attr -> values

// The output's names for the variables that share one list of dimensions:
// their fragment map, uris and fragment dimensions.
struct Signature {
    std::vector<std::string> dims;
    std::string map_name, uris_name, map_j, map_i, strlen_dim;
    std::vector<std::string> fdims;
    std::vector<std::vector<uint64_t>> rows;
    std::vector<size_t> fragment_files;  // per fragment, C order over the fragment dims: index into file_uris
};

struct WriterState {
    const AggregateWriterOptions& opt;
    std::string out_path;
    std::string cwd;  // once: relative inputs need no getcwd(2) each (empty: unknown)
    AggregateSummary summary;
    Problems problems;
    // read_inputs (input_reading.hpp)
    std::vector<FileInfo> files;
    std::vector<std::string> agg_dims;
    std::map<std::string, std::vector<uint8_t>> ref_values;  // non-aggregated variables of the reference file
    std::shared_ptr<const Dataset> reference;
    std::vector<std::string> coord_units, coord_calendar;  // per aggregated dim, the reference file's
    std::map<std::tuple<size_t, std::string, std::string>, Affine> converters;
    std::set<std::string> aggregated_vars;  // names of variables spanning an aggregated dim
    Encodings encodings;
    std::map<std::string, size_t> global_differences;
    // report_metadata_differences (input_comparison.hpp)
    std::map<std::string, bool> unpack;  // aggregated variable -> presented unpacked
    // place_fragments (fragment_placement.hpp)
    std::vector<std::vector<uint64_t>> block_len;  // per dim, per fragment index
    std::vector<uint64_t> nf;                      // fragments per aggregated dim
    std::vector<int64_t> grid;                     // C order over nf: index into files
    // plan_names (output_names.hpp; taken grows while describing the output too)
    std::set<std::string> taken;
    std::map<std::string, uint64_t> agg_total;
    std::vector<Signature> sigs;
    std::map<std::vector<std::string>, size_t> sig_of;
    std::map<std::string, std::string> fragment_dim;  // dim -> its fragment dim name
    std::map<uint64_t, std::string> map_j_dims, map_i_dims;
    // One URI per file (made by read_inputs), shared by every signature: at
    // 1,000,000 files a copy per signature costs 100s of MiB.
    std::vector<std::string> file_uris;

    void throw_if_problems() const {
        if (!problems.empty()) throw AggregateInputError(problems.text());
    }
    bool is_agg_dim(const std::string& d) const { return std::find(agg_dims.begin(), agg_dims.end(), d) != agg_dims.end(); }
};

}  // namespace ncafs::agg::cf_write
