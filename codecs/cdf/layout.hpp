// Where every element of every variable lies in a CDF-1/2/5 file, by
// arithmetic on the header (docs/formats/cdf.md; spec "Notes on Computing File Offsets", and
// netcdf-c's NC_var_shape / NC_computeshapes / NC_calcsize).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codecs/cdf/header.hpp"

namespace ncafs::cdf {

struct VariableLayout {
    NcType type = NcType::Byte;
    uint64_t element_size = 1;
    bool is_record = false;
    std::vector<uint64_t> shape;      // dimension lengths; shape[0] = numrecs for a record variable
    std::vector<uint64_t> products;   // product vector of the spec, in elements (record dim skipped)
    std::vector<uint64_t> strides;    // bytes between neighbours along each dim (record dim: record_size)
    uint64_t record_elements = 0;     // elements of one record (record var) or of the whole variable
    uint64_t data_bytes = 0;          // true size without padding: one record, or the whole variable
    uint64_t padded_bytes = 0;        // data_bytes rounded up to 4 (netcdf-c's "len", = vsize when it fits)
    uint64_t slab_bytes = 0;          // bytes this variable occupies per record (or in total): padded,
                                      // except in the one-record-variable case
    uint64_t begin = 0;

    uint64_t element_count() const;   // all elements, all records
};

struct CdfLayout {
    std::vector<VariableLayout> variables;  // in header order
    uint64_t header_size = 0;
    uint64_t begin_rec = 0;      // start of the record data (netcdf-c: begin of the first record variable)
    uint64_t record_size = 0;    // bytes from one record to the next
    uint64_t numrecs = 0;
    size_t record_variable_count = 0;
    // Spec "Note on padding": exactly one record variable => records are not
    // padded (netcdf-c applies it to every type; for int/float/double the
    // padding is empty anyway). Readers ignore its vsize.
    bool packed_records = false;
    uint64_t file_size = 0;      // the size netcdf-c gives the file (NC_calcsize)

    // File offset of the element at `index` of variable `var` (UsageError if outside).
    uint64_t element_offset(size_t var, std::span<const uint64_t> index) const;
    // File offset of element i of the C-order linearisation of variable `var`.
    uint64_t linear_element_offset(size_t var, uint64_t i) const;
};

// Computes the layout from a header. `file` names the file in errors. Throws
// FormatError (at the variable's entry offset) on dimension ids out of range,
// a record dimension that is not first, or sizes that overflow 64 bits.
CdfLayout compute_layout(const CdfHeader& header, const std::string& file);

// Rounds up to a multiple of 4; false on overflow.
bool round_up_4(uint64_t v, uint64_t& out);

}  // namespace ncafs::cdf
