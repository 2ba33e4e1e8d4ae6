#include "aggregation/model/fragment_table.hpp"

#include <cstring>
#include <stdexcept>

#include "codecs/dataset.hpp"

namespace ncafs::agg {

namespace {

// Byte key of everything a Transform holds, for deduplication.
template <typename T>
void put_raw(std::string& key, const T& v) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_text(std::string& key, const std::string& s) {
    put_raw(key, s.size());
    key += s;
}

template <typename T>
void put_list(std::string& key, const std::vector<T>& v) {
    put_raw(key, v.size());
    for (const T& x : v) put_raw(key, x);
}

void put_part(std::string& key, const std::vector<std::optional<IndexSelection>>& part) {
    put_raw(key, part.size());
    for (const auto& p : part) {
        put_raw(key, static_cast<int8_t>(!p ? -1 : p->is_list ? 1 : 0));
        if (!p) continue;
        put_raw(key, p->first), put_raw(key, p->step), put_raw(key, p->count);
        put_list(key, p->list);
    }
}

std::string transform_key(const Fragment& f, bool declared_shape_is_count) {
    std::string key;
    put_text(key, f.variable);
    put_text(key, f.group);
    put_raw(key, f.varid.has_value()), put_raw(key, f.varid.value_or(0));
    put_list(key, f.constant);
    put_list(key, f.axis_to_master);
    put_raw(key, declared_shape_is_count);
    if (!declared_shape_is_count) put_list(key, f.declared_shape);
    put_part(key, f.part);
    put_list(key, std::vector<uint8_t>(f.reverse.begin(), f.reverse.end()));
    put_raw(key, f.units.scale), put_raw(key, f.units.offset);
    put_text(key, f.units_text);
    put_raw(key, f.declared_type.has_value()), put_raw(key, f.declared_type.value_or(NcType::Byte));
    return key;
}

}  // namespace

void FragmentTable::reserve(size_t n) {
    if (rank_known_) (wide_ ? box64_.reserve(n * 2 * rank_) : box32_.reserve(n * 2 * rank_));
    kind_.reserve(n);
    directory_.reserve(n);
    name_end_.reserve(n);
    transform_.reserve(n);
}

void FragmentTable::widen() {
    box64_.assign(box32_.begin(), box32_.end());
    box32_ = {};
    wide_ = true;
}

void FragmentTable::put_box_value(size_t k, uint64_t v) {
    if (!wide_ && v > UINT32_MAX) widen();
    if (wide_) box64_[k] = v;
    else box32_[k] = static_cast<uint32_t>(v);
}

void FragmentTable::store_box(size_t row, std::span<const uint64_t> start, std::span<const uint64_t> count) {
    if (start.size() != count.size()) throw std::invalid_argument("partition box: start and count differ in rank");
    if (start.empty() && count.empty()) return;  // placed later
    if (start.size() != rank_) throw std::invalid_argument("partition box rank differs from the other partitions'");
    for (size_t d = 0; d < rank_; ++d) {
        put_box_value(row * 2 * rank_ + d, start[d]);
        put_box_value(row * 2 * rank_ + rank_ + d, count[d]);
    }
}

uint32_t FragmentTable::intern_directory(std::string_view dir) {
    if (!directories_.empty() && directories_[last_directory_] == dir) return last_directory_;  // runs share one
    auto [it, inserted] = directory_ids_.try_emplace(std::string(dir), static_cast<uint32_t>(directories_.size()));
    if (inserted) directories_.emplace_back(dir);
    return last_directory_ = it->second;
}

uint32_t FragmentTable::intern_transform(const Fragment& f) {
    const bool is_count = !f.declared_shape.empty() && f.declared_shape == f.count;
    auto [it, inserted] = transform_ids_.try_emplace(transform_key(f, is_count), static_cast<uint32_t>(transforms_.size()));
    if (inserted) {
        Transform t{f, is_count};
        t.fields.start.clear(), t.fields.count.clear(), t.fields.path.clear(), t.fields.where.clear();
        if (is_count) t.fields.declared_shape.clear();
        transforms_.push_back(std::move(t));
    }
    return it->second;
}

void FragmentTable::store_row(size_t row, const Fragment& f, uint32_t transform) {
    kind_[row] = static_cast<uint8_t>(f.kind);
    const size_t slash = f.path.rfind('/');
    const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
    directory_[row] = intern_directory(std::string_view(f.path).substr(0, name_at));
    transform_[row] = transform;
    if (f.where.empty() || (where_of_ && where_of_(row) == f.where)) {
        if (!where_.empty()) where_.erase(row);
    } else {
        where_[row] = f.where;
    }
    store_box(row, f.start, f.count);
}

void FragmentTable::set_rank(size_t rank) {
    if (rank_known_ && rank != rank_) throw std::invalid_argument("partition table: rank already set");
    if (!empty() && !rank_known_ && rank != 0) throw std::invalid_argument("partition table: rank set after rows");
    rank_ = rank, rank_known_ = true;
}

void FragmentTable::push_back(const Fragment& f) { push_back(f, intern_transform(f)); }

void FragmentTable::push_back(const Fragment& f, uint32_t transform) {
    if (!rank_known_ && !f.start.empty()) set_rank(f.start.size());
    const size_t row = size();
    kind_.push_back(0);
    directory_.push_back(0);
    transform_.push_back(0);
    const size_t slash = f.path.rfind('/');
    names_.append(f.path, slash == std::string::npos ? 0 : slash + 1);
    name_end_.push_back(names_.size());
    wide_ ? box64_.resize(box64_.size() + 2 * rank_) : box32_.resize(box32_.size() + 2 * rank_);
    store_row(row, f, transform);
}

void FragmentTable::set(size_t row, const Fragment& f) {
    if (row >= size()) throw std::out_of_range("partition " + std::to_string(row) + " of " + std::to_string(size()));
    const size_t slash = f.path.rfind('/');
    const std::string_view name = std::string_view(f.path).substr(slash == std::string::npos ? 0 : slash + 1);
    const uint64_t begin = row ? name_end_[row - 1] : 0;
    if (std::string_view(names_).substr(begin, name_end_[row] - begin) != name)
        throw std::invalid_argument("partition table: a partition's file name cannot change");
    store_row(row, f, intern_transform(f));
}

void FragmentTable::set_box(size_t row, std::span<const uint64_t> start, std::span<const uint64_t> count) {
    store_box(row, start, count);
}

void FragmentTable::rewrite_transforms(const std::function<void(Fragment&)>& edit) {
    transform_ids_.clear();
    for (size_t k = 0; k < transforms_.size(); ++k) {
        edit(transforms_[k].fields);
        transform_ids_.try_emplace(transform_key(transforms_[k].fields, transforms_[k].declared_shape_is_count),
                                   static_cast<uint32_t>(k));
    }
}

std::string FragmentTable::path(size_t row) const {
    const uint64_t begin = row ? name_end_[row - 1] : 0;
    return directories_[directory_[row]] + names_.substr(begin, name_end_[row] - begin);
}

bool FragmentTable::path_is(size_t row, std::string_view path) const {
    const uint64_t begin = row ? name_end_[row - 1] : 0;
    const std::string& directory = directories_[directory_[row]];
    return path.size() == directory.size() + (name_end_[row] - begin) && path.starts_with(directory) &&
           path.substr(directory.size()) == std::string_view(names_).substr(begin, name_end_[row] - begin);
}

bool FragmentTable::same_paths(const FragmentTable& other) const {
    if (kind_ != other.kind_ || name_end_ != other.name_end_ || names_ != other.names_) return false;
    if (directory_ == other.directory_ && directories_ == other.directories_) return true;
    for (size_t row = 0; row < size(); ++row)  // the same directories under other numbers
        if (directories_[directory_[row]] != other.directories_[other.directory_[row]]) return false;
    return true;
}

std::string FragmentTable::where(size_t row) const {
    if (auto it = where_.find(row); it != where_.end()) return it->second;
    return where_of_ ? where_of_(row) : std::string();
}

uint64_t FragmentTable::element_count(size_t row) const {
    std::vector<uint64_t> counts(rank_);
    for (size_t d = 0; d < rank_; ++d) counts[d] = count(row, d);
    return ncafs::element_count(counts);  // as Fragment::element_count
}

Fragment FragmentTable::operator[](size_t row) const {
    const Transform& t = transforms_[transform_[row]];
    Fragment f = t.fields;
    f.kind = kind(row);
    f.path = path(row);
    f.where = where(row);
    f.start.resize(rank_), f.count.resize(rank_);
    for (size_t d = 0; d < rank_; ++d) f.start[d] = start(row, d), f.count[d] = count(row, d);
    if (t.declared_shape_is_count) f.declared_shape = f.count;
    return f;
}

Fragment FragmentTable::at(size_t row) const {
    if (row >= size()) throw std::out_of_range("partition " + std::to_string(row) + " of " + std::to_string(size()));
    return (*this)[row];
}

size_t FragmentTable::memory_bytes() const {
    size_t n = box32_.capacity() * 4 + box64_.capacity() * 8 + kind_.capacity() + directory_.capacity() * 4 +
               name_end_.capacity() * 8 + names_.capacity() + transform_.capacity() * 4;
    for (const auto& d : directories_) n += d.capacity() + 64;
    n += transforms_.size() * (sizeof(Transform) + 64) + where_.size() * 96;
    return n;
}

}  // namespace ncafs::agg
