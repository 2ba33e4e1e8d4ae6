#include "aggregation/terms/cf_aggregation_parser.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "aggregation/model/parse_deadline.hpp"
#include "aggregation/model/error.hpp"
#include "codecs/checked_math.hpp"
#include "aggregation/terms/term_variables.hpp"
#include "codecs/error.hpp"
#include "aggregation/model/shape_text.hpp"

namespace ncafs::agg {

// CF aggregation variables (aggregated_dimensions + aggregated_data, four
// generations: CFA-0.6, the 2024 draft, cfdm 1.12, CF-1.13), one step per
// function; parse_one runs them over a CfParse they share:
//   master (attributes, dimensions) -> term list (classified, found, sizes read)
//   -> size rows -> shape and fragment count -> term layouts -> fragments
//   (unique value | no location | file version, identifier, format).

std::string_view generation_label(CfGeneration g) {
    switch (g) {
        case CfGeneration::Cfa06: return "CFA-0.6.x (location/file/format/address)";
        case CfGeneration::Draft2024: return "CF draft 2024 (shape/location/address)";
        case CfGeneration::Cfdm112: return "cfdm 1.12.0-1.12.1 (map/location/variable)";
        case CfGeneration::Cf113: return "CF-1.13 (map/uris/identifiers)";
    }
    return "?";
}

bool is_cf_aggregation_variable(const Variable& v) {
    return v.find_attribute("aggregated_dimensions") && v.find_attribute("aggregated_data");
}

void FragmentProblems::push_back(std::string problem) {
    if (!problem.empty()) problems_.emplace_back(size_, std::move(problem));
    ++size_;
}

const std::string& FragmentProblems::operator[](uint64_t fragment) const {
    static const std::string none;
    auto it = std::lower_bound(problems_.begin(), problems_.end(), fragment,
                               [](const auto& p, uint64_t f) { return p.first < f; });
    return it != problems_.end() && it->first == fragment ? it->second : none;
}

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

std::string text_of(const Attribute* a) {
    if (!a) return {};
    std::string t = a->as_text();
    while (!t.empty() && t.back() == '\0') t.pop_back();
    return t;
}

std::string index_text(const std::vector<uint64_t>& idx) {
    std::string t = "[";
    for (size_t i = 0; i < idx.size(); ++i) t += (i ? "," : "") + std::to_string(idx[i]);
    return t + "]";
}

// "term: var term: var" -> ordered pairs; throws on a dangling term or variable.
std::vector<std::pair<std::string, std::string>> parse_terms(const std::string& text, const std::string& file,
                                                             const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    auto w = words(text);
    for (size_t i = 0; i < w.size(); ++i) {
        std::string term = w[i];
        std::string var;
        auto colon = term.find(':');
        if (colon == std::string::npos)
            throw AggregationError(file, where, "expected \"term: variable\" pairs, found \"" + term + "\"");
        if (colon + 1 < term.size()) {  // "term:var" without a blank
            var = term.substr(colon + 1);
        } else if (i + 1 < w.size()) {
            var = w[++i];
        }
        term = term.substr(0, colon);
        if (term.empty() || var.empty() || var.find(':') != std::string::npos)
            throw AggregationError(file, where, "term \"" + term + "\" has no variable");
        out.emplace_back(term, var);
    }
    if (out.empty()) throw AggregationError(file, where, "is empty");
    return out;
}

// "${a}: x ${b}: y" -> {"${a}" -> "x", ...} (CFA-0.6.2 / CF draft 2024).
std::vector<std::pair<std::string, std::string>> parse_substitutions(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    auto w = words(text);
    auto is_key = [](const std::string& s) {
        if (s.size() < 5 || s.compare(0, 2, "${") != 0 || s.compare(s.size() - 2, 2, "}:") != 0) return false;
        for (size_t i = 2; i + 2 < s.size(); ++i)
            if (!std::isalnum(static_cast<unsigned char>(s[i])) && s[i] != '_') return false;
        return true;
    };
    for (size_t i = 0; i < w.size(); ++i) {
        if (!is_key(w[i])) continue;
        std::string key = w[i].substr(0, w[i].size() - 1);
        std::string value = (i + 1 < w.size() && !is_key(w[i + 1])) ? w[++i] : "";
        out.emplace_back(key, value);
    }
    return out;
}

std::string substitute(std::string s, const std::vector<std::pair<std::string, std::string>>& subs) {
    if (s.find("${") == std::string::npos) return s;
    for (const auto& [key, value] : subs) {
        for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + value.size()))
            s.replace(at, key.size(), value);
    }
    return s;
}

