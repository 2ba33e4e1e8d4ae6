#include "cli/aggregate_kerchunk.hpp"

#include <unistd.h>

#include <fstream>

#include "aggregation/kerchunk_export/kerchunk_writer.hpp"
#include "codecs/error.hpp"
#include "fs/backend.hpp"
#include "fs/options.hpp"
#include "io/private_folder.hpp"

namespace ncafs::cli {

agg::AggregateSummary write_kerchunk_aggregation(const std::vector<std::string>& files,
                                                 agg::AggregateWriterOptions options, bool inline_converted,
                                                 std::ostream& err) {
    const std::string output = options.output;
    const PrivateFolder folder(output);  // no other user can plant a link at the names written there
    const std::string cf_file = folder.path() + "/aggregation.nc";
    options.output = cf_file;
    options.absolute_uris = true;  // the references name every partition by its absolute path
    agg::AggregateSummary summary = agg::write_cf_aggregation(files, options);
    // The files were named by the caller, who reads them: no root confines them.
    fs::Backend backend = fs::make_backend(fs::ViewOptions{}, {"/"});
    agg::kerchunk::ExportOptions export_options;
    export_options.inline_converted = inline_converted;
    const auto result = agg::kerchunk::kerchunk_references(*backend.open_dataset(cf_file, true),
                                                          {true, nullptr}, export_options);
    for (const auto& line : result.notes) err << "ncafs aggregate: " << line << "\n";
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out << result.json;
    out.close();
    if (!out) {
        ::unlink(output.c_str());
        throw SourceError(output, "cannot write the reference set");
    }
    return summary;
}

}  // namespace ncafs::cli
