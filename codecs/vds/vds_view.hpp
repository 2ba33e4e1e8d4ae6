// The .vds view of a dataset: a VirtualFile holding an OpenVDS single-file
// container (compression None) of the dataset's largest variable of rank
// 2..6 and the variables of the same dimensions (vds_writer_plan.hpp). Size
// and offsets come from metadata alone; each read produces only the chunk
// objects it touches from the variables' ArraySources.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs {

struct VdsViewOptions {
    int lods = 2;  // stored LODs besides LOD0 (vds_lods=)
    // Told about variables left out (a type with no VDS format); may be empty.
    std::function<void(const std::string&)> note;
    // Whether a coordinate variable's values may be read to plan the view
    // (a stat plans it): no for values on remote servers, which then get
    // index coordinates. Empty: always.
    std::function<bool(const ArraySource&)> may_read_coordinates;
};

// Why the dataset has no .vds view (no variable a VDS can hold, more than
// 2^20 chunks), or nullopt when make_vds_view builds one (barring I/O errors
// while it tests chunks). From metadata alone, nothing built and no value
// read (coordinates are not tested for spacing): a listing can ask it of
// every dataset.
std::optional<std::string> vds_view_refusal(const Dataset& dataset, int lods);

// Batches being made ahead of sequential readers of views backed by classic
// files (on the worker pool; at most one at a time, of all views): now, and
// the most at once since the process started.
struct BatchesAhead {
    size_t now = 0, most = 0;
};
BatchesAhead vds_batches_ahead();

// Throws UsageError when the dataset has no variable a VDS can hold.
std::shared_ptr<const VirtualFile> make_vds_view(std::shared_ptr<const Dataset> dataset,
                                                 const VdsViewOptions& options = {});

}  // namespace ncafs