std::string percent_decode(const std::string& s) {
    if (s.find('%') == std::string::npos) return s;
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

// RFC 3986 scheme ("https" of "https://h/x"), empty when there is none. A
// single letter is taken as a drive letter or a name without a scheme.
std::string uri_scheme(const std::string& s) {
    auto colon = s.find(':');
    if (colon == std::string::npos || colon < 2) return {};
    if (!std::isalpha(static_cast<unsigned char>(s[0]))) return {};
    for (size_t i = 1; i < colon; ++i) {
        char c = s[i];
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return {};
    }
    return lower(s.substr(0, colon));
}

// Whether a fragment file is there, walked from the allowed roots' descriptors
// (io/confined_open.hpp): a name is never followed through a symlink or a
// swapped directory to outside the roots, not even to test that it exists.
bool exists_within(const std::string& path, const PathPolicy& paths) {
    struct stat st{};
    return paths.confinement().stat(path, st);
}

}  // namespace

ResolvedName resolve_fragment_name(const std::string& name, const PathPolicy& paths, bool uri_reference) {
    ResolvedName r{name, ""};
    std::string local;
    const std::string scheme = uri_scheme(name);
    if (scheme == "file") {
        std::string rest = name.substr(5);
        if (rest.compare(0, 2, "//") == 0) {
            auto slash = rest.find('/', 2);
            std::string authority = rest.substr(2, slash == std::string::npos ? std::string::npos : slash - 2);
            if (!authority.empty() && lower(authority) != "localhost") {
                // Example 1c of CFA-0.6.2 ("file://data1/"): data1 is a host, not a folder.
                r.problem = "file URI names the host \"" + authority + "\": only local file URIs are supported: " + name;
                return r;
            }
            rest = slash == std::string::npos ? "/" : rest.substr(slash);
        }
        rest = rest.substr(0, rest.find_first_of("?#"));
        local = percent_decode(rest);
        if (local.empty() || local[0] != '/') {
            r.problem = "file URI without an absolute path is not supported: " + name;
            return r;
        }
    } else if (scheme == "http" || scheme == "https") {
        local = name.substr(0, name.find('#'));  // sent as written (percent-encoded)
    } else if (scheme == "s3") {
        // An S3 key is literal (remote/ encodes it for the request): decode the URI.
        local = uri_reference ? percent_decode(name.substr(0, name.find('#'))) : name;
    } else if (!scheme.empty()) {
        r.problem = "URI scheme \"" + scheme + "\" is not supported (only file:, http:, https:, s3: URIs and paths): " + name;
        return r;
    } else {
        // No scheme: an absolute path (tolerated, A6) or a relative reference,
        // relative to the aggregation file's folder (A5, cfdm abspath rule).
        // CF-1.13 names are URI references (percent-encoded); CFA-0.6.2 names
        // that are not URIs are relative paths, taken as they are (no percent-decoding).
        local = uri_reference ? percent_decode(name.substr(0, name.find('#'))) : name;
    }
    try {
        r.path = paths.resolve(local, false, "");
    } catch (const std::exception& e) {
        r.path = local;
        r.problem = e.what();
    }
    return r;
}

