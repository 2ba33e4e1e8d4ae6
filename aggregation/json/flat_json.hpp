// One JSON value kept flat: its nodes in document order in one vector and
// its strings in one arena, both reused from one value to the next. The
// streamed Partitions list (streamed_json.hpp) hands each partition over as
// one, so a million partitions cost no tree and no allocation each (docs/performance.md,
// "Many partitions"). Objects keep their members
// in text order, repeats included; find() gives the last of a repeated key
// and sorted_members() the order and choice of nlohmann::json's parse.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ncafs::agg {

class FlatJson {
public:
    enum class Kind : uint8_t { Null, Boolean, Integer, Unsigned, Float, String, Array, Object };
    class Ref;

    // Building, in document order: an object member's key just before its
    // value, a container's contents between open and close.
    void clear();
    void key(std::string_view k);
    void null() { push(Kind::Null); }
    void boolean(bool v) { push(Kind::Boolean).number.u = v; }
    void integer(int64_t v) { push(Kind::Integer).number.i = v; }
    void unsigned_integer(uint64_t v) { push(Kind::Unsigned).number.u = v; }
    void floating(double v) { push(Kind::Float).number.d = v; }
    void string(std::string_view v);
    void open(Kind container);  // Array or Object
    void close();
    size_t depth() const { return open_.size(); }  // containers open
    // Replaces the contents with a copy of `value`.
    void assign(const nlohmann::json& value);

    Ref root() const;  // the first value (absent when empty)

private:
    friend class Ref;
    struct Node {
        Kind kind = Kind::Null;
        size_t end = 0;   // one past the last node inside it
        size_t size = 0;  // members or elements
        size_t key_at = 0, key_len = 0;
        size_t text_at = 0, text_len = 0;
        union {
            int64_t i;
            uint64_t u;
            double d;
        } number{};
    };
    Node& push(Kind kind);
    std::vector<Node> nodes_;
    std::string arena_;
    std::vector<size_t> open_;  // the open containers, innermost last
    size_t key_at_ = 0, key_len_ = 0;
};

// One node of a FlatJson (or none: "absent"); valid while the FlatJson is unchanged.
class FlatJson::Ref {
public:
    Ref() = default;
    explicit operator bool() const { return json_ != nullptr; }

    Kind kind() const { return node().kind; }
    bool is_null() const { return kind() == Kind::Null; }
    bool is_boolean() const { return kind() == Kind::Boolean; }
    bool is_number_integer() const { return kind() == Kind::Integer || kind() == Kind::Unsigned; }
    bool is_number_unsigned() const { return kind() == Kind::Unsigned; }
    bool is_number_float() const { return kind() == Kind::Float; }
    bool is_string() const { return kind() == Kind::String; }
    bool is_array() const { return kind() == Kind::Array; }
    bool is_object() const { return kind() == Kind::Object; }

    // As nlohmann::json's get<T>() of a value of the right kind (numbers convert as it casts them).
    bool get_bool() const { return node().number.u != 0; }
    int64_t get_int64() const;
    uint64_t get_uint64() const;
    double get_double() const;
    std::string_view str() const;  // a string's value
    std::string_view key() const;  // the key of an object member

    size_t size() const { return node().size; }  // members or elements
    Ref find(std::string_view key) const;       // the last member with that key, or absent
    bool contains(std::string_view key) const { return static_cast<bool>(find(key)); }
    // Members by key, each key once (its last value): nlohmann::json's order.
    std::vector<Ref> sorted_members() const;

    // Members or elements in text order.
    class iterator {
    public:
        iterator(const FlatJson* j, size_t at) : json_(j), at_(at) {}
        Ref operator*() const { return Ref(json_, at_); }
        iterator& operator++() { return at_ = json_->nodes_[at_].end, *this; }
        bool operator!=(const iterator& o) const { return at_ != o.at_; }

    private:
        const FlatJson* json_;
        size_t at_;
    };
    iterator begin() const { return {json_, at_ + 1}; }
    iterator end() const { return {json_, node().end}; }

    nlohmann::json to_json() const;
    std::string dump() const { return to_json().dump(); }  // nlohmann's text, for messages

private:
    friend class FlatJson;
    Ref(const FlatJson* j, size_t at) : json_(j), at_(at) {}
    const Node& node() const { return json_->nodes_[at_]; }
    const FlatJson* json_ = nullptr;
    size_t at_ = 0;
};

}  // namespace ncafs::agg
