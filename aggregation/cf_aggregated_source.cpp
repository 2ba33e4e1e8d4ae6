#include "aggregation/cf_aggregated_source.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "aggregation/scatter_box.hpp"
#include "aggregation/text_attribute.hpp"
#include "aggregation/units_conversion.hpp"
#include "codecs/error.hpp"

namespace ncafs::agg {

struct CfAggregatedSource::Piece {
    std::shared_ptr<const Dataset> dataset;  // the fragment file as it was when resolved
    std::shared_ptr<const Aggregate> one;    // one-fragment aggregate over the fragment's box
    std::shared_ptr<const AggregatedSource> source;
};

namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

bool is_packed(const Aggregate& a) {
    for (const auto& at : a.attributes)
        if (at.name == "scale_factor" || at.name == "add_offset") return true;
    return false;
}

}  // namespace

std::vector<int> align_fragment_axes(const std::vector<uint64_t>& fragment_shape, const std::vector<uint64_t>& box) {
    if (fragment_shape.size() > box.size())
        throw std::runtime_error("has " + std::to_string(fragment_shape.size()) + " dimensions " +
                                 shape_text(fragment_shape) + ", more than the " + std::to_string(box.size()) +
                                 " aggregated dimensions " + shape_text(box));
    std::vector<int> axis_to_master;
    size_t k = 0;
    for (size_t d = 0; d < box.size(); ++d) {
        if (k < fragment_shape.size() && fragment_shape[k] == box[d]) {
            axis_to_master.push_back(static_cast<int>(d));
            ++k;
        } else if (box[d] != 1) {
            throw std::runtime_error("has shape " + shape_text(fragment_shape) + " but its place in the aggregation is " +
                                     shape_text(box) + " (only size-1 dimensions may be omitted)");
        }
    }
    if (k != fragment_shape.size())
        throw std::runtime_error("has shape " + shape_text(fragment_shape) + " but its place in the aggregation is " +
                                 shape_text(box));
    return axis_to_master;
}

CfAggregatedSource::CfAggregatedSource(std::shared_ptr<const CfAggregate> aggregate,
                                       std::shared_ptr<const PathPolicy> paths, DatasetCache& cache)
    : agg_(std::move(aggregate)), paths_(std::move(paths)), cache_(cache), grid_(agg_->aggregate),
      pieces_(agg_->aggregate.fragments.size()) {}

std::shared_ptr<const CfAggregatedSource::Piece> CfAggregatedSource::resolve(size_t i) const {
    const Aggregate& a = agg_->aggregate;
    const Fragment& f = a.fragments[i];
    auto fail = [&](const std::string& reason) -> SourceError {
        return SourceError(f.path, reason + " (" + f.where + ")");
    };
    if (i < agg_->fragment_problems.size() && !agg_->fragment_problems[i].empty()) throw fail(agg_->fragment_problems[i]);
    // "/temp1" is a root variable; "/aggregation/temp1" lies in a group,
    // opened as a dataset of its own.
    std::string name = f.variable, group;
    if (name.size() > 1 && name[0] == '/') name = name.substr(1);
    if (auto slash = name.rfind('/'); slash != std::string::npos) {
        group = "/" + name.substr(0, slash);
        name = name.substr(slash + 1);
    }
    if (f.kind == FragmentKind::File && !paths_->physically_allowed(f.path))
        throw fail("resolves (through symlinks) outside the allowed roots: refused");

    std::shared_ptr<const Dataset> ds;
    try {
        ds = cache_.get(f.path, group, &paths_->confinement());
    } catch (const Error& e) {
        throw fail(std::string("fragment file cannot be opened: ") + e.what());
    }
    {
        std::lock_guard lock(mutex_);
        if (pieces_[i] && pieces_[i]->dataset == ds) return pieces_[i];
    }
    const Variable* var = ds->find_variable(name);
    if (!var) throw fail("has no variable \"" + name + "\"");
    if (!var->source) throw fail("variable \"" + name + "\" has no readable values");

    Fragment g = f;
    g.variable = name;  // "/g/temp1" -> "temp1" in group "/g"
    g.group = group;
    g.start.assign(f.start.size(), 0);
    try {
        g.axis_to_master = align_fragment_axes(var->source->shape(), f.count);
    } catch (const std::exception& e) {
        throw fail("variable \"" + name + "\" " + e.what());
    }
    // Units: none on the fragment means the aggregation's (CFA-0.6.2 3.4); a
    // fragment without a calendar is taken to use the aggregation's calendar.
    std::string fu = text_attribute(*var, "units"), fc = text_attribute(*var, "calendar");
    if (fu.empty())  // CF 7.1: boundary variables inherit their parent coordinate's units and calendar
        for (const auto& parent : ds->variables)
            if (text_attribute(parent, "bounds") == name) {
                fu = text_attribute(parent, "units");
                if (fc.empty()) fc = text_attribute(parent, "calendar");
                break;
            }
    try {
        g.units = units_converter(fu, fc.empty() ? a.calendar : fc, a.units, a.calendar);
    } catch (const std::exception& e) {
        throw fail("variable \"" + name + "\" units: " + e.what());
    }
    g.units_text = fu.empty() ? "" : fu + " -> " + a.units;
    // A7: fragment values are the aggregation's raw values; with a packed
    // aggregation variable a units change would act on packed numbers.
    if (!g.units.is_identity() && is_packed(a))
        throw fail("variable \"" + name + "\" has units \"" + fu + "\" but the packed aggregation variable has \"" + a.units +
                   "\": converting packed values is refused");

    auto one = std::make_shared<Aggregate>();
    one->file = a.file;
    one->name = a.name;
    one->type = a.type;
    one->dims = a.dims;
    one->shape = f.count;
    one->fill = a.fill;
    one->units = a.units;
    one->calendar = a.calendar;
    one->fragments.push_back(std::move(g));
    auto piece = std::make_shared<Piece>();
    piece->dataset = ds;
    piece->one = one;
    piece->source = std::make_shared<const AggregatedSource>(one, paths_, cache_);
    piece->source->verify_fragment(0);
    std::lock_guard lock(mutex_);
    pieces_[i] = piece;
    return piece;
}

