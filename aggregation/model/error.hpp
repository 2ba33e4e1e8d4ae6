// Errors in an aggregation file's metadata: "FILE: VAR:ATTR JSON.PATH: REASON",
// e.g. "/d/x.nca: tas:nca_array Partitions[1].location[0]: stop 60 beyond ...".
#pragma once

#include <string>

#include "codecs/error.hpp"

namespace ncafs::agg {

class AggregationError : public Error {
public:
    AggregationError(const std::string& file, const std::string& where, const std::string& reason)
        : Error(file + ": " + where + ": " + reason), file_(file), where_(where) {}
    const std::string& file() const { return file_; }
    const std::string& where() const { return where_; }  // "tas:nca_array Partitions[1].location[0]"

private:
    std::string file_;
    std::string where_;
};

}  // namespace ncafs::agg
