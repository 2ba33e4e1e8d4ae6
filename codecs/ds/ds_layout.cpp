#include "codecs/ds/ds_layout.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/error.hpp"

namespace ncafs::ds {

namespace {

constexpr std::string_view kVersionLine = "ds-1.0\n";

uint64_t block_length(const DsLayoutVariable& v) { return v.block ? v.block->length() : 0; }

class DsLayoutFile : public VirtualFile {
public:
    DsLayoutFile(std::vector<DsLayoutVariable> variables, const Json& global_attributes)
        : variables_(std::move(variables)) {
        header_ = std::string(kVersionLine) + ds_header_json(variables_, global_attributes) + "\n";
        uint64_t at = header_.size();
        for (const auto& v : variables_) {
            starts_.push_back(at);
            at += block_length(v);
        }
        size_ = at;
    }

    uint64_t size() const override { return size_; }

    void read(uint64_t offset, std::span<uint8_t> out) const override {
        check_range(offset, out.size());
        uint64_t pos = offset;
        size_t done = 0;
        while (done < out.size()) {
            if (pos < header_.size()) {
                const size_t n = std::min<uint64_t>(header_.size() - pos, out.size() - done);
                std::memcpy(out.data() + done, header_.data() + pos, n);
                done += n, pos += n;
                continue;
            }
            const size_t i = block_at(pos);
            const uint64_t in_block = pos - starts_[i];
            const size_t n = std::min<uint64_t>(block_length(variables_[i]) - in_block, out.size() - done);
            variables_[i].block->read(in_block, out.subspan(done, n));
            done += n, pos += n;
        }
    }

    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        check_range(offset, length);
        std::vector<ViewPiece> result;
        uint64_t pos = offset;
        const uint64_t end = offset + length;
        auto add_computed = [&](uint64_t at, uint64_t n) {
            if (!result.empty() && !result.back().extent && !result.back().run &&
                result.back().offset + result.back().length == at)
                result.back().length += n;
            else
                result.push_back(ViewPiece{at, n, std::nullopt});
        };
        while (pos < end) {
            if (pos < header_.size()) {
                const uint64_t n = std::min<uint64_t>(header_.size() - pos, end - pos);
                add_computed(pos, n);
                pos += n;
                continue;
            }
            const size_t i = block_at(pos);
            const uint64_t in_block = pos - starts_[i];
            const uint64_t n = std::min<uint64_t>(block_length(variables_[i]) - in_block, end - pos);
            for (auto& p : variables_[i].block->pieces(in_block, n)) {
                p.offset += starts_[i];
                if (p.extent || p.run) result.push_back(p);
                else add_computed(p.offset, p.length);
            }
            pos += n;
        }
        return result;
    }

private:
    void check_range(uint64_t offset, uint64_t n) const {
        if (offset > size_ || n > size_ - offset)
            throw UsageError("ds view: read [" + std::to_string(offset) + ", +" + std::to_string(n) +
                             ") outside a file of " + std::to_string(size_) + " bytes");
    }
    // The block containing file offset pos (>= header size); skips empty blocks.
    size_t block_at(uint64_t pos) const {
        auto it = std::upper_bound(starts_.begin(), starts_.end(), pos);
        size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
        while (block_length(variables_[i]) == 0 || pos >= starts_[i] + block_length(variables_[i])) ++i;
        return i;
    }

    std::vector<DsLayoutVariable> variables_;
    std::string header_;
    std::vector<uint64_t> starts_;
    uint64_t size_ = 0;
};

// Python dict semantics: assignment to an existing key keeps its position.
void set_key(Json& object, const std::string& key, Json value) { object[key] = std::move(value); }

}  // namespace

std::string escape_ds_name(const std::string& name) {
    if (!name.empty() && (name[0] == '.' || name[0] == '\\')) return "\\" + name;
    return name;
}

std::string ds_header_json(const std::vector<DsLayoutVariable>& variables, const Json& global_attributes) {
    Json header = Json::object();
    // Appended without the ordered map's search for an equal key (linear:
    // quadratic over many variables); the escaped names are distinct.
    auto& members = header.get_ref<Json::object_t&>();
    members.reserve(variables.size() + 1);
    uint64_t offset = 0;
    for (const auto& v : variables) {
        Json meta = v.meta.is_object() ? v.meta : Json::object();
        Json size = nullptr;
        if (v.size) {
            size = Json::array();
            for (uint64_t d : *v.size) size.push_back(d);
        }
        const uint64_t len = block_length(v);
        set_key(meta, ".size", std::move(size));
        set_key(meta, ".offset", offset);
        set_key(meta, ".len", len);
        set_key(meta, ".type", v.type.empty() ? Json(nullptr) : Json(v.type));
        set_key(meta, ".missing", v.missing);
        if (v.endian) set_key(meta, ".endian", *v.endian);
        members.Container::emplace_back(escape_ds_name(v.name), std::move(meta));
        offset += len;
    }
    members.Container::emplace_back(".", global_attributes.is_object() ? global_attributes : Json::object());
    return python_json_dumps(header);
}

std::shared_ptr<const VirtualFile> make_ds_layout(std::vector<DsLayoutVariable> variables, Json global_attributes) {
    return std::make_shared<DsLayoutFile>(std::move(variables), global_attributes);
}

void BytesBlock::read(uint64_t offset, std::span<uint8_t> out) const {
    if (offset > bytes_.size() || out.size() > bytes_.size() - offset)
        throw UsageError("ds block: read outside the block");
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
}

}  // namespace ncafs::ds
