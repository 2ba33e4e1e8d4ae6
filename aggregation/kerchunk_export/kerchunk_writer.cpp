#include "aggregation/kerchunk_export/kerchunk_writer.hpp"

#include "aggregation/kerchunk_export/zarr_metadata.hpp"

namespace ncafs::agg::kerchunk {

ExportResult kerchunk_references(const Dataset& ds, const DatasetOrigin& origin, const ExportOptions& options,
                                 const RefsWriter::Sink& sink) {
    ExportResult result;
    sink("{\"version\":1,\"refs\":{");
    RefsWriter refs(sink);
    refs.add(".zgroup", zgroup_text());
    refs.add(".zattrs", zattrs_text(ds.attributes, nullptr));
    for (const Variable& v : ds.variables) {
        if (!v.source) continue;
        VariableOutcome o = add_variable_refs(ds, v, origin, options, refs);
        (o.written ? result.variables_written : result.variables_left_out) += 1;
        for (auto& line : o.notes) result.notes.push_back(std::move(line));
    }
    sink("}}");
    return result;
}

}  // namespace ncafs::agg::kerchunk
