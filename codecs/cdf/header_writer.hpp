// Encodes the CDF-1/2/5 header of a Dataset and places its variables exactly
// as netcdf-c does on nc_enddef (no extra header space, no alignment beyond
// 4 bytes), i.e. as `ncgen -b` writes the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/cdf/header.hpp"
#include "codecs/dataset.hpp"

namespace ncafs::cdf {

struct EncodedCdfHeader {
    CdfHeader header;            // version, numrecs, vsize and begin of every variable, header_size
    std::vector<uint8_t> bytes;  // the header_size bytes of the header
};

// The CDF model of a dataset, without version, begins or vsizes. The record
// dimension is the first unlimited dimension that is the first dimension of
// every variable using it (and used at most once by each); every other
// unlimited dimension becomes a fixed dimension of its current length (CDF has
// one record dimension, and only as a variable's first dimension). Throws
// UsageError for what CDF cannot represent: a fixed dimension of length 0,
// dimension ids out of range, empty names.
CdfHeader cdf_model_of(const Dataset& dataset);

// Why `version` cannot hold the model (netcdf-c's limits: CDF-1/2 types,
// dimension lengths, NC_check_vlens variable sizes, CDF-1 32-bit offsets),
// or nullopt when it can. The model is placed for that version to decide.
std::optional<std::string> why_version_cannot_hold(const CdfHeader& model, int version);

// Sets version, header_size, vsize and begin of every variable.
void place_variables(CdfHeader& model, int version);

// The header bytes of a placed model (header_size bytes, zero padding).
std::vector<uint8_t> encode_header_bytes(const CdfHeader& placed);

// All of the above: the smallest of CDF-1, CDF-2, CDF-5 that holds the dataset,
// or `version` when given (UsageError if it cannot hold it).
EncodedCdfHeader encode_cdf_header(const Dataset& dataset, std::optional<int> version = std::nullopt);

}  // namespace ncafs::cdf
