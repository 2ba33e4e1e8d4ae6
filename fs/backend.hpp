// What the catalog needs from the layers below (aggregation, codecs): whether
// a file is an aggregation, and the virtual file of one of its views. A small
// struct of functions so that the daemon mechanics can be tested with fakes.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "codecs/virtual_file.hpp"
#include "fs/options.hpp"

namespace ncafs::fs {

struct Backend {
    // The full (possibly slow) test; only called after precheck_aggregation said Maybe.
    std::function<bool(const std::string& path)> is_aggregation;
    // Builds view `view` ("nc") of the aggregation at path from metadata alone.
    // Throws ncafs::Error (or anything) when the aggregation cannot be served.
    std::function<std::shared_ptr<const VirtualFile>(const std::string& path, const std::string& view)> open_view;
};

// The real backend: aggregation/ + codecs/cdf, with allowed roots
// {allowed_roots..., options.extra_allowed_roots...} and the options' rewrites.
Backend make_backend(const ViewOptions& options, const std::vector<std::string>& allowed_roots);

}  // namespace ncafs::fs
