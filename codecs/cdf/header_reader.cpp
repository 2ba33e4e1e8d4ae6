#include "codecs/cdf/header_reader.hpp"

#include <algorithm>
#include <cstring>

#include "codecs/cdf/layout.hpp"
#include "codecs/cdf/shared_headers.hpp"
#include "codecs/error.hpp"
#include "codecs/sniff.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::cdf {

namespace {

constexpr uint32_t kTagDimension = 0x0A;
constexpr uint32_t kTagVariable = 0x0B;
constexpr uint32_t kTagAttribute = 0x0C;

// What is being read, formatted only when an error is reported (building
// strings for every field would dominate the parse time of big headers).
struct Label {
    const char* kind = "";
    uint64_t index = 0;
    const std::string* name = nullptr;  // once read
    const Label* owner = nullptr;       // the variable owning an attribute
    std::string text() const {
        std::string s = owner ? owner->text() : std::string();
        if (owner) s.append(" ");
        s.append(kind);
        if (name) {
            s.append(" '").append(*name).append("'");
        } else {
            s.append(" ").append(std::to_string(index));
        }
        return s;
    }
};

std::string describe(const Label* l, const char* field) { return l ? l->text() + " " + field : std::string(field); }

// The bytes of the file seen so far: either all of an in-memory file, or a
// window of an OpenFile. The window grows (doubling) while the parser reads
// on from its end; past a value copied straight out of the file (copy) or
// skipped (check), it starts again where the parser goes on, so a big
// attribute (a million-partition JSON) is read once and never buffered.
class ByteWindow {
public:
    ByteWindow(std::span<const uint8_t> bytes, const std::string& name)
        : name_(name), data_(bytes.data()), loaded_(bytes.size()), total_(bytes.size()) {}
    // `head`: the file's first bytes, read already; borrowed (the caller
    // keeps them) until the parser reads beyond them.
    ByteWindow(const OpenFile& file, std::span<const uint8_t> head)
        : name_(file.path()), file_(&file), total_(file.size()) {
        if (head.empty() || head.size() > total_) {
            load(0, std::min<uint64_t>(total_, kHeaderFirstRead));
            return;
        }
        data_ = head.data();
        loaded_ = head.size();
    }

    const std::string& name() const { return name_; }
    uint64_t total() const { return total_; }
    // The window when it begins at byte 0 (the bytes a header is shared by), else empty.
    std::span<const uint8_t> first_bytes() const {
        if (base_ != 0) return {};
        return {data_, static_cast<size_t>(loaded_)};
    }

    // FormatError unless the file holds bytes [pos, pos+n).
    void check(uint64_t pos, uint64_t n, const Label* l, const char* field) const {
        if (pos > total_ || n > total_ - pos)
            throw FormatError(name_, pos,
                              "header truncated: " + describe(l, field) + " needs " + std::to_string(n) +
                                  " bytes but the file has " + std::to_string(pos > total_ ? 0 : total_ - pos) +
                                  " left");
    }

    // Pointer to bytes [pos, pos+n), valid until the next call; FormatError when the file ends before.
    const uint8_t* need(uint64_t pos, uint64_t n, const Label* l, const char* field) {
        check(pos, n, l, field);
        if (!holds(pos, n)) {
            const uint64_t end = base_ + loaded_;
            if (pos >= base_ && pos <= end) load(base_, std::min(total_, std::max(pos + n, base_ + 2 * loaded_)) - base_);
            else load(pos, std::min(total_ - pos, std::max(n, kHeaderFirstRead)));
        }
        return data_ + (pos - base_);
    }

    // Copies bytes [pos, pos+n) to out; a large value is read straight from the file.
    void copy(uint64_t pos, uint64_t n, uint8_t* out, const Label* l, const char* field) {
        check(pos, n, l, field);
        if (file_ && n > kHeaderFirstRead && !holds(pos, n)) return file_->pread_exact(out, n, pos);
        if (n > 0) std::memcpy(out, need(pos, n, l, field), n);
    }

private:
    bool holds(uint64_t pos, uint64_t n) const { return pos >= base_ && pos - base_ <= loaded_ && n <= loaded_ - (pos - base_); }
    void load(uint64_t from, uint64_t bytes) {
        // Earlier bytes are re-read rather than copied so that each growth is one pread.
        storage_.clear();
        storage_.resize(bytes);
        file_->pread_exact(storage_.data(), bytes, from);
        data_ = storage_.data();
        base_ = from;
        loaded_ = bytes;
    }

