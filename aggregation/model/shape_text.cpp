#include "aggregation/model/shape_text.hpp"

namespace ncafs::agg {

std::string shape_text(const std::vector<uint64_t>& shape, char open, char close) {
    std::string text(1, open);
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + close;
}

}  // namespace ncafs::agg