namespace {

enum class Role { Sizes, Names, Ids, Values, Format };

struct TermSet {
    CfGeneration generation;
    std::map<Role, std::pair<std::string, std::string>> roles;  // role -> (term as written, variable)
    std::vector<std::string> ignored;                            // non-standard terms
};

TermSet classify_terms(const std::vector<std::pair<std::string, std::string>>& terms, const std::string& file,
                       const std::string& where) {
    std::map<std::string, std::pair<std::string, std::string>> by;  // lower-case term -> (term, var)
    for (const auto& [t, v] : terms) {
        std::string k = lower(t);
        if (by.count(k)) throw AggregationError(file, where, "term \"" + t + "\" is given twice");
        by[k] = {t, v};
    }
    auto has = [&](const char* k) { return by.count(k) > 0; };
    TermSet ts{};
    std::set<std::string> used;
    auto take = [&](Role r, const char* k) {
        if (has(k)) {
            ts.roles[r] = by[k];
            used.insert(k);
        }
    };
    if (has("file")) {  // G3 (and the April 2024 draft, which said shape for the sizes)
        ts.generation = CfGeneration::Cfa06;
        take(Role::Sizes, has("location") ? "location" : "shape");
        take(Role::Names, "file");
        take(Role::Format, "format");
        take(Role::Ids, "address");
        for (const char* k : {"location", "format", "address"})
            if (!has(k) && !(std::string(k) == "location" && has("shape")))
                throw AggregationError(file, where, std::string("CFA-0.6 aggregation lacks the mandatory term \"") + k + "\"");
    } else if (has("map")) {
        const bool g5 = has("uris") || has("identifiers") || has("unique_values");
        ts.generation = g5 ? CfGeneration::Cf113 : CfGeneration::Cfdm112;
        take(Role::Sizes, "map");
        take(Role::Names, g5 ? "uris" : "location");
        take(Role::Ids, g5 ? "identifiers" : (has("variable") ? "variable" : "identifier"));
        take(Role::Values, g5 ? "unique_values" : "unique_value");
    } else if (has("shape")) {
        ts.generation = CfGeneration::Draft2024;
        take(Role::Sizes, "shape");
        take(Role::Names, "location");
        take(Role::Ids, "address");
        take(Role::Values, has("value") ? "value" : "unique_values");
    } else {
        throw AggregationError(file, where,
                               "no recognised keyword set (map/uris/identifiers, map/unique_values, "
                               "shape/location/address or location/file/format/address)");
    }
    if (!ts.roles.count(Role::Sizes)) throw AggregationError(file, where, "has no fragment sizes term");
    const bool names = ts.roles.count(Role::Names) > 0, values = ts.roles.count(Role::Values) > 0;
    if (ts.generation != CfGeneration::Cfa06) {
        if (names == values)
            throw AggregationError(file, where, names ? "gives both fragment locations and unique values"
                                                      : "gives neither fragment locations nor unique values");
        if (names && !ts.roles.count(Role::Ids))
            throw AggregationError(file, where, "gives fragment locations but no identifiers/address term");
    }
    for (const auto& [k, tv] : by)
        if (!used.count(k)) ts.ignored.push_back(tv.first);
    return ts;
}

enum class Layout { PerFragment, Versions, Scalar };

Layout term_layout(const TermArray& t, const std::vector<uint64_t>& nf, bool allow_versions, bool allow_scalar,
                   const std::string& file, const std::string& where) {
    if (t.shape == nf) return Layout::PerFragment;
    if (allow_scalar && t.shape.empty()) return Layout::Scalar;
    if (allow_versions && t.shape.size() == nf.size() + 1 && std::equal(nf.begin(), nf.end(), t.shape.begin()))
        return Layout::Versions;
    throw AggregationError(file, where,
                           "variable " + t.path + " has shape " + shape_text(t.shape, '(', ')') +
                               " but the array of fragments has shape " + shape_text(nf, '(', ')') +
                               (allow_versions ? " (optionally with a trailing versions dimension)" : ""));
}

// How many values (versions) a text term holds for each fragment.
uint64_t version_count(const TermArray& t, Layout l) { return l == Layout::Versions ? t.shape.back() : 1; }

// Version k of a text term for fragment f (nullopt: missing).
std::optional<std::string_view> text_version(const TermArray& t, Layout l, uint64_t f, uint64_t k) {
    if (l == Layout::Scalar) return t.text_at(0);
    if (l == Layout::PerFragment) return t.text_at(f);
    return t.text_at(f * t.shape.back() + k);
}

// The master's fill value: _FillValue, else missing_value, else the type's default.
std::vector<uint8_t> master_fill(const Variable& v) {
    const size_t n = type_size(v.type);
    std::vector<uint8_t> fill(n);
    for (const char* name : {"_FillValue", "missing_value"}) {
        const Attribute* a = v.find_attribute(name);
        if (a && a->type != NcType::Char && a->length() >= 1 && v.type != NcType::Char) {
            convert_elements(a->type, a->values.data(), v.type, fill.data(), 1);
            return fill;
        }
        if (a && a->type == NcType::Char && v.type == NcType::Char && a->length() >= 1) {
            fill[0] = a->values[0];
            return fill;
        }
    }
    auto d = default_fill_big_endian(v.type);
    std::memcpy(fill.data(), d.data(), n);
    swap_from_big_endian(v.type, fill.data(), 1);
    return fill;
}

std::string root_name(const std::string& full) {
    // "/x" -> "x"; deeper paths are not root variables.
    if (full.size() > 1 && full[0] == '/' && full.find('/', 1) == std::string::npos) return full.substr(1);
    return {};
}

// What the steps of parse_one share: the inputs, the classified terms, their
// arrays and layouts, and the fragment sizes.
struct CfParse {
    const std::string& path;
    const Dataset& file;
    const Variable& carrier;
    const TermFile& terms;
    const PathPolicy& paths;
    const AggregationLimits& limits;
    std::string base_where;  // "tas:aggregated_data"
    CfAggregate out;
    std::vector<std::pair<std::string, std::string>> term_pairs;  // as written
    TermSet ts{};
    std::map<Role, TermArray> arrays;
    std::string sizes_where;
    std::vector<std::vector<uint64_t>> rows;  // per aggregated dim: the fragment sizes
    std::vector<uint64_t> nf;                 // the shape of the array of fragments
    uint64_t nfrag = 1;
    // Term layouts (check_term_layouts).
    bool g3 = false, versions_allowed = false, uri_references = false;
    const TermArray* names = nullptr;
    const TermArray* ids = nullptr;  // null also for non-text (non-netCDF) addresses
    const TermArray* values = nullptr;
    const TermArray* format = nullptr;
    Layout names_l{}, ids_l{}, format_l{};
    std::vector<std::pair<std::string, std::string>> subs;
    std::vector<std::pair<size_t, std::string>> candidates;  // the fragment being built: (version, location)

