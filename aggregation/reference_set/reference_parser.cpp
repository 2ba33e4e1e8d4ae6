#include "aggregation/reference_set/reference_parser.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "aggregation/json/streamed_json.hpp"
#include "codecs/json_depth.hpp"
#include "codecs/zarr/base64.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::agg {

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

// A URL, templates expanded: longer is no URL (PATH_MAX is 4096).
constexpr size_t kMaxUrlBytes = 64 << 10;

// Position just past `"key"` and the blanks and ':' after it, or npos.
size_t after_key(std::string_view text, std::string_view quoted_key) {
    for (size_t at = text.find(quoted_key); at != std::string_view::npos; at = text.find(quoted_key, at + 1)) {
        size_t i = at + quoted_key.size();
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
        if (i < text.size() && text[i] == ':') return i + 1;
    }
    return std::string_view::npos;
}

bool has_array_key(std::string_view text) {
    for (size_t at = text.find("/.zarray\""); at != std::string_view::npos; at = text.find("/.zarray\"", at + 1))
        if (after_key(text.substr(at), "/.zarray\"") != std::string_view::npos) return true;
    return false;
}

// "{{name}}" in url replaced by the template's text.
std::string expand_templates(const std::string& url, const json& templates) {
    std::string out;
    size_t at = 0;
    while (true) {
        const size_t open = url.find("{{", at);
        if (open == std::string::npos) break;
        const size_t close = url.find("}}", open + 2);
        if (close == std::string::npos) fail("URL \"" + url + "\": \"{{\" without \"}}\"");
        std::string name = url.substr(open + 2, close - open - 2);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (!templates.is_object() || !templates.contains(name) || !templates[name].is_string())
            fail("URL \"" + url + "\" names the template \"" + name + "\", which templates does not define as a text");
        out += url.substr(at, open - at) + templates[name].get<std::string>();
        if (out.size() > kMaxUrlBytes)  // many long templates in one URL: an amplification
            fail("URL \"" + url.substr(0, 200) + "...\" expands to more than " + std::to_string(kMaxUrlBytes) + " bytes");
        at = close + 2;
    }
    return out + url.substr(at);
}

uint64_t byte_count(const json& v, const std::string& key, const char* what) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        fail("refs[\"" + key + "\"]: " + what + " " + v.dump() + " is not a byte count");
    return v.get<uint64_t>();
}

struct Builder {
    ReferenceSet set;
    std::unordered_map<std::string, uint32_t> url_index;
    const json* templates;

    uint32_t intern(const std::string& url) {
        auto [it, added] = url_index.emplace(url, static_cast<uint32_t>(set.urls.size()));
        if (added) set.urls.push_back(url);
        return it->second;
    }

    // Takes the text of an inline value out of v.
    Reference reference(const std::string& key, json& v) {
        Reference r;
        if (v.is_string()) {
            std::string& s = v.get_ref<std::string&>();
            if (s.rfind("base64:", 0) == 0) {
                auto bytes = zarr::base64_decode(std::string_view(s).substr(7));
                if (!bytes) fail("refs[\"" + key + "\"]: bad base64 text");
                r.data.assign(bytes->begin(), bytes->end());
            } else {
                r.data = std::move(s);
            }
            return r;
        }
        if (!v.is_array() || (v.size() != 1 && v.size() != 3) || !v[0].is_string())
            fail("refs[\"" + key + "\"] is neither a text, [url] nor [url, offset, length]");
        const std::string url = expand_templates(v[0].get<std::string>(), *templates);
        if (url.empty()) fail("refs[\"" + key + "\"]: empty URL");
        r.url = intern(url);
        r.kind = Reference::Kind::Whole;
        if (v.size() == 3) {
            r.kind = Reference::Kind::Range;
            r.offset = byte_count(v[1], key, "offset");
            r.length = byte_count(v[2], key, "length");
        }
        return r;
    }
};

