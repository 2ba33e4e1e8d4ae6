// The one hook by which a convention family completes a fragment once its
// file is open (docs/conventions/README.md: what each family declares).
// NCA/CFA-0.4 JSON declares variable, axes and units in the aggregation
// file, so it needs no resolver; the CF generations (CFA-0.6, the CF drafts,
// CF-1.13) leave the axis alignment and the units to the fragment file. The
// aggregated source calls the resolver and reads every family the same way;
// a resolver keeps no dataset.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "aggregation/model/aggregate.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::agg {

// A fragment the resolver refuses; what() is the reason alone (the caller
// names the file and the fragment).
struct FragmentRejected : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class FragmentResolver {
public:
    virtual ~FragmentResolver() = default;
    // Throws FragmentRejected when fragment i is known to be unreadable
    // from the metadata alone (unsupported URI, missing address...).
    virtual void check_declared(size_t i) const = 0;
    // Completes `fragment` (a copy of the declared one) from its opened
    // dataset: axis_to_master, units. Throws FragmentRejected.
    virtual void complete(Fragment& fragment, const Dataset& dataset) const = 0;
    // How messages name the fragment: "(LABEL)".
    virtual std::string label(const Fragment& fragment) const = 0;
};

}  // namespace ncafs::agg
