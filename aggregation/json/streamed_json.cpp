#include "aggregation/json/streamed_json.hpp"

#include <vector>

#include "aggregation/json/simdjson_sax_reader.hpp"

namespace ncafs::agg {

using nlohmann::json;

namespace {

// nlohmann's DOM builder (json_sax_dom_parser), except that the values of
// the streamed list are built flat in `element_` and handed on one by one.
class StreamingBuilder {
public:
    StreamingBuilder(const std::string& list_key, const StreamCallbacks& callbacks, StreamedList& list)
        : list_key_(list_key), callbacks_(callbacks), list_(list) {}

    json take_root() { return std::move(root_); }

    bool null() { return in_element() ? (element_.null(), scalar()) : value(nullptr); }
    bool boolean(bool v) { return in_element() ? (element_.boolean(v), scalar()) : value(v); }
    bool number_integer(json::number_integer_t v) { return in_element() ? (element_.integer(v), scalar()) : value(v); }
    bool number_unsigned(json::number_unsigned_t v) {
        return in_element() ? (element_.unsigned_integer(v), scalar()) : value(v);
    }
    bool number_float(json::number_float_t v, const std::string&) {
        return in_element() ? (element_.floating(v), scalar()) : value(v);
    }
    bool string(json::string_t& v) { return in_element() ? (element_.string(v), scalar()) : value(std::move(v)); }
    bool binary(json::binary_t& v) { return value(std::move(v)); }  // never from text
    bool key(json::string_t& k) {
        if (element_.depth() > 0) return element_.key(k), true;
        key_ = std::move(k);
        return true;
    }
    bool start_object(std::size_t) {
        if (in_element()) return element_.open(FlatJson::Kind::Object), true;
        return open(json::object());
    }
    bool start_array(std::size_t) {
        if (in_element()) return element_.open(FlatJson::Kind::Array), true;
        if (!in_list_ && stack_.size() == 1 && stack_.back() == &root_ && key_ == list_key_) {
            list_.repeated = list_.seen;
            list_.seen = true;
            in_list_ = true;
            root_[key_] = json::array();  // the elements never land here
            if (callbacks_.on_start) callbacks_.on_start(root_);
            return true;
        }
        return open(json::array());
    }
    bool end_object() { return in_element() ? close_flat() : close(); }
    bool end_array() {
        if (element_.depth() > 0) return close_flat();
        if (in_list_ && stack_.size() == 1) {  // the streamed list itself ends
            in_list_ = false;
            return true;
        }
        return close();
    }
    template <class Exception>
    bool parse_error(std::size_t, const std::string&, const Exception& ex) {
        throw ex;
    }

private:
    // A value of the streamed list (or inside one) arrives.
    bool in_element() {
        if (element_.depth() > 0) return true;
        if (!(in_list_ && stack_.size() == 1)) return false;
        element_.clear();  // a new element starts
        return true;
    }
    bool scalar() {
        if (element_.depth() == 0) emit();  // the element was this scalar
        return true;
    }
    bool close_flat() {
        element_.close();
        if (element_.depth() == 0) emit();
        return true;
    }
    void emit() { callbacks_.on_element(list_.count++, element_.root()); }

    // Where a new tree value goes: the root, the open array, or the open object under key_.
    json* place(json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        json& top = *stack_.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return &top.back();
        }
        json& slot = top[key_];
        slot = std::move(v);
        return &slot;
    }
    bool value(json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(json&& container) {
        stack_.push_back(place(std::move(container)));
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    const std::string& list_key_;
    const StreamCallbacks& callbacks_;
    StreamedList& list_;
    json root_;
    FlatJson element_;
    std::vector<json*> stack_;  // open tree containers, innermost last
    std::string key_;
    bool in_list_ = false;
};

}  // namespace

std::optional<json> parse_json_streaming_simdjson(std::string_view text, size_t allocated, const std::string& list_key,
                                                  const StreamCallbacks& callbacks, StreamedList& list) {
    list = StreamedList{};
    StreamingBuilder builder(list_key, callbacks, list);
    SimdjsonSaxReader<StreamingBuilder> reader(text, allocated, builder);
    if (!reader.read()) return std::nullopt;
    return builder.take_root();
}

json parse_json_streaming(std::string_view text, const std::string& list_key, const StreamCallbacks& callbacks,
                          StreamedList& list) {
    list = StreamedList{};
    StreamingBuilder builder(list_key, callbacks, list);
    json::sax_parse(text.begin(), text.end(), &builder);
    return builder.take_root();
}

}  // namespace ncafs::agg
