#include "codecs/ds/ds_view.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "codecs/array_source.hpp"
#include "codecs/ds/ds_attributes.hpp"
#include "codecs/ds/ds_cf_rules.hpp"
#include "codecs/ds/ds_layout.hpp"
#include "codecs/ds/ds_types.hpp"
#include "codecs/ds/ds_value_block.hpp"
#include "codecs/error.hpp"
#include "io/mutex.hpp"

namespace ncafs {

namespace {

using ds::Json;

// Raw values: the source's elements in big-endian order (chars as they are).
class RawProducer : public ds::ChunkProducer {
public:
    explicit RawProducer(std::shared_ptr<const ArraySource> source) : source_(std::move(source)) {}
    size_t width() const override { return type_size(source_->type()); }
    void produce(uint64_t first, uint64_t count, uint8_t* missing, uint8_t* values) const override {
        std::memset(missing, 0, count);
        source_->read_linear(first, count, ByteOrder::Big, values);
    }
    const ArraySource* passed_through() const override { return source_.get(); }

private:
    std::shared_ptr<const ArraySource> source_;
};

// netCDF4-python's default view, little-endian (ds-format on x86).
class CfProducer : public ds::ChunkProducer {
public:
    CfProducer(std::shared_ptr<const ArraySource> source, ds::CfRules rules)
        : source_(std::move(source)), rules_(std::move(rules)) {}
    size_t width() const override { return type_size(rules_.out); }
    void produce(uint64_t first, uint64_t count, uint8_t* missing, uint8_t* values) const override {
        std::vector<uint8_t> raw(count * type_size(rules_.stored));
        source_->read_linear(first, count, ByteOrder::Native, raw.data());
        ds::apply_cf_rules(rules_, raw.data(), count, missing, values);
        if constexpr (std::endian::native == std::endian::big) swap_to_big_endian(rules_.out, values, count);
    }

private:
    std::shared_ptr<const ArraySource> source_;
    ds::CfRules rules_;
};

Json attributes_json(const std::vector<Attribute>& attributes) {
    // Appended to the ordered map's vector (its operator[] searches it: a
    // file of 100,000 attributes would take minutes); a repeated name keeps
    // its first place and its last value, as operator[] gives.
    Json o = Json::object();
    Json::object_t::Container& members = o.get_ref<Json::object_t&>();
    std::unordered_map<std::string_view, size_t> place;
    for (const auto& a : attributes) {
        auto [it, fresh] = place.emplace(a.name, members.size());
        if (fresh)
            members.emplace_back(a.name, ds::attribute_to_json(a));
        else
            members[it->second].second = ds::attribute_to_json(a);
    }
    return o;
}

// The keys ds-format's netCDF driver sets before the writer adds its own:
// attributes, .dims, .size, .type (the netCDF type, before unpacking).
Json netcdf_driver_meta(const Dataset& d, const Variable& v) {
    Json meta = attributes_json(v.attributes);
    Json dims = Json::array();
    for (size_t id : v.dimids) dims.push_back(d.dimensions.at(id).name);
    meta[".dims"] = std::move(dims);
    meta[".size"] = nullptr;
    meta[".type"] = std::string(ds::ds_type_name(ds::ds_type_for(v.type)));
    return meta;
}

std::vector<const Variable*> sorted_variables(const Dataset& d) {
    std::vector<const Variable*> vars;
    for (const auto& v : d.variables) vars.push_back(&v);
    std::stable_sort(vars.begin(), vars.end(), [](const Variable* a, const Variable* b) { return a->name < b->name; });
    return vars;
}

std::shared_ptr<const VirtualFile> build_layout(const Dataset& d, bool cf) {
    std::vector<ds::DsLayoutVariable> out;
    for (const Variable* v : sorted_variables(d)) {
        if (!v->source) throw SourceError(d.origin, "variable " + v->name + " has no values");
        const auto shape = d.shape(*v);
        const uint64_t n = element_count(shape);
        const bool is_char = v->type == NcType::Char;
        ds::DsLayoutVariable lv;
        lv.name = v->name;
        lv.meta = netcdf_driver_meta(d, *v);
        lv.size = shape;
        if (!cf) {
            lv.type = std::string(ds::ds_type_name(ds::ds_type_for(v->type)));
            lv.endian.emplace(1, 'b');  // (not = "b": GCC 12 -Wrestrict false positive)
            if (n > 0) {
                ds::ValueBlockPlan plan{n, is_char, false, {}};
                lv.block = std::make_shared<ds::ValueBlock>(std::make_shared<RawProducer>(v->source), plan);
            }
            out.push_back(std::move(lv));
            continue;
        }
        auto rules = ds::cf_rules_for(*v);
        auto producer = std::make_shared<CfProducer>(v->source, rules);
        ds::ValueBlockPlan plan = ds::count_missing(*producer, n, is_char, true);
        if (shape.empty() && plan.kept() == 0) {
            // A masked 0-d variable: ds-format stores no data, .size null,
            // the netCDF type, and no .endian key.
            lv.size = std::nullopt;
            lv.type = lv.meta[".type"].get<std::string>();
            out.push_back(std::move(lv));
            continue;
        }
        const ds::DsType t = ds::ds_type_for(rules.out);
        lv.type = std::string(ds::ds_type_name(t));
        lv.missing = plan.has_mask();
        // numpy byte order '|' (1-byte) -> "b"; native ('=') and strings -> "l" on x86.
        lv.endian.emplace(1, (type_size(rules.out) == 1 && !is_char) ? 'b' : 'l');
        if (n > 0) lv.block = std::make_shared<ds::ValueBlock>(producer, std::move(plan));
        out.push_back(std::move(lv));
    }
    return ds::make_ds_layout(std::move(out), attributes_json(d.attributes));
}

// Builds the cf layout on first use (its size depends on the data).
class LazyCfView : public VirtualFile {
public:
    explicit LazyCfView(std::shared_ptr<const Dataset> d) : dataset_(std::move(d)) {}
    uint64_t size() const override { return get().size(); }
    void read(uint64_t offset, std::span<uint8_t> out) const override { get().read(offset, out); }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        return get().pieces(offset, length);
    }

private:
    const VirtualFile& get() const {
        MutexLock lock(mutex_);
        if (!built_) built_ = build_layout(*dataset_, true);  // on failure: retried next time
        return *built_;
    }
    std::shared_ptr<const Dataset> dataset_;
    mutable Mutex mutex_;  // lock order: outermost: the counting pass reads the whole dataset under it
    mutable std::shared_ptr<const VirtualFile> built_ NCAFS_GUARDED_BY(mutex_);
};

}  // namespace

std::shared_ptr<const VirtualFile> make_ds_view(std::shared_ptr<const Dataset> dataset, const DsViewOptions& options) {
    if (!dataset) throw UsageError("make_ds_view: no dataset");
    if (options.values == DsViewOptions::Values::Raw) return build_layout(*dataset, false);
    return std::make_shared<LazyCfView>(std::move(dataset));
}

}  // namespace ncafs