    std::string name_;
    const OpenFile* file_ = nullptr;
    std::vector<uint8_t> storage_;
    const uint8_t* data_ = nullptr;
    uint64_t base_ = 0;  // file offset of data_[0]
    uint64_t loaded_ = 0;
    uint64_t total_ = 0;
};

uint32_t load_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t load_be64(const uint8_t* p) { return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4); }

class HeaderParser {
public:
    HeaderParser(ByteWindow& w, AttributeValues values) : w_(w), values_(values) {}

    CdfHeader parse() {
        const uint8_t* magic = w_.need(0, 4, nullptr, "magic number");
        if (sniff_format({magic, 4}) != FileFormat::Cdf) {
            if (magic[0] == 'C' && magic[1] == 'D' && magic[2] == 'F')
                fail(3, "unknown CDF version byte " + std::to_string(magic[3]));
            fail(0, "bad magic number (not a netCDF classic file)");
        }
        h_.version = magic[3];
        word_ = h_.version == kData64 ? 8 : 4;
        pos_ = 4;

        const uint64_t numrecs_at = pos_;
        uint64_t raw = word_ == 8 ? load_be64(w_.need(pos_, 8, nullptr, "numrecs"))
                                  : load_be32(w_.need(pos_, 4, nullptr, "numrecs"));
        pos_ += word_;
        const uint64_t streaming = word_ == 8 ? UINT64_MAX : 0xFFFFFFFFu;
        if (raw == streaming) {
            h_.streaming = true;
        } else {
            if (word_ == 8 && raw > uint64_t{INT64_MAX}) fail(numrecs_at, "negative numrecs");
            h_.numrecs = raw;
        }

        read_dimensions();
        read_attributes(h_.attributes, "global attribute", nullptr);
        read_variables();
        h_.header_size = pos_;
        return std::move(h_);
    }

private:
    [[noreturn]] void fail(uint64_t at, const std::string& why) const { throw FormatError(w_.name(), at, why); }

    uint64_t remaining() const { return w_.total() - pos_; }

    uint32_t u32(const Label* l, const char* field) {
        uint32_t v = load_be32(w_.need(pos_, 4, l, field));
        pos_ += 4;
        return v;
    }

    // NON_NEG: unsigned 32 bits in CDF-1/2 (as netcdf-c reads it: dimensions
    // up to 2^32-4 exist in CDF-2 files), non-negative 64 bits in CDF-5.
    uint64_t non_neg(const Label* l, const char* field) {
        if (word_ == 4) return u32(l, field);
        const uint64_t at = pos_;
        uint64_t v = load_be64(w_.need(pos_, 8, l, field));
        pos_ += 8;
        if (v > uint64_t{INT64_MAX}) fail(at, describe(l, field) + " is negative");
        return v;
    }

    // A count of items each taking at least min_bytes: rejected when the
    // rest of the file could not hold them, so no allocation outgrows the file.
    uint64_t count(const Label* l, const char* field, uint64_t min_bytes) {
        const uint64_t at = pos_;
        uint64_t n = non_neg(l, field);
        if (n > remaining() / min_bytes)
            fail(at, describe(l, field) + " " + std::to_string(n) + " exceeds what the remaining " +
                         std::to_string(remaining()) + " bytes of the file can hold");
        return n;
    }

    void skip_padding(uint64_t n) {
        uint64_t pad = (4 - n % 4) % 4;
        w_.need(pos_, pad, nullptr, "padding");
        pos_ += pad;
    }

    std::string name(const Label& l) {
        const uint64_t at = pos_;
        uint64_t n = count(&l, "name length", 1);
        if (n == 0) fail(at, l.text() + " has an empty name");
        const uint8_t* p = w_.need(pos_, n, &l, "name");
        std::string s(reinterpret_cast<const char*>(p), n);
        // The spec allows any bytes in names when reading, but netcdf's C API
        // cannot represent a NUL inside one.
        if (s.find('\0') != std::string::npos) fail(pos_, l.text() + " name contains a NUL byte");
        pos_ += n;
        skip_padding(n);
        return s;
    }

