#include "aggregation/kerchunk_export/fragment_pieces.hpp"

#include <algorithm>

#include "aggregation/kerchunk_export/file_pieces.hpp"

namespace ncafs::agg::kerchunk {

namespace {

bool has_attribute(const Variable& v, const char* name) { return v.find_attribute(name) != nullptr; }

std::string transform_reason(const Fragment& f, const Aggregate& a) {
    for (size_t d = 0; d < f.reverse.size() && d < a.dims.size(); ++d)
        if (f.reverse[d]) return "it runs the other way along " + a.dims[d] + " (reversed)";
    for (const auto& p : f.part)
        if (p) return "a `part` selection of its variable";
    return "its axes are in another order than the master's (permuted)";
}

// What the view does to the values of fragment f (not a byte copy) before showing them.
std::string conversion_reason(const Fragment& f, const Variable& v, const Aggregate& a) {
    if (!f.transform_is_identity()) return transform_reason(f, a);
    if (v.source->type() != a.type)
        return "its type " + std::string(type_name(v.source->type())) + " is converted to " +
               std::string(type_name(a.type));
    if (!f.units.is_identity())
        return "its values are converted to the master's units" + (f.units_text.empty() ? "" : " (" + f.units_text + ")");
    if (has_attribute(v, "scale_factor") || has_attribute(v, "add_offset"))
        return "its packed values (scale_factor/add_offset) are unpacked";
    if (a.packing) return "its values are packed with the master's scale_factor/add_offset";
    return "its missing values (_FillValue, missing_value or valid range) become the master's fill value";
}

// The fragment's values lie in its file in the master box's own C order:
// no reversal, no part, axes in master order, only size-1 axes added or
// left out (which do not change the order of the bytes).
bool layout_as_is(const Fragment& f) {
    for (bool r : f.reverse)
        if (r) return false;
    for (const auto& p : f.part)
        if (p) return false;
    int last = -1;
    for (int d : f.axis_to_master) {
        if (d < 0) continue;
        if (d <= last) return false;
        last = d;
    }
    return true;
}

std::string label_of(const Fragment& f) { return "partition " + f.path + " (" + f.where + ")"; }

}  // namespace

FragmentPieces fragment_pieces(const AggregatedSource& source, uint64_t max_chunks) {
    const Aggregate& a = source.aggregate();
    FragmentPieces out;
    out.pieces.resize(a.fragments.size());
    // One bound for all the partitions' HDF5 chunk lookups together: a
    // million partitions of hostile chunk grids cost no more than one.
    uint64_t budget = max_chunks;
    for (size_t i = 0; i < a.fragments.size(); ++i) {
        AggregatedSource::OpenedFragment o;
        try {
            o = source.opened_fragment(i);
        } catch (const std::exception& e) {
            out.unreadable = e.what();
            return out;
        }
        const Fragment& f = o.fragment;
        if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) continue;
        Piece p;
        p.start = f.start;
        p.count = f.count;
        p.label = label_of(f);
        if (f.kind == FragmentKind::Self) {
            p.make_inline("held in the aggregation file itself", false);
        } else if (!o.dataset || !o.variable) {
            p.make_inline("reads as fill (missing_partitions=fill)", false);
        } else if (!o.byte_copy && !(o.values_as_is && layout_as_is(f))) {
            p.make_inline(conversion_reason(f, *o.variable, a), true);
        } else if (!o.file) {
            p.make_inline("its file is not known", true);
        } else {
            // Opened again at each run: the pieces hold no file open.
            SourceFn again = [&source, i] { return source.fragment_source(i); };
            p = file_piece({o.file, o.dataset, o.variable, f.group, again, f.axis_to_master}, f.start, f.count, p.label,
                           budget);
            if (p.hdf5) budget -= std::min<uint64_t>(budget, p.hdf5->chunks.size());
        }
        out.pieces[i] = std::move(p);
    }
    return out;
}

}  // namespace ncafs::agg::kerchunk
