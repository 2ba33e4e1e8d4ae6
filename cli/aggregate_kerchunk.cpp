#include "cli/aggregate_kerchunk.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "aggregation/kerchunk_export/kerchunk_writer.hpp"
#include "codecs/error.hpp"
#include "fs/backend.hpp"
#include "fs/options.hpp"

namespace ncafs::cli {

namespace {

// A name beside `output` that nothing uses: ".NAME.kerchunk-PID[-N].nc".
std::string hidden_sibling(const std::string& output) {
    const std::filesystem::path out(output);
    const std::string stem = (out.parent_path() / ("." + out.filename().string() + ".kerchunk-" +
                                                   std::to_string(::getpid()))).string();
    for (int n = 0;; ++n) {
        std::string candidate = stem + (n ? "-" + std::to_string(n) : "") + ".nc";
        std::error_code ec;
        if (!std::filesystem::exists(std::filesystem::symlink_status(candidate, ec))) return candidate;
    }
}

// Removes the file when it goes out of scope.
struct RemovedAtEnd {
    std::string path;
    ~RemovedAtEnd() { ::unlink(path.c_str()); }
};

}  // namespace

agg::AggregateSummary write_kerchunk_aggregation(const std::vector<std::string>& files,
                                                 agg::AggregateWriterOptions options, bool inline_converted,
                                                 std::ostream& err) {
    const std::string output = options.output;
    RemovedAtEnd hidden{hidden_sibling(output)};
    options.output = hidden.path;
    options.absolute_uris = true;  // the references name every partition by its absolute path
    agg::AggregateSummary summary = agg::write_cf_aggregation(files, options);
    // The files were named by the caller, who reads them: no root confines them.
    fs::Backend backend = fs::make_backend(fs::ViewOptions{}, {"/"});
    agg::kerchunk::ExportOptions export_options;
    export_options.inline_converted = inline_converted;
    const auto result = agg::kerchunk::kerchunk_references(*backend.open_dataset(hidden.path, true),
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
