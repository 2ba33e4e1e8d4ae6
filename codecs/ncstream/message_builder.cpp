#include "codecs/ncstream/message_builder.hpp"

#include <climits>

#include "codecs/error.hpp"
#include "codecs/ncstream/schema_mapping.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::ncstream {

namespace {

// What one slab costs in a view (Slab, its data message, its layout segment).
constexpr uint64_t kSlabBytes = sizeof(Slab) + 192;

constexpr uint64_t kMaxSlabsPerVariable = uint64_t{1} << 20;

void plan_variable(size_t vi, const std::vector<uint64_t>& shape, size_t esize, uint64_t max_bytes,
                   std::vector<Slab>& out) {
    const size_t rank = shape.size();
    const uint64_t total = element_count(shape);
    if (rank == 0 || total == 0 || total <= max_bytes / esize) {
        out.push_back(Slab{vi, std::vector<uint64_t>(rank, 0), shape, 0, total});
        return;
    }
    // inner[k] = elements in one index step of axis k.
    std::vector<uint64_t> inner(rank, 1);
    for (size_t k = rank - 1; k-- > 0;) inner[k] = inner[k + 1] * shape[k + 1];
    size_t k = 0;
    while (inner[k] > max_bytes / esize) ++k;  // terminates: inner[rank-1] = 1
    const uint64_t rows_per_slab = std::min<uint64_t>(shape[k], (max_bytes / esize) / inner[k]);
    uint64_t prefixes = 1;
    for (size_t d = 0; d < k; ++d) prefixes *= shape[d];
    const uint64_t per_prefix = (shape[k] + rows_per_slab - 1) / rows_per_slab;
    if (prefixes > kMaxSlabsPerVariable / per_prefix)
        throw UsageError("ncstream: a variable of " + std::to_string(total) + " elements needs more than 2^20 slabs");
    // Each slab: its plan, its data message and its segment of the view, counted before they are built.
    charge_metadata(prefixes * per_prefix, kSlabBytes + 32 * rank, "ncstream data messages");
    std::vector<uint64_t> prefix(k, 0);
    for (uint64_t p = 0; p < prefixes; ++p) {
        for (uint64_t j = 0; j < shape[k]; j += rows_per_slab) {
            Slab s{vi, std::vector<uint64_t>(rank, 0), shape, 0, 0};
            for (size_t d = 0; d < k; ++d) {
                s.start[d] = prefix[d];
                s.count[d] = 1;
            }
            s.start[k] = j;
            s.count[k] = std::min(rows_per_slab, shape[k] - j);
            uint64_t first = 0;
            for (size_t d = 0; d <= k; ++d) first += s.start[d] * inner[d];
            s.first_element = first;
            s.element_count = s.count[k] * inner[k];
            out.push_back(std::move(s));
        }
        for (size_t d = k; d-- > 0;) {  // odometer over the prefix axes
            if (++prefix[d] < shape[d]) break;
            prefix[d] = 0;
        }
    }
}

void fill_dimension(const Dimension& d, pb::Dimension* out) {
    out->set_name(to_valid_utf8(d.name));
    out->set_length(d.length);
    if (d.unlimited) out->set_isunlimited(true);
}

}  // namespace

std::vector<Slab> plan_slabs(const Dataset& ds, uint64_t max_payload_bytes) {
    std::vector<Slab> slabs;
    slabs.reserve(ds.variables.size());
    for (size_t vi = 0; vi < ds.variables.size(); ++vi) {
        const Variable& v = ds.variables[vi];
        plan_variable(vi, ds.shape(v), type_size(v.type), max_payload_bytes, slabs);
    }
    return slabs;
}

uint64_t slab_payload_bytes(const Dataset& ds, const Slab& slab) {
    return slab.element_count * type_size(ds.variables[slab.variable].type);
}

pb::Header build_header(const Dataset& ds, const std::string& location) {
    pb::Header h;
    h.set_location(to_valid_utf8(location));
    pb::Group* root = h.mutable_root();
    root->set_name("");  // required, even though empty
    for (const Dimension& d : ds.dimensions) fill_dimension(d, root->add_dims());
    for (const Variable& v : ds.variables) {
        pb::Variable* pv = root->add_vars();
        pv->set_name(to_valid_utf8(v.name));
        pv->set_datatype(to_pb_type(v.type));
        for (size_t id : v.dimids) fill_dimension(ds.dimensions.at(id), pv->add_shape());
        for (const Attribute& a : v.attributes) encode_attribute(a, pv->add_atts());
        // Harmless for 5.x readers, and the only unsigned marker 4.x readers know.
        if (is_unsigned_type(v.type)) pv->set_unsigned_(true);
    }
    for (const Attribute& a : ds.attributes) encode_attribute(a, root->add_atts());
    h.set_version(1);
    return h;
}

pb::Data build_data_message(const Dataset& ds, const Slab& slab, bool deflated) {
    const Variable& v = ds.variables.at(slab.variable);
    pb::Data d;
    d.set_varname(escape_name(to_valid_utf8(v.name)));
    d.set_datatype(to_pb_type(v.type));
    pb::Section* section = d.mutable_section();  // present even for a scalar (no ranges)
    for (size_t k = 0; k < slab.start.size(); ++k) {
        pb::Range* r = section->add_range();
        r->set_start(slab.start[k]);
        r->set_size(slab.count[k]);
        r->set_stride(1);
    }
    // The payload really is big-endian; only this explicit flag is read right
    // by every reader (notes 3.5).
    d.set_bigend(true);
    d.set_version(3);
    if (deflated) {
        d.set_compress(pb::DEFLATE);
        d.set_uncompressedsize(static_cast<uint32_t>(slab_payload_bytes(ds, slab)));
    }
    return d;
}

std::string serialize_message(const google::protobuf::MessageLite& m, const char* what) {
    const size_t n = m.ByteSizeLong();
    if (n > static_cast<size_t>(INT_MAX)) throw UsageError(std::string("ncstream: ") + what + " message reaches 2 GiB");
    std::string out(n, '\0');
    if (!m.SerializeToArray(out.data(), static_cast<int>(n)))
        throw UsageError(std::string("ncstream: ") + what + " message cannot be serialised (required field missing)");
    return out;
}

}  // namespace ncafs::ncstream
