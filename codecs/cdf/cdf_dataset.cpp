#include "codecs/cdf/cdf_dataset.hpp"

#include "codecs/cdf/cdf_variable_source.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/cdf/layout.hpp"

namespace ncafs::cdf {

Dataset open_cdf_dataset(const std::string& path) { return open_cdf_dataset(OpenFile::open(path)); }

Dataset open_cdf_dataset(std::shared_ptr<const OpenFile> file, std::span<const uint8_t> head) {
    const std::string& path = file->path();
    std::shared_ptr<const CdfLayout> layout;
    CdfHeader header = read_cdf_header(*file, layout, head);
    Dataset ds;
    ds.origin = path;
    ds.dimensions = std::move(header.dimensions);
    ds.attributes = std::move(header.attributes);
    ds.variables.reserve(header.variables.size());
    for (size_t i = 0; i < header.variables.size(); ++i) {
        CdfVariable& cv = header.variables[i];
        Variable v;
        v.name = std::move(cv.name);
        v.type = cv.type;
        v.dimids = std::move(cv.dimids);
        v.attributes = std::move(cv.attributes);
        v.source = std::make_shared<CdfVariableSource>(file, layout, i, v.name);
        ds.variables.push_back(std::move(v));
    }
    return ds;
}

}  // namespace ncafs::cdf
