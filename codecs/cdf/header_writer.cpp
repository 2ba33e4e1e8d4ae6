#include "codecs/cdf/header_writer.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/cdf/layout.hpp"
#include "codecs/error.hpp"

namespace ncafs::cdf {

namespace {

constexpr uint32_t kTagDimension = 0x0A;
constexpr uint32_t kTagVariable = 0x0B;
constexpr uint32_t kTagAttribute = 0x0C;
// Counts are NON_NEG (a non-negative INT) in CDF-1/2.
constexpr uint64_t kMaxCount32 = 0x7FFFFFFF;

uint64_t pad4(uint64_t n) { return (n + 3) & ~uint64_t{3}; }

uint64_t word_of(int version) { return version == kData64 ? 8 : 4; }
uint64_t offset_bytes_of(int version) { return version == kClassic ? 4 : 8; }

uint64_t attribute_list_size(const std::vector<Attribute>& atts, uint64_t w) {
    uint64_t n = 4 + w;
    for (const auto& a : atts) n += w + pad4(a.name.size()) + 4 + w + pad4(a.values.size());
    return n;
}

uint64_t header_size_of(const CdfHeader& h, int version) {
    const uint64_t w = word_of(version);
    uint64_t n = 4 + w;
    n += 4 + w;
    for (const auto& d : h.dimensions) n += w + pad4(d.name.size()) + w;
    n += attribute_list_size(h.attributes, w);
    n += 4 + w;
    for (const auto& v : h.variables)
        n += w + pad4(v.name.size()) + w + v.dimids.size() * w + attribute_list_size(v.attributes, w) + 4 + w +
             offset_bytes_of(version);
    return n;
}

class Encoder {
public:
    Encoder(int version, size_t size) : w_(word_of(version)), version_(version) { out_.reserve(size); }