// Keys "NAME/.zarray" (NAME without '/': an array at the top of the store)
// in the raw text: a key's closing quote is never escaped (a '"' inside a
// string always is), so each match followed by ':' is a key. Counted before
// the text is parsed: a set declaring too many arrays costs one scan.
uint64_t count_top_array_keys(std::string_view text) {
    constexpr std::string_view suffix = "/.zarray\"";
    uint64_t n = 0;
    for (size_t at = text.find(suffix); at != std::string_view::npos; at = text.find(suffix, at + 1)) {
        size_t i = at + suffix.size();
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
        if (i == text.size() || text[i] != ':' || at == 0) continue;
        const size_t open = text.rfind('"', at - 1);
        if (open != std::string_view::npos && open + 1 < at && text.substr(open + 1, at - open - 1).find('/') == std::string_view::npos)
            ++n;
    }
    return n;
}

// What the set will hold, counted before it is built: per key its text, an
// entry of the table and its inline bytes (decoded base64 is shorter than its text).
void charge_references(const json& refs) {
    constexpr uint64_t kEntryBytes = sizeof(Reference) + 64;  // the hash table's node and bucket
    uint64_t text = 0;
    for (auto it = refs.begin(); it != refs.end(); ++it)
        text += it.key().size() + (it->is_string() ? it->get_ref<const std::string&>().size() : 0);
    charge_metadata(refs.size(), kEntryBytes, "references");
    charge_metadata(text, 1, "bytes of keys and inline values");
}

json parse_text(std::string_view text, size_t allocated, uint64_t& gen_entries) {
    if (auto deep = json_too_deep_at(text))
        fail("at character " + std::to_string(*deep) + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    // "gen" is the one list not built into the tree: only counted (refused below).
    StreamCallbacks callbacks{[](const json&) {}, [](uint64_t, FlatJson::Ref) {}};
    StreamedList gen;
    try {
        auto root = parse_json_streaming_simdjson(text, allocated, "gen", callbacks, gen);
        if (!root) {
            gen = StreamedList{};
            root = parse_json_streaming(text, "gen", callbacks, gen);
        }
        gen_entries = gen.count;
        return std::move(*root);
    } catch (const json::exception& e) {
        fail(std::string("not JSON: ") + e.what());
    }
}

}  // namespace

bool looks_like_reference_set(std::span<const uint8_t> first_bytes) {
    const std::string_view text(reinterpret_cast<const char*>(first_bytes.data()), first_bytes.size());
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || text[first] != '{') return false;
    if (after_key(text, "\"refs\"") != std::string_view::npos && after_key(text, "\"version\"") != std::string_view::npos)
        return true;
    return after_key(text, "\".zgroup\"") != std::string_view::npos ||
           after_key(text, "\".zattrs\"") != std::string_view::npos || has_array_key(text);
}

ReferenceSet parse_reference_set(std::string_view text, size_t allocated, uint64_t max_refs) {
    // Each array shown costs kArrayCost, its views included; the parsed tree about twice the text.
    charge_metadata(count_top_array_keys(text), kArrayCost, "arrays");
    charge_metadata(text.size(), 2, "bytes of JSON, parsed");
    uint64_t gen_entries = 0;
    json root = parse_text(text, allocated, gen_entries);
    if (!root.is_object()) fail("not a JSON object");
    Builder b;
    static const json no_templates = json::object();
    b.templates = &no_templates;
    json* refs = &root;
    if (root.contains("version")) {
        if (root["version"] != 1) fail("version " + root["version"].dump() + " is not 1 (nor version 0, which has no \"version\")");
        if (gen_entries > 0 || (root.contains("gen") && !root["gen"].is_array()))
            fail("\"gen\" (keys generated from ranges) is not supported: write the keys out in refs");
        if (!root.contains("refs") || !root["refs"].is_object()) fail("version 1 without a \"refs\" object");
        if (root.contains("templates")) b.templates = &root.at("templates");
        refs = &root.at("refs");
        b.set.version = 1;
    } else {
        b.set.version = 0;
    }
    if (refs->size() > max_refs)
        fail(std::to_string(refs->size()) + " references exceed the limit max_fragments=" + std::to_string(max_refs));
    charge_references(*refs);
    b.set.refs.reserve(refs->size());
    // Each entry leaves the tree as it enters the set: the two are never whole at once.
    for (auto it = refs->begin(); it != refs->end(); it = refs->erase(it)) {
        b.set.refs.emplace(it.key(), b.reference(it.key(), *it));
    }
    return std::move(b.set);
}

}  // namespace ncafs::agg
