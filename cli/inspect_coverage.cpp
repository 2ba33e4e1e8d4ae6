#include "cli/inspect_coverage.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>

#include "aggregation/model/units_conversion.hpp"
#include "aggregation/read/aggregated_source.hpp"
#include "aggregation/read/path_policy.hpp"
#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

namespace {

using Range = std::pair<uint64_t, uint64_t>;  // half-open [first, second)

bool splits(const agg::Aggregate& a, size_t d) {
    for (size_t i = 0; i < a.fragments.size(); ++i)
        if (a.fragments.count(i, d) != a.shape[d]) return true;
    return false;
}

std::string text_attribute(const Variable& v, std::string_view name) {
    const Attribute* at = v.find_attribute(name);
    return at && at->type == NcType::Char ? at->as_text() : std::string{};
}

// The range of the coordinate variable of `dim` (one-dimensional, numeric):
// its first and last values when the aggregation file holds them, else its
// actual_range attribute (CF): an aggregated coordinate is never read, since
// that would open partitions.
void coordinate_range(const Dataset& ds, DimensionCoverage& c) {
    const Variable* v = ds.find_variable(c.name);
    if (!v || !v->source || v->dimids.size() != 1 || c.length == 0 || v->type == NcType::Char) return;
    const auto shape = ds.shape(*v);
    if (shape.size() != 1 || shape[0] != c.length) return;
    if (dynamic_cast<const agg::AggregatedSource*>(v->source.get())) {
        const Attribute* range = v->find_attribute("actual_range");
        if (!range || range->type == NcType::Char || range->length() != 2) return;
        c.first = range->as_double(0), c.last = range->as_double(1);
    } else {
        std::vector<uint8_t> one(type_size(v->type));
        auto value_at = [&](uint64_t i) {
            const uint64_t start[1] = {i}, count[1] = {1};
            v->source->read(start, count, ByteOrder::Native, one.data());
            return element_as_double(v->type, one.data(), 0);
        };
        try {
            c.first = value_at(0), c.last = value_at(c.length - 1);
        } catch (const Error&) {
            return;  // unreadable coordinate: the range is left out
        }
    }
    const std::string units = text_attribute(*v, "units"), calendar = text_attribute(*v, "calendar");
    c.first_date = agg::decode_time(*c.first, units, calendar);
    c.last_date = agg::decode_time(*c.last, units, calendar);
}

std::vector<Range> merged(std::vector<Range> ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<Range> out;
    for (const auto& r : ranges)
        if (!out.empty() && r.first <= out.back().second)
            out.back().second = std::max(out.back().second, r.second);
        else
            out.push_back(r);
    return out;
}

bool fully_covered(const std::vector<Range>& union_, Range cell) {
    for (const auto& r : union_)
        if (r.first <= cell.first && cell.second <= r.second) return true;
    return false;
}

bool touches(const std::vector<Range>& ranges, Range cell) {
    for (const auto& r : ranges)
        if (r.first < cell.second && cell.first < r.second) return true;
    return false;
}

// The bar and partition counts of dimension d.
void fill_bar(const agg::Aggregate& a, size_t d, const std::set<std::string>& missing, DimensionCoverage& c) {
    std::map<Range, bool> ranges;  // distinct partition range -> a file of it is missing
    for (size_t i = 0; i < a.fragments.size(); ++i) {
        if (a.fragments.kind(i) == agg::FragmentKind::Missing) continue;  // explicitly missing: uncovered
        Range r{a.fragments.start(i, d), a.fragments.start(i, d) + a.fragments.count(i, d)};
        bool absent = a.fragments.kind(i) == agg::FragmentKind::File && missing.count(a.fragments.path(i)) > 0;
        ranges[r] = ranges[r] || absent;
    }
    std::vector<Range> all, absent;
    for (const auto& [r, gone] : ranges) {
        all.push_back(r);
        if (gone) absent.push_back(r);
    }
    c.partitions = ranges.size(), c.missing = absent.size();
    const std::vector<Range> covered = merged(all);
    const uint64_t cells = std::min<uint64_t>(c.length, kBarCells);
    for (uint64_t b = 0; b < cells; ++b) {
        Range cell{b * c.length / cells, (b + 1) * c.length / cells};
        c.bar += touches(absent, cell) ? '.' : fully_covered(covered, cell) ? '#' : ' ';
    }
}

std::string number_text(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

}  // namespace

FileCensus file_census(const agg::AggregatedSource& source) {
    const agg::Aggregate& a = source.aggregate();
    std::set<std::string> files;
    for (size_t i = 0; i < a.fragments.size(); ++i)
        if (a.fragments.kind(i) == agg::FragmentKind::File) files.insert(a.fragments.path(i));
    FileCensus census;
    census.files = files.size();
    for (const auto& f : files) {
        if (remote::is_remote_url(f)) continue;
        struct stat st {};
        if (source.paths().confinement().stat(f, st))
            census.bytes += static_cast<uint64_t>(st.st_size), ++census.present;
        else
            (errno == EACCES || errno == EXDEV ? census.refused : census.missing).insert(f);
    }
    return census;
}

std::set<std::string> FileCensus::unreadable() const {
    std::set<std::string> all = missing;
    all.insert(refused.begin(), refused.end());
    return all;
}

std::vector<DimensionCoverage> coverage_map(const agg::AggregatedSource& source, const Dataset& presented,
                                            const std::set<std::string>& unreadable) {
    const agg::Aggregate& a = source.aggregate();
    std::vector<DimensionCoverage> out;
    for (size_t d = 0; d < a.dims.size(); ++d) {
        if (a.shape[d] == 0 || !splits(a, d)) continue;
        DimensionCoverage c;
        c.name = a.dims[d], c.length = a.shape[d];
        coordinate_range(presented, c);
        fill_bar(a, d, unreadable, c);
        out.push_back(std::move(c));
    }
    return out;
}

std::string coverage_line(const DimensionCoverage& c) {
    std::string range = "[0:" + std::to_string(c.length) + ")";
    if (c.first_date && c.last_date)
        range = *c.first_date + ".." + *c.last_date;
    else if (c.first && c.last)
        range = number_text(*c.first) + ".." + number_text(*c.last);
    return c.name + "  " + range + "  [" + c.bar + "] " + std::to_string(c.partitions) +
           (c.partitions == 1 ? " partition, " : " partitions, ") +
           std::to_string(c.missing) + " missing";
}

}  // namespace ncafs::cli
