// The ds-1.0 file layout: "ds-1.0\n", one line of header JSON, then the
// variables' blocks back to back. Generic over where a block's bytes come
// from (DsBlock), so that the netCDF views (ds_view.hpp) and tests with
// ds-only types (unicode, bool) share one encoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codecs/ds/ds_json.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs::ds {

// The bytes of one variable's block, computed on demand; thread-safe.
class DsBlock {
public:
    virtual ~DsBlock() = default;
    virtual uint64_t length() const = 0;
    // [offset, offset+out.size()) lies inside the block.
    virtual void read(uint64_t offset, std::span<uint8_t> out) const = 0;
    // Offsets relative to the block start; default: one computed piece.
    virtual std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const {
        return {ViewPiece{offset, length, std::nullopt}};
    }
};

struct DsLayoutVariable {
    std::string name;  // as in the dataset; escaped (leading "." or "\") when written
    // Keys present before the writer adds the layout keys, in order: for a
    // variable converted from netCDF its attributes, ".dims", ".size",
    // ".type" (ds-format's netCDF driver); for a dataset built in Python
    // typically ".dims" and the attributes.
    Json meta = Json::object();
    std::optional<std::vector<uint64_t>> size;  // nullopt: JSON null (an empty variable)
    std::string type;                           // ds type name; empty: JSON null
    bool missing = false;
    std::optional<std::string> endian;       // "l"/"b"; nullopt: key not written
    std::shared_ptr<const DsBlock> block;    // null: a block of 0 bytes
};

// The header line as ds-format's writer builds it: each variable's meta with
// ".size", ".offset", ".len", ".type", ".missing", ".endian" set in that order
// (a key already present keeps its place, as a Python dict update does),
// then "." with the global attributes. Variables in the given order, blocks
// back to back from offset 0.
std::string ds_header_json(const std::vector<DsLayoutVariable>& variables, const Json& global_attributes);

// "\" prefix for names starting with "." or "\" (ds.escape).
std::string escape_ds_name(const std::string& name);

// The whole file as a VirtualFile.
std::shared_ptr<const VirtualFile> make_ds_layout(std::vector<DsLayoutVariable> variables, Json global_attributes);

// A block held in memory (headers of tiny variables, tests).
class BytesBlock : public DsBlock {
public:
    explicit BytesBlock(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
    uint64_t length() const override { return bytes_.size(); }
    void read(uint64_t offset, std::span<uint8_t> out) const override;

private:
    std::vector<uint8_t> bytes_;
};

}  // namespace ncafs::ds
