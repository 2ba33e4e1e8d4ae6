#include "aggregation/json/flat_json.hpp"

#include <algorithm>

namespace ncafs::agg {

using nlohmann::json;

void FlatJson::clear() {
    nodes_.clear();  // capacity kept: the next value reuses it
    arena_.clear();
    open_.clear();
    key_at_ = key_len_ = 0;
}

void FlatJson::key(std::string_view k) {
    key_at_ = arena_.size();
    key_len_ = k.size();
    arena_.append(k);
}

FlatJson::Node& FlatJson::push(Kind kind) {
    Node& n = nodes_.emplace_back();
    n.kind = kind;
    n.end = nodes_.size();
    if (!open_.empty()) {
        Node& parent = nodes_[open_.back()];
        ++parent.size;
        if (parent.kind == Kind::Object) n.key_at = key_at_, n.key_len = key_len_;
    }
    return n;
}

void FlatJson::string(std::string_view v) {
    Node& n = push(Kind::String);
    n.text_at = arena_.size();
    n.text_len = v.size();
    arena_.append(v);
}

void FlatJson::open(Kind container) {
    push(container);
    open_.push_back(nodes_.size() - 1);
}

void FlatJson::close() {
    nodes_[open_.back()].end = nodes_.size();
    open_.pop_back();
}

namespace {

void feed(FlatJson& out, const json& v) {
    switch (v.type()) {
        case json::value_t::object:
            out.open(FlatJson::Kind::Object);
            for (auto it = v.begin(); it != v.end(); ++it) {
                out.key(it.key());
                feed(out, *it);
            }
            return out.close();
        case json::value_t::array:
            out.open(FlatJson::Kind::Array);
            for (const auto& e : v) feed(out, e);
            return out.close();
        case json::value_t::string:
            return out.string(v.get_ref<const std::string&>());
        case json::value_t::boolean:
            return out.boolean(v.get<bool>());
        case json::value_t::number_integer:
            return out.integer(v.get<int64_t>());
        case json::value_t::number_unsigned:
            return out.unsigned_integer(v.get<uint64_t>());
        case json::value_t::number_float:
            return out.floating(v.get<double>());
        default:
            return out.null();  // null, and binary (never parsed from text)
    }
}

}  // namespace

void FlatJson::assign(const json& value) {
    clear();
    feed(*this, value);
}

FlatJson::Ref FlatJson::root() const { return nodes_.empty() ? Ref() : Ref(this, 0); }

int64_t FlatJson::Ref::get_int64() const {
    const Node& n = node();
    return n.kind == Kind::Float ? static_cast<int64_t>(n.number.d) : n.number.i;  // unsigned: as cast
}

uint64_t FlatJson::Ref::get_uint64() const {
    const Node& n = node();
    return n.kind == Kind::Float ? static_cast<uint64_t>(n.number.d) : n.number.u;  // signed: as cast
}

double FlatJson::Ref::get_double() const {
    const Node& n = node();
    if (n.kind == Kind::Integer) return static_cast<double>(n.number.i);
    if (n.kind == Kind::Unsigned) return static_cast<double>(n.number.u);
    return n.number.d;
}

std::string_view FlatJson::Ref::str() const {
    const Node& n = node();
    return std::string_view(json_->arena_).substr(n.text_at, n.text_len);
}

std::string_view FlatJson::Ref::key() const {
    const Node& n = node();
    return std::string_view(json_->arena_).substr(n.key_at, n.key_len);
}

FlatJson::Ref FlatJson::Ref::find(std::string_view k) const {
    if (!is_object()) return {};
    Ref found;
    for (Ref member : *this)
        if (member.key() == k) found = member;
    return found;
}

std::vector<FlatJson::Ref> FlatJson::Ref::sorted_members() const {
    std::vector<Ref> out;
    for (Ref member : *this) out.push_back(member);
    std::stable_sort(out.begin(), out.end(), [](const Ref& a, const Ref& b) { return a.key() < b.key(); });
    // Of a repeated key, the last in the text (stable sort keeps text order within a key).
    std::vector<Ref> unique;
    for (size_t i = 0; i < out.size(); ++i)
        if (i + 1 == out.size() || out[i + 1].key() != out[i].key()) unique.push_back(out[i]);
    return unique;
}

json FlatJson::Ref::to_json() const {
    switch (kind()) {
        case Kind::Null:
            return nullptr;
        case Kind::Boolean:
            return get_bool();
        case Kind::Integer:
            return node().number.i;
        case Kind::Unsigned:
            return node().number.u;
        case Kind::Float:
            return node().number.d;
        case Kind::String:
            return std::string(str());
        case Kind::Array: {
            json out = json::array();
            for (Ref e : *this) out.push_back(e.to_json());
            return out;
        }
        case Kind::Object: {
            json out = json::object();
            for (Ref m : *this) out[std::string(m.key())] = m.to_json();  // a repeated key: the last wins
            return out;
        }
    }
    return nullptr;
}

}  // namespace ncafs::agg