    Aggregate& agg() { return out.aggregate; }
    std::string where_of(Role r) const { return base_where + " " + ts.roles.at(r).first; }
    [[noreturn]] void fail(const std::string& where, const std::string& reason) const {
        throw AggregationError(path, where, reason);
    }
};

// The aggregated variable: the carrier's attributes, units, fill; its aggregated dimensions.
void parse_master(CfParse& st) {
    Aggregate& a = st.agg();
    const Variable& carrier = st.carrier;
    a.file = st.path;
    a.name = carrier.name;
    a.type = carrier.type;
    for (const auto& at : carrier.attributes)
        if (at.name != "aggregated_dimensions" && at.name != "aggregated_data") a.attributes.push_back(at);
    a.units = text_of(carrier.find_attribute("units"));
    a.calendar = text_of(carrier.find_attribute("calendar"));
    a.fill = master_fill(carrier);
    // A7 decided: the CF-1.13 reading (= cfdm). Fragments are brought to the
    // canonical form - their own masking and unpacking applied - and the result
    // IS the aggregated (raw) data, to which the aggregation variable's
    // scale_factor/add_offset apply afterwards, in the client (they stay as
    // attributes). So nothing is re-packed here: packing stays empty, unlike
    // the G1/G2 rule. Example 7 of CFA-0.6.2 (short fragments, packed master)
    // reads as its text says.
    a.packing.reset();
    if (!carrier.dimids.empty())  // A15: CF L.4 declares tas(obs); its dims are ignored
        a.warnings.push_back(carrier.name + ": aggregation variable is not scalar; its own dimensions are ignored");
    const std::string dims_where = carrier.name + ":aggregated_dimensions";
    for (const auto& d : words(text_of(carrier.find_attribute("aggregated_dimensions")))) {
        if (!st.file.find_dimension(d)) st.fail(dims_where, "dimension \"" + d + "\" does not exist in the root group");
        a.dims.push_back(d);
    }
}

// aggregated_data: its terms classified, every referenced variable found, the sizes read.
void parse_term_list(CfParse& st) {
    const Variable& carrier = st.carrier;
    for (const char* name : {"aggregated_data", "aggregated_dimensions"})
        if (const Attribute* at = carrier.find_attribute(name); at->length() > st.limits.max_metadata_bytes)
            st.fail(carrier.name + ":" + name, std::to_string(at->length()) + " bytes exceed the limit max_metadata=" +
                                                   std::to_string(st.limits.max_metadata_bytes));
    st.term_pairs = parse_terms(text_of(carrier.find_attribute("aggregated_data")), st.path, st.base_where);
    st.ts = classify_terms(st.term_pairs, st.path, st.base_where);
    st.out.generation = st.ts.generation;
    for (const auto& t : st.ts.ignored)
        st.agg().warnings.push_back(st.base_where + ": non-standard term \"" + t + "\" ignored");
    // Every referenced variable must exist (CFA Ex. 5 fails here), also ignored ones.
    for (const auto& [t, v] : st.term_pairs) {
        auto full = st.terms.find(v);
        if (!full)
            st.fail(st.base_where + " " + t, "variable \"" + v + "\" does not exist (CF group search from the root group)");
        st.out.term_variables.push_back(*full);
    }
    // Sizes first: the fragment count is checked before the other terms are
    // read whole (their first rows, at most one answer of rows for all, may
    // have come with the inventory: terms_to_read).
    st.arrays.emplace(Role::Sizes, st.terms.read(*st.terms.find(st.ts.roles.at(Role::Sizes).second)));
    st.sizes_where = st.where_of(Role::Sizes);
}

// One row of the sizes table: positive sizes, padded with trailing missing values only.
std::vector<uint64_t> size_row(const CfParse& st, const TermArray& sizes, uint64_t r, uint64_t ncols) {
    std::vector<uint64_t> row;
    bool padding = false;
    for (uint64_t c = 0; c < ncols; ++c) {
        const auto v = sizes.integer_at(r * ncols + c);
        if (!v) {
            padding = true;
            continue;
        }
        if (padding)
            st.fail(st.sizes_where,
                    "row " + std::to_string(r) + " has a size after a missing value (padding must be trailing)");
        if (*v <= 0)
            st.fail(st.sizes_where,
                    "row " + std::to_string(r) + " holds the size " + std::to_string(*v) + "; sizes must be > 0");
        row.push_back(static_cast<uint64_t>(*v));
    }
    if (row.empty()) st.fail(st.sizes_where, "row " + std::to_string(r) + " holds no fragment size");
    return row;
}

// The sizes term -> one row of fragment sizes per aggregated dimension.
void parse_size_rows(CfParse& st) {
    const TermArray& sizes = st.arrays.at(Role::Sizes);
    const size_t ndim = st.agg().dims.size();
    if (!sizes.numeric_type || !is_integer_type(*sizes.numeric_type))
        st.fail(st.sizes_where, "variable " + sizes.path + " must hold integers");
    if (ndim == 0) {
        // A11: scalar aggregated data: G5 scalar map = 1, G3/G4a 1-D of size 1 holding 1.
        if (sizes.size() != 1 || sizes.integer_at(0).value_or(0) != 1)
            st.fail(st.sizes_where, "scalar aggregated data needs a single size equal to 1");
        return;
    }
    uint64_t nrows = 0, ncols = 0;
    if (sizes.shape.size() == 2) nrows = sizes.shape[0], ncols = sizes.shape[1];
    else if (sizes.shape.size() == 1 && ndim == 1) nrows = 1, ncols = sizes.shape[0];
    else
        st.fail(st.sizes_where, "variable " + sizes.path + " has shape " + shape_text(sizes.shape, '(', ')') +
                                    "; expected (number of aggregated dimensions, fragments)");
    if (nrows != ndim)
        st.fail(st.sizes_where, "variable " + sizes.path + " has " + std::to_string(nrows) + " rows but there are " +
                                    std::to_string(ndim) + " aggregated dimensions (a transposed table?)");
    for (uint64_t r = 0; r < nrows; ++r) st.rows.push_back(size_row(st, sizes, r, ncols));
}

// The master's shape (the row sums win over the declared lengths), the array of
// fragments within max_fragments; then the other terms are read.
void derive_shape(CfParse& st) {
    Aggregate& a = st.agg();
    for (size_t d = 0; d < a.dims.size(); ++d) {
        uint64_t sum = 0;
        for (uint64_t s : st.rows[d])
            sum = checked::add_or_throw(sum, s, [&](const std::string& r) -> void {
                st.fail(st.sizes_where, "sizes overflow: " + r);
            });
        a.shape.push_back(sum);
        st.nf.push_back(st.rows[d].size());
        const Dimension& dim = st.file.dimensions[*st.file.find_dimension(a.dims[d])];
        const uint64_t declared = dim.length;
        // Bug #689 of cf-python: prefer the row sums, warn on disagreement. A
        // record dimension with no records written here is no disagreement.
        if (declared != sum && !(dim.unlimited && declared == 0))
            a.warnings.push_back(st.sizes_where + ": dimension " + a.dims[d] + " has length " + std::to_string(declared) +
                                 " but the fragment sizes add up to " + std::to_string(sum) + " (the sizes win)");
    }
    a.matrix_dims = a.dims;
    a.matrix_shape = st.nf;
    for (uint64_t n : st.nf) {
        if (n != 0 && st.nfrag > st.limits.max_fragments / n)
            st.fail(st.sizes_where, "more than " + std::to_string(st.limits.max_fragments) +
                                        " fragments (limit max_fragments; the array of fragments has shape " +
                                        shape_text(st.nf, '(', ')') + ")");
        st.nfrag *= n;
    }
    charge_metadata(st.nfrag, kFragmentCost, "fragments");
    for (const auto& [role, tv] : st.ts.roles)
        if (role != Role::Sizes) st.arrays.emplace(role, st.terms.read(*st.terms.find(tv.second)));
}

// The other terms' types and layouts against the array of fragments; the substitutions.
void check_term_layouts(CfParse& st) {
    const bool g4a = st.ts.generation == CfGeneration::Draft2024;
    st.g3 = st.ts.generation == CfGeneration::Cfa06;
    st.versions_allowed = st.g3 || g4a;
    st.uri_references = !st.g3 && !g4a;  // CF-1.13 and cfdm: URI references
    auto array = [&](Role r) { return st.arrays.count(r) ? &st.arrays.at(r) : nullptr; };
    st.names = array(Role::Names), st.ids = array(Role::Ids), st.values = array(Role::Values);
    st.format = array(Role::Format);
    if (st.names) {
        const std::string w = st.where_of(Role::Names);
        if (!st.names->is_text) st.fail(w, "variable " + st.names->path + " must hold strings");
        st.names_l = term_layout(*st.names, st.nf, st.versions_allowed, false, st.path, w);
        if (auto s = st.names->text_attribute("substitutions")) {
            if (!st.versions_allowed)
                st.agg().warnings.push_back(w + ": substitutions are not part of this generation; applied anyway");
            st.subs = parse_substitutions(*s);
        }
    }
    if (st.ids) {
        const std::string w = st.where_of(Role::Ids);
        if (!st.ids->is_text && !st.g3) st.fail(w, "variable " + st.ids->path + " must hold strings");
        st.ids_l = term_layout(*st.ids, st.nf, st.versions_allowed, true, st.path, w);
        if (!st.ids->is_text) st.ids = nullptr;  // non-netCDF addresses (G3 `um`): no use for netCDF reading
    }
    if (st.values) term_layout(*st.values, st.nf, false, false, st.path, st.where_of(Role::Values));  // shape check only
    if (st.format) {
        const std::string w = st.where_of(Role::Format);
        if (!st.format->is_text) st.fail(w, "variable " + st.format->path + " must hold strings");
        st.format_l = term_layout(*st.format, st.nf, true, true, st.path, w);
    }
}

// "tas:aggregated_data fragment [3,0,0]": the place of fragment fi in an array of fragments of shape nf.
std::string fragment_where(const std::string& base_where, const std::vector<uint64_t>& nf, uint64_t fi) {
    // base_where + " fragment " + index_text(fragment fi's index), in one
    // allocation: built for every fragment opened (its messages' `where`).
    constexpr std::string_view kFragment = " fragment [";
    std::string t;
    t.reserve(base_where.size() + kFragment.size() + nf.size() * 21 + 1);
    t += base_where;
    t += kFragment;
    for (size_t d = 0; d < nf.size(); ++d) {
        uint64_t inner = 1;  // fragments in one step along axis d
        for (size_t e = d + 1; e < nf.size(); ++e) inner *= nf[e];
        char digits[20];
        const auto end = std::to_chars(digits, digits + sizeof digits, fi / inner % nf[d]).ptr;
        if (d) t += ',';
        t.append(digits, end);
    }
    t += ']';
    return t;
}

std::string fragment_where(const CfParse& st, uint64_t fi) { return fragment_where(st.base_where, st.nf, fi); }

// A fragment given by a unique value: constant, or missing.
void fill_value_fragment(CfParse& st, uint64_t fi, Fragment& f) {
    Aggregate& a = st.agg();
    const TermArray& values = *st.values;
    if (values.is_text) {
        if (a.type != NcType::Char)
            st.fail(st.where_of(Role::Values), "text unique values for a numeric aggregation variable");
        const auto v = values.text_at(fi);
        if (!v) f.kind = FragmentKind::Missing;
        else f.kind = FragmentKind::Constant, f.constant = {static_cast<uint8_t>((*v)[0])};
    } else if (const uint8_t* raw = values.raw_at(fi); !raw) {
        f.kind = FragmentKind::Missing;  // a wholly missing fragment
    } else {
        f.kind = FragmentKind::Constant;
        f.constant.resize(type_size(a.type));
        if (convert_elements(*values.numeric_type, raw, a.type, f.constant.data(), 1, a.fill.data()) != 0)
            a.warnings.push_back(fragment_where(st, fi) + ": unique value out of range of " +
                                 std::string(type_name(a.type)) + "; reads as the fill value");
    }
    f.path = st.path;
}

// Fragment fi's identifier for a location version (nullopt: none given).
std::optional<std::string_view> identifier_of(const CfParse& st, uint64_t fi, size_t version) {
    if (!st.ids) return std::nullopt;
    if (st.ids_l == Layout::Scalar || st.ids_l == Layout::PerFragment) return text_version(*st.ids, st.ids_l, fi, 0);
    return version < version_count(*st.ids, st.ids_l) ? text_version(*st.ids, st.ids_l, fi, version) : std::nullopt;
}

// A fragment with no location: G3 reads a variable of this file (or missing data); else a problem.
std::string fill_unlocated_fragment(CfParse& st, uint64_t fi, Fragment& f) {
    if (!st.g3) {
        // CF-1.13: uris may hold no missing values. Reading this fragment
        // fails rather than silently filling (A8).
        f.kind = FragmentKind::File;
        f.path = st.path;
        return "the fragment has no location (missing value in " + st.names->path + ")";
    }
    // No file: the address names a variable of this file; no address: missing data.
    auto addr = st.ids && st.ids_l != Layout::Scalar ? identifier_of(st, fi, 0) : std::nullopt;
    if (!addr) {
        f.kind = FragmentKind::Missing;
        f.path = st.path;
        return {};
    }
    f.kind = FragmentKind::Self;
    f.path = st.paths.aggregation_file();
    f.variable = *addr;
    // CF group search starts in the group of the referring
    // variable - the address variable (CFA Ex. 3/4 keep both
    // it and the fragments in /aggregation).
    const std::string& ap = st.arrays.at(Role::Ids).path;
    const std::string group = ap.substr(0, ap.rfind('/'));
    if (addr->find('/') == std::string_view::npos && !group.empty())
        if (auto full = st.terms.find(group + "/" + std::string(*addr))) f.variable = *full;
    return {};
}

// A13: with several versions, the first whose local file exists wins; else
// the first that resolves locally; else the first. Sets `version` to the pick.
ResolvedName pick_location(const CfParse& st, size_t& version) {
    const auto& candidates = st.candidates;
    if (candidates.size() == 1) {
        version = candidates[0].first;
        return resolve_fragment_name(candidates[0].second, st.paths, st.uri_references);
    }
    std::vector<std::pair<size_t, ResolvedName>> resolved;
    for (const auto& [k, name] : candidates)
        resolved.emplace_back(k, resolve_fragment_name(name, st.paths, st.uri_references));
    size_t pick = 0;
    bool found = false;
    for (size_t c = 0; c < resolved.size() && !found; ++c)
        if (resolved[c].second.problem.empty() && exists_within(resolved[c].second.path, st.paths))
            pick = c, found = true;
    for (size_t c = 0; c < resolved.size() && !found; ++c)
        if (resolved[c].second.problem.empty()) pick = c, found = true;
    version = resolved[pick].first;
    return std::move(resolved[pick].second);
}

// The format of fragment fi's location version (nullopt: none given).
std::optional<std::string_view> format_of(const CfParse& st, uint64_t fi, size_t version) {
    if (st.format_l != Layout::Versions) return text_version(*st.format, st.format_l, fi, 0);
    return version < version_count(*st.format, st.format_l) ? text_version(*st.format, st.format_l, fi, version)
                                                             : std::nullopt;
}

// A fragment in a file (st.candidates): the version picked, its identifier and format. Returns its problem, if any.
std::string fill_file_fragment(CfParse& st, uint64_t fi, Fragment& f) {
    size_t version = 0;
    ResolvedName chosen = pick_location(st, version);
    f.kind = FragmentKind::File;
    f.path = std::move(chosen.path);
    std::string problem = std::move(chosen.problem);
    auto id = identifier_of(st, fi, version);
    if (!id) {
        if (st.g3) {  // CFA-0.6.2: a missing address makes the fragment missing
            f.kind = FragmentKind::Missing;
            f.path = st.path;
            st.agg().warnings.push_back(fragment_where(st, fi) + ": file given but no address: read as missing data");
        } else if (problem.empty()) {
            problem = "the fragment has no identifier (missing value in " + st.arrays.at(Role::Ids).path + ")";
        }
    } else {
        f.variable = *id;
    }
    if (st.format && f.kind == FragmentKind::File && problem.empty()) {
        auto fmt = format_of(st, fi, version);
        std::string l = fmt ? lower(std::string(*fmt)) : std::string();
        if (fmt && l != "nc" && l != "netcdf" && l != "vds")
            problem = "fragment format \"" + std::string(*fmt) + "\" is not supported (only nc and vds)";
    }
    return problem;
}

// Fragment fi (at idx in the array of fragments), with the problem that reading it will report.
std::string fill_fragment(CfParse& st, uint64_t fi, Fragment& f) {
    // Alignment of the fragment's axes (missing size-1 dims) and its units
    // are only known once the fragment is opened: left to CfFragmentResolver.
    if (st.values) {
        fill_value_fragment(st, fi, f);
        return {};
    }
    // Candidate locations (versions), after substitution.
    st.candidates.clear();
    if (st.names)
        for (uint64_t k = 0; k < version_count(*st.names, st.names_l); ++k)
            if (auto v = text_version(*st.names, st.names_l, fi, k))
                st.candidates.emplace_back(k, substitute(std::string(*v), st.subs));
    if (st.candidates.empty()) return fill_unlocated_fragment(st, fi, f);
    return fill_file_fragment(st, fi, f);
}

// The partition table's id of f's transform. The fragments of one CF
// aggregation differ in nothing of it but variable and constant, so the
// last one is remembered and no key is built per fragment.
struct LastTransform {
    bool known = false;
    std::string variable;
    std::vector<uint8_t> constant;
    uint32_t id = 0;
};

uint32_t transform_of(FragmentTable& table, const Fragment& f, LastTransform& last) {
    if (!last.known || last.variable != f.variable || last.constant != f.constant)
        last = {true, f.variable, f.constant, table.transform_id(f)};
    return last.id;
}

// Fragments, in C order over the array of fragments, boxed by the size rows.
// One Fragment is reused for every row; its `where` is left to where_of.
void build_fragments(CfParse& st) {
    Aggregate& a = st.agg();
    const size_t ndim = a.dims.size();
    std::vector<std::vector<uint64_t>> offsets(ndim);
    for (size_t d = 0; d < ndim; ++d) {
        uint64_t o = 0;
        for (uint64_t s : st.rows[d]) offsets[d].push_back(o), o += s;
    }
    a.fragments.set_rank(ndim);
    a.fragments.set_where_of(
        [base = st.base_where, nf = st.nf](size_t fi) { return fragment_where(base, nf, fi); });
    a.fragments.reserve(st.nfrag);
    std::vector<uint64_t> idx(ndim, 0);
    Fragment f;
    f.start.resize(ndim), f.count.resize(ndim), f.reverse.assign(ndim, false);
    LastTransform last;
    for (uint64_t fi = 0; fi < st.nfrag; ++fi) {
        check_parse_deadline();
        uint64_t rest = fi;
        for (size_t d = ndim; d-- > 0;) idx[d] = rest % st.nf[d], rest /= st.nf[d];
        for (size_t d = 0; d < ndim; ++d) f.start[d] = offsets[d][idx[d]], f.count[d] = st.rows[d][idx[d]];
        f.kind = FragmentKind::File;
        f.path.clear(), f.variable.clear(), f.constant.clear();
        std::string problem = fill_fragment(st, fi, f);
        a.fragments.push_back(f, transform_of(a.fragments, f, last));
        st.out.fragment_problems.push_back(std::move(problem));
    }
}

CfAggregate parse_one(const std::string& path, const Dataset& file, const Variable& carrier, const TermFile& terms,
                      const PathPolicy& paths, const AggregationLimits& limits) {
    CfParse st{path, file, carrier, terms, paths, limits, carrier.name + ":aggregated_data"};
    parse_master(st);
    parse_term_list(st);
    parse_size_rows(st);
    derive_shape(st);
    check_term_layouts(st);
    build_fragments(st);
    return std::move(st.out);
}

// The term variables parse_one will read, by name as written: each
// aggregation variable's sizes term, then its other terms of a role. An
// attribute that does not parse names none (parse_one tells why).
std::vector<std::string> terms_to_read(const std::string& path, const Dataset& file) {
    std::vector<std::string> out;
    for (const auto& v : file.variables) {
        if (!is_cf_aggregation_variable(v)) continue;
        try {
            const std::string where = v.name + ":aggregated_data";
            const auto pairs = parse_terms(text_of(v.find_attribute("aggregated_data")), path, where);
            for (const auto& [role, term] : classify_terms(pairs, path, where).roles) out.push_back(term.second);
        } catch (const AggregationError&) {
        }
    }
    return out;
}

}  // namespace

