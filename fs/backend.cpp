#include "fs/backend.hpp"

#include "codecs/error.hpp"

// The aggregation and CDF view layers are written in parallel with this one;
// until their headers exist the backend refuses aggregations (plain files are
// still served), so the daemon builds and runs at every step.
#if __has_include("aggregation/aggregation_dataset.hpp") && __has_include("codecs/cdf/cdf_view.hpp")
#define NCAFS_HAVE_AGGREGATION 1
#include "aggregation/aggregation_dataset.hpp"
#include "codecs/cdf/cdf_view.hpp"
#else
#define NCAFS_HAVE_AGGREGATION 0
#endif

namespace ncafs::fs {

Backend make_backend(const ViewOptions& options, const std::vector<std::string>& allowed_roots) {
#if NCAFS_HAVE_AGGREGATION
    AggregationOptions aggregation;
    aggregation.allowed_roots = allowed_roots;
    for (const auto& r : options.extra_allowed_roots) aggregation.allowed_roots.push_back(r);
    aggregation.path_rewrites = options.path_rewrites;
    CdfViewOptions cdf;
    cdf.version = options.cdf_version;
    return Backend{
        [](const std::string& path) { return is_aggregation_file(path); },
        [aggregation, cdf](const std::string& path, const std::string& view) -> std::shared_ptr<const VirtualFile> {
            if (view != "nc") throw UsageError("view '" + view + "' is not available in this build");
            return make_cdf_view(open_aggregation(path, aggregation), cdf);
        }};
#else
    (void)options;
    (void)allowed_roots;
    return Backend{[](const std::string&) { return false; },
                   [](const std::string& path, const std::string&) -> std::shared_ptr<const VirtualFile> {
                       throw UsageError(path + ": this build has no aggregation support");
                   }};
#endif
}

}  // namespace ncafs::fs
