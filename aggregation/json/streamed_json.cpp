#include "aggregation/json/streamed_json.hpp"

#include <vector>

namespace ncafs::agg {

using nlohmann::json;

namespace {

// nlohmann's DOM builder (json_sax_dom_parser), except that the values of
// the streamed list are built in `element_` and handed on one by one.
class StreamingBuilder {
public:
    StreamingBuilder(const std::string& list_key, const StreamCallbacks& callbacks, StreamedList& list)
        : list_key_(list_key), callbacks_(callbacks), list_(list) {}

    json take_root() { return std::move(root_); }

    bool null() { return value(nullptr); }
    bool boolean(bool v) { return value(v); }
    bool number_integer(json::number_integer_t v) { return value(v); }
    bool number_unsigned(json::number_unsigned_t v) { return value(v); }
    bool number_float(json::number_float_t v, const std::string&) { return value(v); }
    bool string(json::string_t& v) { return value(std::move(v)); }
    bool binary(json::binary_t& v) { return value(std::move(v)); }
    bool key(json::string_t& k) {
        key_ = std::move(k);
        return true;
    }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) {
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
    bool end_object() { return close(); }
    bool end_array() {
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
    bool at_element() const { return in_list_ && stack_.size() == 1; }

    // Where a new value goes: the root, the open array, or the open object under key_.
    json* place(json&& v) {
        if (at_element()) {
            element_ = std::move(v);
            return &element_;
        }
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
    void emit() {
        callbacks_.on_element(list_.count++, element_);
        element_ = nullptr;
    }
    bool value(json&& v) {
        const bool element = at_element();
        place(std::move(v));
        if (element) emit();
        return true;
    }
    bool open(json&& container) {
        stack_.push_back(place(std::move(container)));
        return true;
    }
    bool close() {
        stack_.pop_back();
        if (at_element()) emit();
        return true;
    }

    const std::string& list_key_;
    const StreamCallbacks& callbacks_;
    StreamedList& list_;
    json root_;
    json element_;
    std::vector<json*> stack_;  // open containers, innermost last
    std::string key_;
    bool in_list_ = false;
};

}  // namespace

json parse_json_streaming(std::string_view text, const std::string& list_key, const StreamCallbacks& callbacks,
                          StreamedList& list) {
    list = StreamedList{};
    StreamingBuilder builder(list_key, callbacks, list);
    json::sax_parse(text.begin(), text.end(), &builder);
    return builder.take_root();
}

}  // namespace ncafs::agg
