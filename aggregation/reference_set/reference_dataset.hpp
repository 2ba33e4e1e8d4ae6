// A kerchunk reference set (a JSON file) as a Dataset: each Zarr v2 array
// at the top of its store becomes a variable (dimensions named by its
// _ARRAY_DIMENSIONS, attributes from its .zattrs, _FillValue from its
// fill_value) whose values are read chunk by chunk on demand
// (ReferenceArraySource); the store's .zattrs become global attributes.
// Arrays that cannot be shown (in a sub-group, an unsupported dtype, order
// or codec, no _ARRAY_DIMENSIONS) are left out, each with a note naming it
// and the reason. docs/kerchunk.md "Reference sets as sources".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/read/open_aggregation.hpp"
#include "io/confined_open.hpp"
#include "codecs/dataset.hpp"

namespace ncafs {

// Content-based and cheap: one read of the first bytes
// (looks_like_reference_set). False on any error. `within`: open confined.
bool is_reference_set_file(const std::string& path, const ConfinedRoots* within = nullptr);
// The same check of a file already open.
bool is_reference_set_fd(int fd);

// Parses the reference set and the metadata of its arrays (which may be
// references to bytes of other files, read through the same allowed roots).
// No chunk is read. Throws agg::AggregationError (bad reference set,
// conflicting dimension lengths, bounds exceeded) or SourceError.
std::shared_ptr<const Dataset> open_reference_set(const std::string& path, const AggregationOptions& options);

}  // namespace ncafs

namespace ncafs::agg {

class ReferenceStore;
// The Dataset of a store's arrays (open_reference_set's, and a Zarr
// directory store's): metadata read through the store, no chunk read.
Dataset dataset_of_store(std::shared_ptr<const ReferenceStore> store);

// The local files the reference sources of a dataset draw on (resolved, allowed), and whether any is remote.
std::vector<std::string> reference_files_of(const ArraySource& source);
bool reference_names_remote(const ArraySource& source);
// What a reference set holds, for `ncafs inspect`: its version and the
// number of references, inline ones and objects named; nullopt for other datasets.
struct ReferenceSummary {
    int version = 1;
    size_t references = 0, inline_references = 0, objects = 0;
};
std::optional<ReferenceSummary> reference_summary(const Dataset& dataset);
// ReferenceStore::verify of the reference set a dataset was read from (none for other datasets).
std::vector<std::string> reference_problems(const Dataset& dataset, size_t max_reports);

}  // namespace ncafs::agg
