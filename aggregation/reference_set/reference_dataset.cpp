#include "aggregation/reference_set/reference_dataset.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>

#include "aggregation/model/error.hpp"
#include "aggregation/reference_set/reference_parser.hpp"
#include "aggregation/reference_set/reference_source.hpp"
#include "aggregation/reference_set/reference_store.hpp"
#include "codecs/error.hpp"
#include "codecs/json_depth.hpp"
#include "codecs/zarr/zarr_array.hpp"
#include "io/system_call_error.hpp"

namespace ncafs {

namespace {

using json = nlohmann::json;

// Bound of one metadata key (.zarray, .zattrs): more is no metadata.
constexpr uint64_t kMaxMetadataKeyBytes = 16 << 20;
constexpr size_t kSimdjsonPadding = 64;
constexpr uint64_t kAttributeBytes = sizeof(Attribute) + 64;

// The whole reference file, with spare bytes for simdjson, its size bounded first.
std::string read_reference_file(const agg::PathPolicy& paths, uint64_t max_bytes) {
    const std::string& path = paths.aggregation_file();
    OpenResult r = open_regular_file(path, paths.confinement_of_aggregation_file());
    if (!r.fd) throw SystemCallError(path, "cannot open: " + r.reason, r.error);
    auto file = OpenFile::adopt(r.fd.release(), path, r.st);
    if (file->size() > max_bytes)
        throw agg::AggregationError(path, "reference set", std::to_string(file->size()) +
                                                               " bytes exceed the limit max_metadata=" +
                                                               std::to_string(max_bytes));
    std::string text;
    text.reserve(file->size() + kSimdjsonPadding);
    text.resize(file->size());
    if (!text.empty()) file->pread_exact(text.data(), text.size(), 0);
    return text;
}

// The JSON object stored under key (inline or referenced); nullopt when absent.
std::optional<json> metadata_object(const agg::ReferenceStore& store, const std::string& key) {
    auto bytes = store.inline_metadata(key, kMaxMetadataKeyBytes);
    if (!bytes) return std::nullopt;
    const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    if (json_too_deep_at(text)) throw std::runtime_error(key + ": nested deeper than " + std::to_string(kMaxJsonDepth));
    charge_parsed_json(text, "Zarr metadata JSON");
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error(key + " is not a JSON object");
    return j;
}

bool fits_int32(const json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= INT32_MAX;
    return v.is_number_integer() && v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
}

// A JSON attribute value as a netCDF attribute (texts, numbers, booleans,
// lists of numbers); nullopt for what netCDF cannot hold (objects, lists of texts).
std::optional<Attribute> attribute_of(const std::string& name, const json& v) {
    charge_metadata(1, kAttributeBytes + name.size(), "attributes");
    if (v.is_string()) {
        charge_metadata(v.get_ref<const std::string&>().size(), 1, "bytes of attribute text");
        return Attribute::text(name, v.get<std::string>());
    }
    const json list = v.is_array() ? v : json::array({v});
    if (list.empty()) return std::nullopt;
    charge_metadata(list.size(), 2 * sizeof(double), "attribute values");  // as read, then as kept
    bool all_int32 = true;
    std::vector<double> numbers;
    for (const auto& e : list) {
        if (e.is_boolean()) {
            numbers.push_back(e.get<bool>() ? 1 : 0);
            continue;
        }
        if (!e.is_number()) return std::nullopt;
        all_int32 &= fits_int32(e);
        numbers.push_back(e.get<double>());
    }
    if (all_int32) {
        std::vector<int32_t> ints(numbers.begin(), numbers.end());
        return Attribute::numeric(name, NcType::Int, ints);
    }
    return Attribute::numeric(name, NcType::Double, numbers);
}

// Attributes that netCDF wants in the variable's own type.
bool takes_variable_type(const std::string& name) {
    return name == "_FillValue" || name == "missing_value" || name == "valid_min" || name == "valid_max" ||
           name == "valid_range";
}

Attribute in_type(const Attribute& a, NcType type) {
    Attribute out{a.name, type, std::vector<uint8_t>(a.length() * type_size(type))};
    convert_elements(a.type, a.values.data(), type, out.values.data(), a.length());
    return out;
}

std::vector<Attribute> attributes_of(const json& zattrs, NcType type, bool variable) {
    std::vector<Attribute> out;
    for (const auto& [name, value] : zattrs.items()) {
        if (name == "_ARRAY_DIMENSIONS") continue;
        auto a = attribute_of(name, value);
        if (!a) continue;
        if (variable && type != NcType::Char && a->type != NcType::Char && takes_variable_type(name))
            a = in_type(*a, type);
        out.push_back(std::move(*a));
    }
    return out;
}

struct Building {
    const agg::ReferenceStore* store;
    std::shared_ptr<const agg::ReferenceStore> shared_store;
    Dataset dataset;
    std::map<std::string, std::string> dimension_first_user;  // for the conflict message
};

size_t dimension_id(Building& b, const std::string& name, uint64_t length, const std::string& user) {
    if (auto id = b.dataset.find_dimension(name)) {
        if (b.dataset.dimensions[*id].length != length)
            throw agg::AggregationError(b.store->file(), "reference set",
                                        "dimension " + name + " has length " + std::to_string(length) + " in " + user +
                                            " and " + std::to_string(b.dataset.dimensions[*id].length) + " in " +
                                            b.dimension_first_user[name]);
        return *id;
    }
    b.dataset.dimensions.push_back(Dimension{name, length, false});
    b.dimension_first_user[name] = user;
    return b.dataset.dimensions.size() - 1;
}

// One array as a variable; throws std::runtime_error with the reason it cannot be shown.
void add_array(Building& b, const std::string& name) {
    zarr::ZarrArray array = zarr::parse_zarray(*metadata_object(*b.store, name + "/.zarray"));
    const json zattrs = metadata_object(*b.store, name + "/.zattrs").value_or(json::object());
    const json dims = zattrs.value("_ARRAY_DIMENSIONS", json());
    if (!dims.is_array() || dims.size() != array.shape.size())
        throw std::runtime_error("no _ARRAY_DIMENSIONS naming its " + std::to_string(array.shape.size()) + " dimensions");
    for (const auto& d : dims)
        if (!d.is_string() || d.get<std::string>().empty()) throw std::runtime_error("_ARRAY_DIMENSIONS holds " + d.dump());
    Variable v;
    v.name = name;
    v.type = array.dtype.type;
    v.attributes = attributes_of(zattrs, v.type, true);
    if (array.fill && v.type != NcType::Char && !v.find_attribute("_FillValue")) {
        Attribute fill{"_FillValue", v.type, *array.fill};
        v.attributes.insert(v.attributes.begin(), std::move(fill));
    }
    for (size_t k = 0; k < array.shape.size(); ++k)
        v.dimids.push_back(dimension_id(b, dims[k].get<std::string>(), array.shape[k], name));
    v.source = std::make_shared<const agg::ReferenceArraySource>(b.shared_store, name, std::move(array));
    b.dataset.variables.push_back(std::move(v));
}

// The names of the arrays at the top of the store, sorted; those deeper noted as left out.
std::vector<std::string> array_names(Building& b) {
    std::vector<std::string> names;
    const std::string suffix = "/.zarray";
    for (const auto& [key, ref] : b.store->references().refs) {
        if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
        std::string name = key.substr(0, key.size() - suffix.size());
        if (name.find('/') != std::string::npos) {
            b.dataset.notes.push_back({false, false, name, name + ": arrays in sub-groups are not shown"});
            continue;
        }
        names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

bool is_reference_set_file(const std::string& path, const ConfinedRoots* within) {
    OpenResult opened = open_regular_file(path, within);
    return opened.fd && is_reference_set_fd(opened.fd.get());
}

bool is_reference_set_fd(int fd) {
    std::vector<uint8_t> head(agg::kReferenceSniffBytes);
    ssize_t n;
    do n = ::pread(fd, head.data(), head.size(), 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    head.resize(static_cast<size_t>(n));
    return agg::looks_like_reference_set(head);
}

std::shared_ptr<const Dataset> open_reference_set(const std::string& path, const AggregationOptions& options) {
    auto paths = std::make_shared<const agg::PathPolicy>(path, options.allowed_roots, options.path_rewrites,
                                                         options.missing_partitions, options.roots_rule);
    MetadataScope scope(paths->aggregation_file());
    const std::string text = read_reference_file(*paths, options.limits.max_metadata_bytes);
    agg::ReferenceSet set;
    try {
        set = agg::parse_reference_set(text, text.capacity(), options.limits.max_fragments);
    } catch (const MetadataBudgetError&) {
        throw;
    } catch (const std::runtime_error& e) {
        throw agg::AggregationError(paths->aggregation_file(), "reference set", e.what());
    }
    Dataset dataset = agg::dataset_of_store(std::make_shared<const agg::ReferenceStore>(std::move(set), paths));
    dataset.charge = scope.take();
    return std::make_shared<const Dataset>(std::move(dataset));
}

}  // namespace ncafs

namespace ncafs::agg {

Dataset dataset_of_store(std::shared_ptr<const ReferenceStore> store) {
    Building b;
    b.shared_store = std::move(store);
    b.store = b.shared_store.get();
    b.dataset.origin = b.store->file();
    try {
        if (auto global = metadata_object(*b.store, ".zattrs")) b.dataset.attributes = attributes_of(*global, NcType::Char, false);
    } catch (const MetadataBudgetError&) {
        throw;
    } catch (const std::runtime_error& e) {
        b.dataset.notes.push_back({true, false, "", std::string("global attributes left out: ") + e.what()});
    }
    for (const auto& name : array_names(b)) {  // counted by parse_reference_set
        try {
            add_array(b, name);
        } catch (const agg::AggregationError&) {
            throw;
        } catch (const MetadataBudgetError&) {
            throw;
        } catch (const std::runtime_error& e) {
            b.dataset.notes.push_back({true, false, name, name + ": left out: " + e.what()});
        }
    }
    return std::move(b.dataset);
}

std::vector<std::string> reference_files_of(const ArraySource& source) {
    if (auto* s = dynamic_cast<const ReferenceArraySource*>(&source)) return s->store().local_files();
    return {};
}

namespace {

const ReferenceStore* store_of(const Dataset& dataset) {
    for (const auto& v : dataset.variables)
        if (auto* s = dynamic_cast<const ReferenceArraySource*>(v.source.get())) return &s->store();
    return nullptr;
}

}  // namespace

std::vector<std::string> reference_problems(const Dataset& dataset, size_t max_reports) {
    const ReferenceStore* store = store_of(dataset);
    return store ? store->verify(max_reports) : std::vector<std::string>{};
}

std::optional<ReferenceSummary> reference_summary(const Dataset& dataset) {
    const ReferenceStore* store = store_of(dataset);
    if (!store) return std::nullopt;
    const ReferenceSet& set = store->references();
    ReferenceSummary s{set.version, set.refs.size(), 0, set.urls.size()};
    for (const auto& [key, ref] : set.refs) s.inline_references += ref.kind == Reference::Kind::Inline;
    return s;
}

bool reference_names_remote(const ArraySource& source) {
    auto* s = dynamic_cast<const ReferenceArraySource*>(&source);
    return s && s->store().names_remote_objects();
}

}  // namespace ncafs::agg
