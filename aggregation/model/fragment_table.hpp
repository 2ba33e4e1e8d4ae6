// The partitions of one aggregated variable, stored column-wise so that a
// million of them fit in under 60 bytes each (tests/aggregation/fragment_table_test.cpp):
// per partition only what differs from its neighbours is kept (its box in
// 32-bit columns while every value fits, widened to 64 bits otherwise, its
// kind, its file name in one arena, its directory and its transform in small
// interned tables, referenced by 32-bit indices). operator[] materialises a
// Fragment on demand, so callers that read one partition at a time keep
// their code; loops over many partitions use the column accessors (box,
// kind, path) which allocate nothing but the path string.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "aggregation/model/fragment.hpp"

namespace ncafs::agg {

class FragmentTable {
public:
    // Rebuilds a partition's `where` from its row number; rows whose where
    // matches it store none of their own (set by the parser before push_back).
    // Copied with the table: it must capture by value, never the parser.
    using WhereOf = std::function<std::string(size_t row)>;

    size_t size() const { return kind_.size(); }
    bool empty() const { return kind_.empty(); }
    void reserve(size_t n);
    void set_where_of(WhereOf f) { where_of_ = std::move(f); }
    // Rank of every box; fixed by the first push_back of a non-empty box
    // unless set first (needed when boxes are placed later with set_box).
    void set_rank(size_t rank);

    // Appends a partition. Its box (start/count) may be empty (placed later
    // with set_box); otherwise every partition's box has the same rank. An
    // empty `where` stands for where_of's.
    // Throws std::invalid_argument when the rank differs from earlier rows.
    void push_back(const Fragment& f);
    // The same for a partition whose transform (everything but box, kind,
    // path and where) is `transform`, an id transform_id gave for an equal
    // transform: loops over many partitions that share one build no key.
    void push_back(const Fragment& f, uint32_t transform);
    uint32_t transform_id(const Fragment& f) { return intern_transform(f); }
    // Replaces the partition in `row` (its box included).
    void set(size_t row, const Fragment& f);
    void set_box(size_t row, std::span<const uint64_t> start, std::span<const uint64_t> count);
    // Applies `edit` once to each distinct transform (variable, group, units...),
    // for every partition that shares it; box, kind, path and where untouched.
    void rewrite_transforms(const std::function<void(Fragment&)>& edit);

    // A Fragment for one partition, built on demand.
    Fragment operator[](size_t row) const;
    Fragment at(size_t row) const;  // throws std::out_of_range

    // Column accessors: no Fragment built.
    size_t rank() const { return rank_; }
    uint64_t start(size_t row, size_t d) const { return box_value(row * 2 * rank_ + d); }
    uint64_t count(size_t row, size_t d) const { return box_value(row * 2 * rank_ + rank_ + d); }
    uint64_t element_count(size_t row) const;  // product of the box's counts
    FragmentKind kind(size_t row) const { return static_cast<FragmentKind>(kind_[row]); }
    std::string path(size_t row) const;
    bool path_is(size_t row, std::string_view path) const;  // path(row) == path, nothing allocated
    // Every row has the kind and path of other's row of the same number
    // (the variables of one CF-1.13 file, fragment by fragment): compared
    // column by column, no path built.
    bool same_paths(const FragmentTable& other) const;
    std::string where(size_t row) const;

    // Bytes held by the table (capacity), for tests and the scaling benchmark.
    size_t memory_bytes() const;

    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = Fragment;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = Fragment;
        iterator(const FragmentTable* t, size_t row) : t_(t), row_(row) {}
        Fragment operator*() const { return (*t_)[row_]; }
        iterator& operator++() { return ++row_, *this; }
        bool operator==(const iterator& o) const { return row_ == o.row_; }
        bool operator!=(const iterator& o) const { return row_ != o.row_; }

    private:
        const FragmentTable* t_;
        size_t row_;
    };
    iterator begin() const { return {this, 0}; }
    iterator end() const { return {this, size()}; }

private:
    uint64_t box_value(size_t k) const { return wide_ ? box64_[k] : box32_[k]; }
    void put_box_value(size_t k, uint64_t v);
    void widen();
    void store_box(size_t row, std::span<const uint64_t> start, std::span<const uint64_t> count);
    uint32_t intern_directory(std::string_view dir);
    uint32_t intern_transform(const Fragment& f);
    void store_row(size_t row, const Fragment& f, uint32_t transform);

    size_t rank_ = 0;
    bool rank_known_ = false;
    bool wide_ = false;
    std::vector<uint32_t> box32_;  // per row: start[rank] then count[rank]
    std::vector<uint64_t> box64_;  // the same once a value needs 64 bits
    std::vector<uint8_t> kind_;
    std::vector<uint32_t> directory_;  // index into directories_
    std::vector<uint64_t> name_end_;   // end of the row's file name in names_
    std::string names_;                // file names (after the last '/'), back to back
    std::vector<uint32_t> transform_;  // index into transforms_
    std::vector<std::string> directories_;
    std::unordered_map<std::string, uint32_t> directory_ids_;
    uint32_t last_directory_ = 0;
    // Everything but box, kind, path and where, deduplicated. A declared
    // shape equal to the box's counts is stored as the flag below instead.
    struct Transform {
        Fragment fields;
        bool declared_shape_is_count = false;
    };
    std::vector<Transform> transforms_;
    std::unordered_map<std::string, uint32_t> transform_ids_;
    std::unordered_map<size_t, std::string> where_;  // rows whose where where_of_ does not give
    WhereOf where_of_;
};

}  // namespace ncafs::agg
