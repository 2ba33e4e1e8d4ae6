#include "codecs/cdf/layout.hpp"

#include "codecs/error.hpp"

namespace ncafs::cdf {

namespace {

bool mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace

bool round_up_4(uint64_t v, uint64_t& out) {
    if (v > UINT64_MAX - 3) return false;
    out = (v + 3) & ~uint64_t{3};
    return true;
}

uint64_t VariableLayout::element_count() const {
    // Bounded by the layout checks: record_elements * numrecs fits (see compute_layout).
    return is_record ? record_elements * shape[0] : record_elements;
}

namespace {

[[noreturn]] void fail_variable(const std::string& file, const CdfVariable& v, const std::string& why) {
    throw FormatError(file, v.entry_offset, "variable '" + v.name + "': " + why);
}

// One variable's shape, element products and byte sizes, every step checked for overflow.
VariableLayout variable_layout(const CdfHeader& header, const CdfVariable& v, std::optional<size_t> recdim,
                               const std::string& file) {
    VariableLayout vl;
    vl.type = v.type;
    vl.element_size = type_size(v.type);
    vl.begin = v.begin;
    const size_t rank = v.dimids.size();
    vl.shape.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
        if (v.dimids[d] >= header.dimensions.size())
            fail_variable(file, v, "dimension id " + std::to_string(v.dimids[d]) + " out of range (" +
                                       std::to_string(header.dimensions.size()) + " dimensions)");
        if (recdim && v.dimids[d] == *recdim && d != 0)
            fail_variable(file, v, "the record dimension is not its first dimension");
        vl.shape[d] = header.dimensions[v.dimids[d]].length;
    }
    vl.is_record = recdim && rank > 0 && v.dimids[0] == *recdim;
    // Product vector from right to left, skipping the record dimension.
    vl.products.assign(rank, 0);
    uint64_t product = 1;
    for (size_t d = rank; d-- > 0;) {
        if (!(d == 0 && vl.is_record)) {
            if (!mul(product, vl.shape[d], product)) fail_variable(file, v, "element count overflows 64 bits");
        }
        vl.products[d] = product;
    }
    vl.record_elements = product;
    if (!mul(product, vl.element_size, vl.data_bytes) || !round_up_4(vl.data_bytes, vl.padded_bytes))
        fail_variable(file, v, "byte size overflows 64 bits");
    vl.slab_bytes = vl.padded_bytes;
    return vl;
}

// begin_rec as netcdf-c's NC_computeshapes: the begin of the first record
// variable in header order, else the end of the last non-record variable.
// A single record variable's records are packed (no padding).
void place_records(CdfLayout& layout, const CdfHeader& header, bool have_fixed, uint64_t end_of_last_fixed) {
    layout.begin_rec = have_fixed ? end_of_last_fixed : header.header_size;
    for (auto& vl : layout.variables)
        if (vl.is_record) {
            layout.begin_rec = vl.begin;
            break;
        }
    if (layout.record_variable_count == 1) {
        layout.packed_records = true;
        for (auto& vl : layout.variables)
            if (vl.is_record) {
                layout.record_size = vl.data_bytes;
                vl.slab_bytes = vl.data_bytes;
            }
    }
}

// Byte strides per dimension (the record stride for a record variable's first); numrecs checked.
void set_strides(CdfLayout& layout, const CdfHeader& header, const std::string& file) {
    for (size_t i = 0; i < layout.variables.size(); ++i) {
        auto& vl = layout.variables[i];
        const size_t rank = vl.shape.size();
        vl.strides.assign(rank, 0);
        for (size_t d = 0; d < rank; ++d)
            vl.strides[d] = (d == 0 && vl.is_record) ? layout.record_size
                                                     : (d + 1 < rank ? vl.products[d + 1] : 1) * vl.element_size;
        if (vl.is_record) {
            uint64_t total;
            if (!mul(vl.record_elements, layout.numrecs, total))
                fail_variable(file, header.variables[i], "element count overflows 64 bits");
        }
    }
}

}  // namespace

CdfLayout compute_layout(const CdfHeader& header, const std::string& file) {
    CdfLayout layout;
    layout.header_size = header.header_size;
    layout.numrecs = header.numrecs;
    const auto recdim = header.record_dimension();
    layout.variables.reserve(header.variables.size());

    bool have_fixed = false;
    uint64_t end_of_last_fixed = 0;
    for (const CdfVariable& v : header.variables) {
        VariableLayout vl = variable_layout(header, v, recdim, file);
        if (vl.is_record) {
            ++layout.record_variable_count;
            if (!add(layout.record_size, vl.padded_bytes, layout.record_size))
                fail_variable(file, v, "record size overflows 64 bits");
        } else {
            have_fixed = true;
            if (!add(vl.begin, vl.padded_bytes, end_of_last_fixed)) fail_variable(file, v, "data end overflows 64 bits");
        }
        layout.variables.push_back(std::move(vl));
    }
    place_records(layout, header, have_fixed, end_of_last_fixed);
    set_strides(layout, header, file);

    // NC_calcsize.
    if (layout.variables.empty()) {
        layout.file_size = header.header_size;
    } else if (layout.record_variable_count == 0) {
        layout.file_size = end_of_last_fixed;
    } else {
        uint64_t records;
        if (!mul(layout.numrecs, layout.record_size, records) || !add(layout.begin_rec, records, layout.file_size))
            throw FormatError(file, 4, "record data size overflows 64 bits");
    }
    return layout;
}

uint64_t CdfLayout::element_offset(size_t var, std::span<const uint64_t> index) const {
    const VariableLayout& vl = variables.at(var);
    if (index.size() != vl.shape.size()) throw UsageError("element index rank does not match the variable");
    uint64_t off = vl.begin;
    for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] >= vl.shape[d]) throw UsageError("element index outside the variable");
        off += index[d] * vl.strides[d];
    }
    return off;
}

uint64_t CdfLayout::linear_element_offset(size_t var, uint64_t i) const {
    const VariableLayout& vl = variables.at(var);
    if (i >= vl.element_count()) throw UsageError("linear element index outside the variable");
    if (!vl.is_record) return vl.begin + i * vl.element_size;
    return vl.begin + (i / vl.record_elements) * record_size + (i % vl.record_elements) * vl.element_size;
}

}  // namespace ncafs::cdf
