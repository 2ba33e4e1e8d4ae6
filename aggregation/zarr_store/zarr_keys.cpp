#include "aggregation/zarr_store/zarr_keys.hpp"

#include "codecs/error.hpp"
#include "codecs/json_depth.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::agg {

std::string key_refusal(const std::string& key) {
    if (key.empty()) return "an empty key";
    if (key.front() == '/') return "an absolute key";
    if (key.find('\0') != std::string::npos) return "a key holding a NUL byte";
    size_t begin = 0;
    while (true) {
        const size_t slash = key.find('/', begin);
        const std::string c = key.substr(begin, slash == std::string::npos ? std::string::npos : slash - begin);
        if (c.empty() || c == "." || c == "..")
            return "a key with an empty, \".\" or \"..\" component: it could name a file outside the store";
        if (slash == std::string::npos) return "";
        begin = slash + 1;
    }
}

nlohmann::json parse_metadata_json(const std::string& text, const std::string& what) {
    if (json_too_deep_at(text))
        throw std::runtime_error(what + ": nested deeper than " + std::to_string(kMaxJsonDepth));
    charge_parsed_json(text, "zarr.json");
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error(what + " is not a JSON object");
    return j;
}

std::optional<std::string> read_whole(const std::shared_ptr<const OpenFile>& file, uint64_t max_bytes) {
    if (!file) return std::nullopt;
    if (file->size() > max_bytes)
        throw SourceError(file->path(), std::to_string(file->size()) + " bytes of metadata exceed the bound of " +
                                            std::to_string(max_bytes));
    std::string text(file->size(), '\0');
    if (!text.empty()) file->pread_exact(text.data(), text.size(), 0);
    return text;
}

std::optional<std::string> ZarrKeys::read(const std::string& key, uint64_t max_bytes) const {
    return read_whole(open(key), max_bytes);
}

}  // namespace ncafs::agg
