// A bounded least-recently-used map: get() refreshes an entry, put() inserts
// or replaces and then evicts the least recently used entries beyond the
// capacity. Not thread-safe: the owner holds its own lock. Values are
// returned by copy (shared_ptr values share, they are not duplicated).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>

namespace ncafs {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
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

    std::optional<Value> get(const Key& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
    }

    void put(const Key& key, Value value) {
        auto it = index_.find(key);
        if (it != index_.end()) {
            it->second->second = std::move(value);
            order_.splice(order_.begin(), order_, it->second);
            return;
        }
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
        trim();
    }

    // Drops every entry for which pred(key, value) holds; returns how many.
    template <typename Pred>
    size_t erase_if(Pred pred) {
        size_t dropped = 0;
        for (auto it = order_.begin(); it != order_.end();) {
            if (pred(it->first, it->second)) {
                index_.erase(it->first);
                it = order_.erase(it);
                ++dropped;
            } else {
                ++it;
            }
        }
        return dropped;
    }

    void clear() {
        index_.clear();
        order_.clear();
    }

private:
    void trim() {
        while (order_.size() > capacity_) {
            index_.erase(order_.back().first);
            order_.pop_back();
        }
    }

    using Entry = std::pair<Key, Value>;
    size_t capacity_;
    std::list<Entry> order_;  // most recent first
    std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index_;
};

}  // namespace ncafs
