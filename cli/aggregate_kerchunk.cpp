#include "cli/aggregate_kerchunk.hpp"

#include <cstdio>

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
    const std::string cf_file = folder.path_of("aggregation.nc");
    options.output = cf_file;
    options.absolute_uris = true;  // the references name every partition by its absolute path
    agg::AggregateSummary summary = agg::write_cf_aggregation(files, options);
    // The files were named by the caller, who reads them: no root confines
    // them. The aggregation is read back through the private folder's
    // descriptor (the first root), not by a name another user could swap.
    fs::Backend backend = fs::make_backend(fs::ViewOptions{}, {folder.path(), "/"});
    agg::kerchunk::ExportOptions export_options;
    export_options.inline_converted = inline_converted;
    // Streamed into the private folder (a set may be far larger than its
    // source), then renamed over OUTPUT: never half written, never through a link.
    const std::string name = "references.json";
    std::FILE* out = ::fdopen(folder.create(name, 0666), "wb");
    if (!out) throw SourceError(output, "cannot write the reference set");
    struct Closer {
        std::FILE* f;
        ~Closer() { if (f) std::fclose(f); }
    } closer{out};
    const auto result = agg::kerchunk::kerchunk_references(
        *backend.open_dataset(cf_file, true), {true, nullptr}, export_options,
        [&](std::string_view text) { std::fwrite(text.data(), 1, text.size(), out); });
    for (const auto& line : result.notes) err << "ncafs aggregate: " << line << "\n";
    const bool written = !std::ferror(out) && std::fflush(out) == 0;
    closer.f = nullptr;
    if (std::fclose(out) != 0 || !written) throw SourceError(output, "cannot write the reference set");
    folder.publish(name);
    return summary;
}

}  // namespace ncafs::cli
