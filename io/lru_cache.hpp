// A bounded least-recently-used map: get() refreshes an entry, put() inserts
// or replaces and then evicts the least recently used entries while the
// total weight exceeds the capacity. The weight of an entry is Weigh(value):
// 1 by default (the capacity counts entries); ByteWeight makes it the size
// of a shared byte buffer (the capacity counts bytes). Not thread-safe: the
// owner holds its own lock. Values are returned by copy (shared_ptr values
// share, they are not duplicated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>

namespace ncafs {

struct UnitWeight {
    template <typename Value>
    size_t operator()(const Value&) const {
        return 1;
    }
};

// For values that are shared_ptr to a container of bytes.
struct ByteWeight {
    template <typename Buffer>
    size_t operator()(const Buffer& b) const {
        return b ? b->size() : 0;
    }
};

template <typename Key, typename Value, typename Hash = std::hash<Key>, typename Weigh = UnitWeight>
class LruCache {
public:
    explicit LruCache(size_t capacity = 0) : capacity_(capacity) {}

    // Drops the least recently used entries beyond the new bound.
    void set_capacity(size_t capacity) {
        capacity_ = capacity;
        trim();
    }
    size_t capacity() const { return capacity_; }
    size_t size() const { return order_.size(); }
    size_t weight() const { return weight_; }  // == size() with UnitWeight
    bool contains(const Key& key) const { return index_.count(key) != 0; }

    std::optional<Value> get(const Key& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
    }

    // An entry heavier than the whole capacity evicts everything, itself
    // included: callers that mind check weight against capacity() first.
    void put(const Key& key, Value value) {
        auto it = index_.find(key);
        if (it != index_.end()) {
            weight_ -= Weigh{}(it->second->second);
            weight_ += Weigh{}(value);
            it->second->second = std::move(value);
            order_.splice(order_.begin(), order_, it->second);
        } else {
            weight_ += Weigh{}(value);
            order_.emplace_front(key, std::move(value));
            index_.emplace(key, order_.begin());
        }
        trim();
    }

    // Drops every entry for which pred(key, value) holds; returns how many.
    template <typename Pred>
    size_t erase_if(Pred pred) {
        size_t dropped = 0;
        for (auto it = order_.begin(); it != order_.end();) {
            if (pred(it->first, it->second)) {
                weight_ -= Weigh{}(it->second);
                index_.erase(it->first);
                it = order_.erase(it);
                ++dropped;
            } else {
                ++it;
            }
        }
        return dropped;
    }

    // Removes the least recently used entry and returns its value (so that
    // a caller can destroy it after releasing its lock).
    std::optional<Value> pop_least_recent() {
        if (order_.empty()) return std::nullopt;
        Value v = std::move(order_.back().second);
        weight_ -= Weigh{}(v);
        index_.erase(order_.back().first);
        order_.pop_back();
        return v;
    }

    // Removes the least recently used entry for which pred(key, value)
    // holds and returns its value; nullopt when none does.
    template <typename Pred>
    std::optional<Value> pop_least_recent_if(Pred pred) {
        for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
            if (!pred(it->first, it->second)) continue;
            auto entry = std::next(it).base();
            weight_ -= Weigh{}(entry->second);
            Value v = std::move(entry->second);
            index_.erase(entry->first);
            order_.erase(entry);
            return v;
        }
        return std::nullopt;
    }

    void clear() {
        index_.clear();
        order_.clear();
        weight_ = 0;
    }

private:
    void trim() {
        while (weight_ > capacity_ && !order_.empty()) {
            weight_ -= Weigh{}(order_.back().second);
            index_.erase(order_.back().first);
            order_.pop_back();
        }
    }

    using Entry = std::pair<Key, Value>;
    size_t capacity_;
    size_t weight_ = 0;
    std::list<Entry> order_;  // most recent first
    std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index_;
};

}  // namespace ncafs