    NcType type(const Label& l) {
        const uint64_t at = pos_;
        uint32_t tag = u32(&l, "type");
        if (!is_valid_type_tag(tag)) fail(at, "bad type tag " + std::to_string(tag) + " for " + l.text());
        auto t = static_cast<NcType>(tag);
        // The spec adds ubyte..uint64 in CDF-5 only (netcdf-c is laxer).
        if (h_.version != kData64 && is_cdf5_only(t))
            fail(at, l.text() + " has type " + std::string(type_name(t)) + " which exists only in CDF-5");
        return t;
    }

    // Reads a list header: tag and nelems; 0 when ABSENT.
    uint64_t list_header(uint32_t expected_tag, const char* what, const char* count_field, const Label* owner,
                         uint64_t min_item_bytes) {
        const uint64_t at = pos_;
        uint32_t tag = u32(owner, "list tag");
        if (tag == 0) {
            const uint64_t count_at = pos_;
            if (non_neg(owner, "list count") != 0)
                fail(count_at, "ABSENT " + std::string(what) + " list with a nonzero count");
            return 0;
        }
        if (tag != expected_tag)
            fail(at, "unknown tag " + std::to_string(tag) + " where the " + what + " list tag (" +
                         std::to_string(expected_tag) + ") or ABSENT was expected");
        return count(owner, count_field, min_item_bytes);
    }

    void read_dimensions() {
        // name count + >=1 padded name byte + length
        uint64_t n = list_header(kTagDimension, "dimension", "dimension count", nullptr, 2 * word_ + 4);
        charge_metadata(n, sizeof(Dimension) + kNameCost, "dimensions");
        h_.dimensions.reserve(n);
        std::optional<size_t> record;
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t at = pos_;
            Label l{"dimension", i};
            Dimension d;
            d.name = name(l);
            l.name = &d.name;
            d.length = non_neg(&l, "length");
            if (d.length == 0) {
                if (record)
                    fail(at, "second record dimension '" + d.name + "' (the first is '" + h_.dimensions[*record].name +
                                 "')");
                record = h_.dimensions.size();
                d.unlimited = true;
            }
            h_.dimensions.push_back(std::move(d));
        }
    }

    void read_attributes(std::vector<Attribute>& out, const char* kind, const Label* owner) {
        // name count + >=1 padded name byte + type + nelems
        uint64_t n = list_header(kTagAttribute, kind, "attribute count", owner, 2 * word_ + 8);
        charge_metadata(n, sizeof(Attribute) + kNameCost, "attributes");
        out.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            Label l{kind, i, nullptr, owner};
            Attribute a;
            a.name = name(l);
            l.name = &a.name;
            a.type = type(l);
            const uint64_t at = pos_;
            uint64_t nelems = non_neg(&l, "length");
            const uint64_t esize = type_size(a.type);
            if (nelems > remaining() / esize)
                fail(at, l.text() + " length " + std::to_string(nelems) + " exceeds the remaining " +
                             std::to_string(remaining()) + " bytes of the file");
            const uint64_t bytes = nelems * esize;
            if (values_ == AttributeValues::Read) {
                charge_metadata(bytes, 1, "bytes of attribute values");
                if (a.type == NcType::Char) a.values.reserve(bytes + kTextAttributeSpareBytes);
                a.values.resize(bytes);
                w_.copy(pos_, bytes, a.values.data(), &l, "values");
                swap_from_big_endian(a.type, a.values.data(), nelems);
            } else {
                w_.check(pos_, bytes, &l, "values");
            }
            pos_ += bytes;
            skip_padding(bytes);
            out.push_back(std::move(a));
        }
    }

    void read_variables() {
        // name count + >=1 padded name byte + ndims + ABSENT attributes + type + vsize + begin
        const uint64_t offset_bytes = h_.version == kClassic ? 4 : 8;
        uint64_t n = list_header(kTagVariable, "variable", "variable count", nullptr, 4 * word_ + 12 + offset_bytes);
        // Each becomes a dataset variable with its source and its place in every view's layout too.
        charge_metadata(n, sizeof(CdfVariable) + kVariableCost, "variables");
        h_.variables.reserve(n);
        const auto record = h_.record_dimension();
        for (uint64_t i = 0; i < n; ++i) {
            CdfVariable v;
            v.entry_offset = pos_;
            Label l{"variable", i};
            v.name = name(l);
            l.name = &v.name;
            uint64_t rank = count(&l, "rank", word_);
            v.dimids.reserve(rank);
            for (uint64_t d = 0; d < rank; ++d) {
                const uint64_t at = pos_;
                uint64_t id = non_neg(&l, "dimension id");
                if (id >= h_.dimensions.size())
                    fail(at, l.text() + ": dimension id " + std::to_string(id) + " out of range (" +
                                 std::to_string(h_.dimensions.size()) + " dimensions)");
                if (record && id == *record && d != 0)
                    fail(at, l.text() + ": the record dimension '" + h_.dimensions[id].name +
                                 "' is not its first dimension");
                v.dimids.push_back(static_cast<size_t>(id));
            }
            read_attributes(v.attributes, "attribute", &l);
            v.type = type(l);
            // vsize is NON_NEG but netcdf-c writes it unsigned (2^32-1 when saturated); readers ignore it.
            v.vsize = word_ == 8 ? non_neg(&l, "vsize") : u32(&l, "vsize");
            const uint64_t begin_at = pos_;
            if (h_.version == kClassic) {
                uint32_t b = u32(&l, "begin");
                if (b > uint32_t{INT32_MAX}) fail(begin_at, l.text() + ": negative begin offset");
                v.begin = b;
            } else {
                v.begin = load_be64(w_.need(pos_, 8, &l, "begin"));
                pos_ += 8;
                if (v.begin > uint64_t{INT64_MAX}) fail(begin_at, l.text() + ": negative begin offset");
            }
            h_.variables.push_back(std::move(v));
        }
    }

    ByteWindow& w_;
    AttributeValues values_;
    CdfHeader h_;
    uint64_t pos_ = 0;
    uint64_t word_ = 4;
};