CfAggregations parse_cf_file(const std::string& path, const Dataset& file, const PathPolicy& paths,
                             const AggregationLimits& limits) {
    CfAggregations out;
    TermFile terms(path, paths.confinement_of_aggregation_file(), terms_to_read(path, file));
    std::set<std::string> hidden;
    for (const auto& v : file.variables) {
        if (!is_cf_aggregation_variable(v)) continue;
        CfAggregate a = parse_one(path, file, v, terms, paths, limits);
        for (const auto& t : a.term_variables)
            if (auto r = root_name(t); !r.empty()) hidden.insert(r);
        const FragmentTable& table = a.aggregate.fragments;
        for (size_t i = 0; i < table.size(); ++i)
            if (table.kind(i) == FragmentKind::Self) {
                const Fragment f = table[i];
                std::string n = f.variable[0] == '/' ? root_name(f.variable) : f.variable;
                if (!n.empty() && n.find('/') == std::string::npos) hidden.insert(n);
            }
        for (const auto& w : a.aggregate.warnings) out.warnings.push_back(w);
        out.aggregates.push_back(std::move(a));
    }
    // CF 7.1: a boundary variable without units has its parent coordinate's
    // (needed to convert fragments whose parent uses other reference times).
    for (auto& ca : out.aggregates) {
        Aggregate& a = ca.aggregate;
        if (!a.units.empty()) continue;
        for (const auto& parent : file.variables)
            if (text_of(parent.find_attribute("bounds")) == a.name) {
                a.units = text_of(parent.find_attribute("units"));
                if (a.calendar.empty()) a.calendar = text_of(parent.find_attribute("calendar"));
                break;
            }
    }
    // Carriers the Dataset model does not show (string variables such as CF
    // L.5 `uid`): their feature variables are hidden all the same.
    auto all = terms.root_variables();
    for (const auto& v : all) {
        if (!v.aggregated_data || !v.aggregated_dimensions || file.find_variable(v.name)) continue;
        out.warnings.push_back(v.name + ": aggregation variable of a type the presented dataset cannot hold; not presented");
        try {
            for (const auto& [t, name] : parse_terms(*v.aggregated_data, path, v.name + ":aggregated_data"))
                if (auto full = terms.find(name))
                    if (auto r = root_name(*full); !r.empty()) hidden.insert(r);
        } catch (const AggregationError& e) {
            out.warnings.push_back(e.what());
        }
    }
    // Dimensions used only by hidden variables.
    std::set<std::string> used_visible, used_hidden;
    for (const auto& v : all) {
        bool is_carrier = v.aggregated_data && v.aggregated_dimensions;
        if (is_carrier) continue;  // A15: a carrier's own dims do not count
        for (const auto& d : v.dims) (hidden.count(v.name) ? used_hidden : used_visible).insert(d);
    }
    for (const auto& a : out.aggregates)
        for (const auto& d : a.aggregate.dims) used_visible.insert(d);
    for (const auto& v : all)
        if (v.aggregated_dimensions)
            for (const auto& d : words(*v.aggregated_dimensions)) used_visible.insert(d);
    out.hidden_variables.assign(hidden.begin(), hidden.end());
    for (const auto& d : file.dimensions)
        if (used_hidden.count(d.name) && !used_visible.count(d.name)) out.hidden_dimensions.push_back(d.name);
    return out;
}

std::vector<Aggregate> parse_cf_aggregations(const std::string& path, const Dataset& file, const PathPolicy& paths) {
    std::vector<Aggregate> out;
    for (auto& a : parse_cf_file(path, file, paths).aggregates) out.push_back(std::move(a.aggregate));
    return out;
}

}  // namespace ncafs::agg