    void be(uint64_t v, uint64_t bytes) {
        for (uint64_t i = bytes; i-- > 0;) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
    void word(uint64_t v) { be(v, w_); }
    void padding() {
        while (out_.size() % 4) out_.push_back(0);
    }
    void name(const std::string& s) {
        word(s.size());
        out_.insert(out_.end(), s.begin(), s.end());
        padding();
    }
    void attributes(const std::vector<Attribute>& atts) {
        if (atts.empty()) return absent();
        be(kTagAttribute, 4);
        word(atts.size());
        for (const auto& a : atts) {
            name(a.name);
            be(static_cast<uint32_t>(a.type), 4);
            word(a.length());
            size_t at = out_.size();
            out_.insert(out_.end(), a.values.begin(), a.values.end());
            swap_to_big_endian(a.type, out_.data() + at, a.length());
            padding();
        }
    }
    void absent() {
        be(0, 4);
        word(0);
    }
    void header(const CdfHeader& h) {
        out_.insert(out_.end(), {'C', 'D', 'F', static_cast<uint8_t>(version_)});
        word(h.numrecs);
        if (h.dimensions.empty()) {
            absent();
        } else {
            be(kTagDimension, 4);
            word(h.dimensions.size());
            for (const auto& d : h.dimensions) {
                name(d.name);
                word(d.unlimited ? 0 : d.length);
            }
        }
        attributes(h.attributes);
        if (h.variables.empty()) {
            absent();
        } else {
            be(kTagVariable, 4);
            word(h.variables.size());
            for (const auto& v : h.variables) {
                name(v.name);
                word(v.dimids.size());
                for (size_t id : v.dimids) word(id);
                attributes(v.attributes);
                be(static_cast<uint32_t>(v.type), 4);
                word(v.vsize);
                be(v.begin, offset_bytes_of(version_));
            }
        }
    }
    std::vector<uint8_t> take() { return std::move(out_); }

private:
    uint64_t w_;
    int version_;
    std::vector<uint8_t> out_;
};

// netcdf-c's NC_check_vlen: whether one record (or the whole variable) fits vlen_max bytes.
bool vlen_fits(const CdfHeader& h, const CdfVariable& v, uint64_t vlen_max) {
    uint64_t prod = type_size(v.type);
    for (size_t i = h.is_record_variable(v) ? 1 : 0; i < v.dimids.size(); ++i) {
        uint64_t len = h.dimensions[v.dimids[i]].length;
        if (len == 0) continue;
        if (len > vlen_max / prod) return false;
        prod *= len;
    }
    return true;
}

// netcdf-c's NC_check_vlens for CDF-1/2: at most one too-large non-record
// variable, the last one, and then no record variables; at most one
// too-large record variable, the last one.
std::optional<std::string> check_vlens(const CdfHeader& h, uint64_t vlen_max) {
    size_t large = 0, records = 0;
    bool last_is_large = false;
    std::string large_name;
    for (const auto& v : h.variables) {
        if (h.is_record_variable(v)) {
            ++records;
            continue;
        }
        last_is_large = !vlen_fits(h, v, vlen_max);
        if (last_is_large) {
            ++large;
            large_name = v.name;
        }
    }
    if (large > 1) return "more than one non-record variable larger than " + std::to_string(vlen_max) + " bytes";
    if (large == 1 && !last_is_large)
        return "non-record variable '" + large_name + "' is larger than " + std::to_string(vlen_max) +
               " bytes and is not the last one";
    if (records == 0) return std::nullopt;
    if (large == 1) return "non-record variable '" + large_name + "' is larger than " + std::to_string(vlen_max) +
                           " bytes and there are record variables";
    large = 0;
    last_is_large = false;
    for (const auto& v : h.variables) {
        if (!h.is_record_variable(v)) continue;
        last_is_large = !vlen_fits(h, v, vlen_max);
        if (last_is_large) {
            ++large;
            large_name = v.name;
        }
    }
    if (large > 1) return "more than one record variable with records larger than " + std::to_string(vlen_max) + " bytes";
    if (large == 1 && !last_is_large)
        return "record variable '" + large_name + "' has records larger than " + std::to_string(vlen_max) +
               " bytes and is not the last record variable";
    return std::nullopt;
}

void check_name(const std::string& name, const std::string& what) {
    if (name.empty()) throw UsageError(what + " has an empty name, which CDF cannot store");
    if (name.find('\0') != std::string::npos) throw UsageError(what + " '" + name + "' contains a NUL byte");
}

void check_attributes(const std::vector<Attribute>& atts, const std::string& what) {
    for (const auto& a : atts) {
        check_name(a.name, what + " attribute");
        if (a.values.size() % type_size(a.type) != 0)
            throw UsageError(what + " attribute '" + a.name + "' holds a partial element");
    }
}

}  // namespace

CdfHeader cdf_model_of(const Dataset& ds) {
    CdfHeader h;
    for (const auto& v : ds.variables)
        for (size_t id : v.dimids)
            if (id >= ds.dimensions.size())
                throw UsageError(ds.origin + ": variable '" + v.name + "' uses dimension id " + std::to_string(id) +
                                 " of " + std::to_string(ds.dimensions.size()));
    // Which unlimited dimension can be the record dimension (see header).
    std::optional<size_t> record;
    for (size_t u = 0; u < ds.dimensions.size() && !record; ++u) {
        if (!ds.dimensions[u].unlimited) continue;
        bool ok = true;
        for (const auto& v : ds.variables) {
            auto uses = std::count(v.dimids.begin(), v.dimids.end(), u);
            if (uses > 1 || (uses == 1 && v.dimids[0] != u)) ok = false;
        }
        if (ok) record = u;
    }
    h.dimensions = ds.dimensions;
    for (size_t i = 0; i < h.dimensions.size(); ++i) {
        auto& d = h.dimensions[i];
        check_name(d.name, ds.origin + ": dimension");
        d.unlimited = record && i == *record;
        if (!d.unlimited && d.length == 0)
            throw UsageError(ds.origin + ": dimension '" + d.name +
                             "' has length 0 and is not the record dimension; CDF cannot store it");
    }
    h.numrecs = record ? ds.dimensions[*record].length : 0;
    check_attributes(ds.attributes, ds.origin + ": global");
    h.attributes = ds.attributes;
    h.variables.reserve(ds.variables.size());
    for (const auto& v : ds.variables) {
        check_name(v.name, ds.origin + ": variable");
        check_attributes(v.attributes, ds.origin + ": variable '" + v.name + "'");
        CdfVariable cv;
        cv.name = v.name;
        cv.dimids = v.dimids;
        cv.attributes = v.attributes;
        cv.type = v.type;
        h.variables.push_back(std::move(cv));
    }
    return h;
}

void place_variables(CdfHeader& h, int version) {
    if (!is_cdf_version(version)) throw UsageError("CDF version must be 1, 2 or 5, not " + std::to_string(version));
    h.version = version;
    h.header_size = header_size_of(h, version);
    // NC_begins with h_minfree = v_minfree = 0 and alignment 1 (nc_enddef):
    // non-record variables follow the header back to back, then the record
    // variables; every len is already a multiple of 4.
    const CdfLayout sizes = compute_layout(h, "(dataset)");
    uint64_t index = h.header_size;
    auto place = [&](bool record_pass) {
        for (size_t i = 0; i < h.variables.size(); ++i) {
            if (sizes.variables[i].is_record != record_pass) continue;
            auto& v = h.variables[i];
            const uint64_t len = sizes.variables[i].padded_bytes;
            v.begin = index;
            v.vsize = (version != kData64 && len > kSaturatedVsize - 3) ? kSaturatedVsize : len;
            if (__builtin_add_overflow(index, len, &index))
                throw UsageError("variable '" + v.name + "': file offsets overflow 64 bits");
        }
    };
    place(false);
    place(true);
}

std::optional<std::string> why_version_cannot_hold(const CdfHeader& model, int version) {
    if (!is_cdf_version(version)) return "CDF version must be 1, 2 or 5, not " + std::to_string(version);
    const std::string cdf = "CDF-" + std::to_string(version);
    CdfHeader h = model;
    try {
        place_variables(h, version);
        (void)compute_layout(h, "(dataset)");
    } catch (const Error& e) {
        return std::string(e.what());
    }
    const uint64_t max_count = version == kData64 ? uint64_t{INT64_MAX} : kMaxCount32;
    auto check_count = [&](uint64_t n, const std::string& what) -> std::optional<std::string> {
        if (n > max_count) return what + " (" + std::to_string(n) + ") is too large for " + cdf;
        return std::nullopt;
    };
    auto check_atts = [&](const std::vector<Attribute>& atts, const std::string& what) -> std::optional<std::string> {
        if (auto e = check_count(atts.size(), "the number of " + what + " attributes")) return e;
        for (const auto& a : atts) {
            if (version != kData64 && is_cdf5_only(a.type))
                return what + " attribute '" + a.name + "' has type " + std::string(type_name(a.type)) +
                       ", which needs CDF-5";
            if (auto e = check_count(a.length(), "the length of " + what + " attribute '" + a.name + "'")) return e;
            if (auto e = check_count(a.name.size(), "the name length of '" + a.name + "'")) return e;
        }
        return std::nullopt;
    };
    if (auto e = check_count(h.dimensions.size(), "the number of dimensions")) return e;
    if (auto e = check_count(h.variables.size(), "the number of variables")) return e;
    if (auto e = check_atts(h.attributes, "global")) return e;
    // Dimension lengths as netcdf-c's NC3_def_dim allows them.
    const uint64_t max_dim = version == kClassic ? 0x7FFFFFFFu - 3 : version == kOffset64 ? 0xFFFFFFFFu - 3 : INT64_MAX;
    for (const auto& d : h.dimensions) {
        if (auto e = check_count(d.name.size(), "the name length of dimension '" + d.name + "'")) return e;
        if (!d.unlimited && d.length > max_dim)
            return "dimension '" + d.name + "' of length " + std::to_string(d.length) + " is too long for " + cdf;
    }
    // numrecs is 32 bits in CDF-1/2, and 2^32-1 means STREAMING.
    if (version != kData64 && h.numrecs >= 0xFFFFFFFFu)
        return std::to_string(h.numrecs) + " records are too many for " + cdf;
    for (const auto& v : h.variables) {
        const std::string label = "variable '" + v.name + "'";
        if (version != kData64 && is_cdf5_only(v.type))
            return label + " has type " + std::string(type_name(v.type)) + ", which needs CDF-5";
        if (auto e = check_count(v.name.size(), "the name length of " + label)) return e;
        if (auto e = check_count(v.dimids.size(), "the rank of " + label)) return e;
        if (auto e = check_atts(v.attributes, label)) return e;
        if (version == kClassic && v.begin > 0x7FFFFFFFu)
            return label + " begins at byte " + std::to_string(v.begin) + ", beyond the 2^31-1 offsets of CDF-1";
    }
    if (version != kData64) {
        // NC_check_vlens: CDF-1 with 32-bit off_t limit, CDF-2 with the unsigned one.
        if (auto e = check_vlens(h, version == kClassic ? 0x7FFFFFFFu - 3 : 0xFFFFFFFFu - 3)) return *e + " in " + cdf;
    }
    return std::nullopt;
}

std::vector<uint8_t> encode_header_bytes(const CdfHeader& h) {
    Encoder e(h.version, h.header_size);
    e.header(h);
    std::vector<uint8_t> bytes = e.take();
    if (bytes.size() != h.header_size)
        throw Error("internal error: encoded CDF header has " + std::to_string(bytes.size()) + " bytes, expected " +
                    std::to_string(h.header_size));
    return bytes;
}

EncodedCdfHeader encode_cdf_header(const Dataset& dataset, std::optional<int> version) {
    CdfHeader model = cdf_model_of(dataset);
    int chosen = 0;
    if (version) {
        if (auto why = why_version_cannot_hold(model, *version))
            throw UsageError(dataset.origin + ": cannot be written as CDF-" + std::to_string(*version) + ": " + *why);
        chosen = *version;
    } else {
        std::string reasons;
        for (int v : {kClassic, kOffset64, kData64}) {
            auto why = why_version_cannot_hold(model, v);
            if (!why) {
                chosen = v;
                break;
            }
            reasons += (reasons.empty() ? "" : "; ") + std::string("CDF-") + std::to_string(v) + ": " + *why;
        }
        if (chosen == 0) throw UsageError(dataset.origin + ": no CDF version can hold it: " + reasons);
    }
    place_variables(model, chosen);
    EncodedCdfHeader out;
    out.bytes = encode_header_bytes(model);
    out.header = std::move(model);
    return out;
}

}  // namespace ncafs::cdf