// The layout of a checked header, and where its data ends: the placement
// holds for every file of the same header at least that long.
struct Placement {
    CdfLayout layout;
    uint64_t data_end = 0;
};

// Offset of the begin field of a variable entry, for messages: the entry offset
// is close enough and always known.
Placement check_data_placement(CdfHeader& h, const std::string& file, uint64_t file_size) {
    CdfLayout layout = compute_layout(h, file);
    uint64_t data_end = 0;
    if (h.streaming) {
        // Spec "Note on streaming data": the record count follows from the file length.
        h.numrecs = 0;
        if (layout.record_variable_count > 0 && layout.record_size > 0 && file_size > layout.begin_rec)
            h.numrecs = (file_size - layout.begin_rec) / layout.record_size;
        if (auto r = h.record_dimension()) h.dimensions[*r].length = h.numrecs;
        layout = compute_layout(h, file);
    }
    bool seen_fixed = false;
    uint64_t end_of_last_fixed = 0;
    for (size_t i = 0; i < h.variables.size(); ++i) {
        const CdfVariable& v = h.variables[i];
        const VariableLayout& vl = layout.variables[i];
        auto label = [&] { return "variable '" + v.name + "'"; };
        if (v.begin < h.header_size)
            throw FormatError(file, v.entry_offset,
                              label() + ": data begins at " + std::to_string(v.begin) + ", inside the header (which ends at " +
                                  std::to_string(h.header_size) + ")");
        // The last element's end; padding may be missing at the end of a file.
        uint64_t end = 0;
        bool overflow = false;
        if (!vl.is_record) {
            overflow = __builtin_add_overflow(v.begin, vl.data_bytes, &end);
            if (!overflow) {
                seen_fixed = true;
                end_of_last_fixed = v.begin + vl.padded_bytes;
            }
        } else if (layout.numrecs > 0) {
            uint64_t records;
            overflow = __builtin_mul_overflow(layout.numrecs - 1, layout.record_size, &records) ||
                       __builtin_add_overflow(v.begin, records, &end) ||
                       __builtin_add_overflow(end, vl.data_bytes, &end);
        }
        if (overflow) throw FormatError(file, v.entry_offset, label() + ": data end overflows 64 bits");
        data_end = std::max(data_end, end);
        if (end > file_size)
            throw FormatError(file, v.entry_offset,
                              label() + (vl.is_record ? ": record data" : ": data") + " ends at byte " +
                                  std::to_string(end) + ", beyond the end of the file (" + std::to_string(file_size) +
                                  " bytes)");
    }
    // netcdf-c (NC_computeshapes) refuses record data that starts before the
    // end of the non-record data.
    if (seen_fixed && layout.record_variable_count > 0 && end_of_last_fixed > layout.begin_rec)
        throw FormatError(file, 4,
                          "record data begins at " + std::to_string(layout.begin_rec) +
                              ", before the end of the non-record data (" + std::to_string(end_of_last_fixed) + ")");
    return Placement{std::move(layout), data_end};
}