void CfAggregatedSource::verify_fragment(size_t i) const {
    const Fragment& f = agg_->aggregate.fragments.at(i);
    if (i < agg_->fragment_problems.size() && !agg_->fragment_problems[i].empty())
        throw SourceError(f.path, agg_->fragment_problems[i] + " (" + f.where + ")");
    if (f.kind == FragmentKind::File || f.kind == FragmentKind::Self) resolve(i);
}

std::shared_ptr<const Aggregate> CfAggregatedSource::resolved_fragment(size_t i) const {
    const Fragment& f = agg_->aggregate.fragments.at(i);
    if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) return nullptr;
    return resolve(i)->one;
}

void CfAggregatedSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                              void* out) const {
    const Aggregate& a = agg_->aggregate;
    check_box(a.shape, start, count, a.name.c_str());
    const size_t rank = a.shape.size();
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    if (n == 0) return;
    const size_t msize = type_size(a.type);
    std::vector<size_t> touched;
    if (grid_.for_each_fragment(start, count, [&](size_t i) { touched.push_back(i); }))
        fill_elements(out, a.fill.data(), msize, n);  // gaps (a defect validation reports) read as fill

    const std::vector<uint64_t> req_start(start.begin(), start.end()), req_count(count.begin(), count.end());
    std::vector<uint8_t> buffer;
    for (size_t i : touched) {
        const Fragment& f = a.fragments[i];
        std::vector<uint64_t> local(rank), len(rank), at(rank);
        bool whole = true;
        uint64_t pn = 1;
        for (size_t d = 0; d < rank; ++d) {
            uint64_t lo = std::max(req_start[d], f.start[d]);
            uint64_t hi = std::min(req_start[d] + req_count[d], f.start[d] + f.count[d]);
            local[d] = lo - f.start[d];
            len[d] = hi - lo;
            at[d] = lo - req_start[d];
            pn *= len[d];
            if (len[d] != req_count[d]) whole = false;
        }
        uint8_t* dst = static_cast<uint8_t*>(out);
        if (!whole) {
            buffer.resize(pn * msize);
            dst = buffer.data();
        }
        if (f.kind == FragmentKind::Missing || f.kind == FragmentKind::Constant) {
            if (i < agg_->fragment_problems.size() && !agg_->fragment_problems[i].empty())
                throw SourceError(f.path, agg_->fragment_problems[i] + " (" + f.where + ")");
            fill_elements(dst, (f.kind == FragmentKind::Constant ? f.constant : a.fill).data(), msize, pn);
        } else {
            resolve(i)->source->read(local, len, ByteOrder::Native, dst);
        }
        if (!whole) scatter_box(buffer.data(), len, at, req_count, msize, static_cast<uint8_t*>(out));
    }
    if (order == ByteOrder::Big) swap_to_big_endian(a.type, out, n);
}

std::optional<std::vector<FileExtent>> CfAggregatedSource::big_endian_extents(uint64_t first, uint64_t n) const {
    const Aggregate& a = agg_->aggregate;
    const size_t rank = a.shape.size();
    if (n == 0) return std::vector<FileExtent>{};
    std::vector<uint64_t> index(rank);
    uint64_t rest = first;
    for (size_t d = rank; d-- > 0;) {
        if (a.shape[d] == 0) return std::nullopt;
        index[d] = rest % a.shape[d];
        rest /= a.shape[d];
    }
    auto fi = grid_.fragment_at(index);
    if (!fi) return std::nullopt;
    const Fragment& f = a.fragments[*fi];
    if (f.kind != FragmentKind::File && f.kind != FragmentKind::Self) return std::nullopt;
    bool inside = true;
    for_each_linear_box(a.shape, first, n, [&](std::span<const uint64_t> s, std::span<const uint64_t> c, uint64_t) {
        for (size_t d = 0; d < rank; ++d)
            if (s[d] < f.start[d] || s[d] + c[d] > f.start[d] + f.count[d]) inside = false;
    });
    if (!inside) return std::nullopt;
    // A run lying inside one box is a run of the box's own C-order linearisation.
    uint64_t local_first = 0;
    for (size_t d = 0; d < rank; ++d) local_first = local_first * f.count[d] + (index[d] - f.start[d]);
    try {
        return resolve(*fi)->source->big_endian_extents(local_first, n);
    } catch (const Error&) {
        return std::nullopt;  // the read itself reports the problem
    }
}

}  // namespace ncafs::agg