void set_record_length(CdfHeader& h) {
    if (auto r = h.record_dimension()) h.dimensions[*r].length = h.numrecs;
}

// The header in w: a copy of a remembered parse when the bytes match one
// (partitions of one layout: parsed once), else parsed and remembered.
CdfHeader parse_or_share(ByteWindow& w, AttributeValues values, std::shared_ptr<RememberedHeader>* entry) {
    CdfHeader h;
    std::shared_ptr<RememberedHeader> found = find_shared_header(w.first_bytes(), h);
    if (!found) {
        h = HeaderParser(w, values).parse();
        // A names-only parse is never shared: readers of values would get none.
        if (values == AttributeValues::Read) found = remember_shared_header(w.first_bytes(), h);
    }
    if (entry) *entry = std::move(found);
    set_record_length(h);
    return h;
}

}  // namespace

CdfHeader parse_cdf_header(std::span<const uint8_t> bytes, const std::string& file) {
    ByteWindow w(bytes, file);
    CdfHeader h = HeaderParser(w, AttributeValues::Read).parse();
    set_record_length(h);
    check_data_placement(h, file, bytes.size());
    return h;
}

namespace {

// The header bytes the layout was computed from, for a file whose identity
// does not vouch for them (OpenFile::note_layout_prefix). A header beyond
// the first window is not kept: its reads are checked as other files'.
void note_header_bytes(const OpenFile& file, const ByteWindow& w, const CdfHeader& h) {
    const auto first = w.first_bytes();
    if (!file.vouched() && h.header_size <= first.size()) file.note_layout_prefix(first.first(h.header_size));
}

}  // namespace

CdfHeader read_cdf_header(const OpenFile& file, CdfLayout* layout, AttributeValues values,
                          std::span<const uint8_t> head) {
    ByteWindow w(file, head);
    CdfHeader h = parse_or_share(w, values, nullptr);
    note_header_bytes(file, w, h);
    Placement p = check_data_placement(h, file.path(), file.size());
    if (layout) *layout = std::move(p.layout);
    return h;
}

CdfHeader read_cdf_header(const OpenFile& file, std::shared_ptr<const CdfLayout>& layout,
                          std::span<const uint8_t> head) {
    ByteWindow w(file, head);
    std::shared_ptr<RememberedHeader> entry;
    CdfHeader h = parse_or_share(w, AttributeValues::Read, &entry);
    note_header_bytes(file, w, h);
    // STREAMING takes numrecs from the file size: never shared.
    const bool shareable = entry && !h.streaming;
    layout = shareable ? shared_layout(*entry, h.numrecs, file.size()) : nullptr;
    if (layout) return h;
    Placement p = check_data_placement(h, file.path(), file.size());
    layout = std::make_shared<const CdfLayout>(std::move(p.layout));
    if (shareable) remember_layout(*entry, h.numrecs, p.data_end, layout);
    return h;
}

void check_classic_header(const std::string& path) { check_classic_header(*OpenFile::open(path)); }

void check_classic_header(const OpenFile& file) {
    uint8_t head[4] = {};
    if (file.size() < 4) return;
    file.pread_exact(head, 4, 0);
    if (sniff_format(head) == FileFormat::Cdf) (void)read_cdf_header(file, nullptr, AttributeValues::Skip);
}

}  // namespace ncafs::cdf
