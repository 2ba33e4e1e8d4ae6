#include "codecs/ncstream/ncstream_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <type_traits>

#include "codecs/error.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/memory_source.hpp"
#include "codecs/ncstream/ncstream.pb.h"
#include "codecs/ncstream/piece_source.hpp"
#include "codecs/ncstream/schema_mapping.hpp"
#include "codecs/ncstream/wire_census.hpp"
#include "io/metadata_budget.hpp"
#include "io/open_file.hpp"
#include "codecs/sniff.hpp"

namespace ncafs::ncstream {

namespace {

constexpr uint64_t kVlenSize = UINT64_MAX;  // Range.size of a vlen axis

// Sequential reads through the framing, every length checked against the
// bytes that are left in the file before anything is allocated or read.
class Cursor {
public:
    explicit Cursor(std::shared_ptr<const OpenFile> f) : file_(std::move(f)), size_(file_->size()) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    const std::string& path() const { return file_->path(); }
    FormatError error(uint64_t at, const std::string& reason) const { return FormatError(path(), at, reason); }

    void need(uint64_t n, const std::string& what) const {
        if (n > remaining())
            throw error(pos_, what + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                                  std::to_string(remaining()) + " bytes left)");
    }

    void read(void* dst, uint64_t n, const std::string& what) {
        need(n, what);
        if (n == 0) return;
        if (n > kBuffer) {
            file_->pread_exact(dst, n, pos_);
        } else {
            ensure(n);
            std::memcpy(dst, buffer_.data() + (pos_ - buffer_at_), n);
        }
        pos_ += n;
    }

    std::string read_string(uint64_t n, const std::string& what) {
        need(n, what);
        std::string s(n, '\0');
        read(s.data(), n, what);
        return s;
    }

    void skip(uint64_t n, const std::string& what) {
        need(n, what);
        pos_ += n;
    }

    // Returns false at the end of the file (no byte left); a partial magic is an error.
    bool read_magic(Magic& m) {
        if (remaining() == 0) return false;
        read(m.data(), 4, "message magic");
        return true;
    }

    uint64_t read_varint(const std::string& what) {
        const uint64_t at = pos_;
        const size_t avail = static_cast<size_t>(std::min<uint64_t>(remaining(), 10));
        if (avail == 0) throw error(at, what + ": file ends where a varint should start");
        ensure(avail);
        auto r = decode_varint(std::span<const uint8_t>(buffer_.data() + (pos_ - buffer_at_), avail));
        if (r.status == VarintResult::Status::NeedMore) throw error(at, what + ": varint runs past the end of the file");
        if (r.status == VarintResult::Status::TooLarge) throw error(at, what + ": varint reaches 2^63");
        pos_ += r.length;
        return r.value;
    }

private:
    static constexpr uint64_t kBuffer = 1 << 16;
    // Makes [pos_, pos_ + n) (n <= kBuffer, inside the file) available in buffer_.
    void ensure(uint64_t n) {
        if (pos_ >= buffer_at_ && pos_ + n <= buffer_at_ + buffer_.size()) return;
        const uint64_t len = std::min<uint64_t>(kBuffer, remaining());
        buffer_.resize(len);
        file_->pread_exact(buffer_.data(), len, pos_);
        buffer_at_ = pos_;
    }

    std::shared_ptr<const OpenFile> file_;
    uint64_t size_;
    uint64_t pos_ = 0;
    std::vector<uint8_t> buffer_;
    uint64_t buffer_at_ = 0;
};

struct VarInfo {
    std::string name;
    bool is_string = false;
    NcType type = NcType::Char;  // element type (Char for strings)
    bool unsigned_flag = false;
    std::vector<size_t> dimids;
    std::vector<uint64_t> shape;
    uint64_t elements = 0;
    std::vector<Attribute> attributes;
    std::vector<StoredPiece> pieces;
    std::vector<std::string> strings;  // STRING variables: element_count values
    uint64_t string_bytes = 0;
};

// Dimension names taken, each with its index; new names made unique by a
// suffix, the next one to try kept per base (no rescan from _1 each time).
class DimNames {
public:
    std::optional<size_t> find(const std::string& name) const {
        auto it = ids_.find(name);
        return it == ids_.end() ? std::nullopt : std::optional<size_t>(it->second);
    }
    void add(const std::string& name, size_t id) { ids_[name] = id; }
    std::string unique(const std::string& base) {
        if (!ids_.count(base)) return base;
        uint64_t& i = next_[base];
        std::string n;
        do n = base + "_" + std::to_string(++i);
        while (ids_.count(n));
        return n;
    }

private:
    std::map<std::string, size_t> ids_;
    std::map<std::string, uint64_t> next_;
};

struct Model {
    std::vector<Dimension> dims;
    std::vector<Attribute> attributes;
    std::vector<VarInfo> vars;
    std::map<std::string, size_t> var_index;
    DimNames dim_names;
};

uint64_t checked_product(const std::vector<uint64_t>& shape, uint64_t element_size, const Cursor& c, uint64_t at,
                         const std::string& what) {
    uint64_t n = 1;
    for (uint64_t d : shape)
        if (__builtin_mul_overflow(n, d, &n)) throw c.error(at, what + ": element count overflows");
    uint64_t bytes;
    if (__builtin_mul_overflow(n, element_size, &bytes) || bytes >= (uint64_t{1} << 63))
        throw c.error(at, what + ": size reaches 2^63 bytes");
    return n;
}

// A variable's shape: its dimensions found in the group (lengths must agree),
// private or anonymous ones added as dimensions of their own.
void decode_variable_shape(const pb::Variable& pv, VarInfo& v, Model& m, const Cursor& c, uint64_t at,
                           const std::string& what) {
    if (static_cast<uint64_t>(pv.shape_size()) > kMaxVariableRank)
        throw c.error(at, what + ": rank " + std::to_string(pv.shape_size()) + " is more than " +
                              std::to_string(kMaxVariableRank));
    for (int k = 0; k < pv.shape_size(); ++k) {
        const pb::Dimension& sd = pv.shape(k);
        if (sd.isvlen()) throw c.error(at, what + ": vlen dimensions are not supported");
        std::optional<size_t> id;
        if (!sd.name().empty() && !sd.isprivate()) id = m.dim_names.find(sd.name());
        if (id) {
            if (sd.has_length() && sd.length() != m.dims[*id].length)
                throw c.error(at, what + ": dimension " + sd.name() + " has length " + std::to_string(sd.length()) +
                                      " but the group declares " + std::to_string(m.dims[*id].length));
        } else {
            // A private or anonymous dimension: give it a dimension of its own.
            std::string name = m.dim_names.unique(sd.name().empty() ? v.name + "_dim" + std::to_string(k) : sd.name());
            id = m.dims.size();
            m.dim_names.add(name, *id);
            m.dims.push_back(Dimension{name, sd.length(), false});
        }
        v.dimids.push_back(*id);
        v.shape.push_back(m.dims[*id].length);
    }
}

// One header variable: type, shape, attributes and any immediate data.
VarInfo decode_variable(const pb::Variable& pv, Model& m, const Cursor& c, uint64_t at,
                        const ReaderOptions& options) {
    VarInfo v;
    v.name = pv.name();
    const std::string what = "variable " + v.name;
    if (m.var_index.count(v.name)) throw c.error(at, what + " declared twice");
    v.unsigned_flag = pv.unsigned_();
    if (pv.datatype() == pb::STRING) {
        v.is_string = true;
    } else if (auto t = nc_type_from_pb(pv.datatype(), pv.unsigned_())) {
        v.type = *t;
    } else {
        throw c.error(at, what + ": type " + pb::DataType_Name(pv.datatype()) + " is not supported");
    }
    decode_variable_shape(pv, v, m, c, at, what);
    v.elements = checked_product(v.shape, v.is_string ? 1 : type_size(v.type), c, at, what);
    if (v.is_string) {
        // The values are held as std::strings until the char array is built:
        // the limit covers those objects too, before they are allocated.
        if (v.elements > options.max_string_variable_bytes / sizeof(std::string))
            throw c.error(at, what + ": STRING variable of " + std::to_string(v.elements) +
                                  " values is too large to hold in memory");
        charge_metadata(v.elements, sizeof(std::string), "STRING values");
        v.strings.resize(v.elements);
    }
    for (const auto& a : pv.atts()) v.attributes.push_back(decode_attribute(a, c.path(), at));
    if (pv.has_data() && !v.is_string) {
        const uint64_t raw = v.elements * type_size(v.type);
        if (pv.data().size() != raw)
            throw c.error(at, what + ": immediate data of " + std::to_string(pv.data().size()) + " bytes, expected " +
                                  std::to_string(raw));
        StoredPiece p;
        p.start.assign(v.shape.size(), 0);
        p.count = v.shape;
        p.raw_length = raw;
        p.message_offset = at;
        p.immediate = std::make_shared<const std::vector<uint8_t>>(pv.data().begin(), pv.data().end());
        v.pieces.push_back(std::move(p));
    }
    return v;
}

Model decode_header(const pb::Header& h, const Cursor& c, uint64_t at, const ReaderOptions& options) {
    const pb::Group& root = h.root();
    if (root.groups_size() > 0) throw c.error(at, "nested groups are not supported (classic data model)");
    if (root.structs_size() > 0)
        throw c.error(at, "structure variable " + root.structs(0).name() + " is not supported");
    charge_metadata(static_cast<uint64_t>(root.dims_size()), sizeof(Dimension) + kNameCost, "dimensions");
    charge_metadata(static_cast<uint64_t>(root.vars_size()), sizeof(VarInfo) + kVariableCost, "variables");
    Model m;
    bool have_unlimited = false;
    for (int i = 0; i < root.dims_size(); ++i) {
        const pb::Dimension& d = root.dims(i);
        if (d.isvlen()) throw c.error(at, "vlen dimension " + d.name() + " is not supported");
        std::string name = d.name().empty() ? m.dim_names.unique("dim" + std::to_string(i)) : d.name();
        if (m.dim_names.find(name)) throw c.error(at, "dimension " + name + " declared twice");
        m.dim_names.add(name, m.dims.size());
        // The classic model has one unlimited dimension: later ones become fixed.
        const bool unlimited = d.isunlimited() && !have_unlimited;
        have_unlimited |= unlimited;
        m.dims.push_back(Dimension{name, d.length(), unlimited});
    }
    for (const auto& a : root.atts()) m.attributes.push_back(decode_attribute(a, c.path(), at));
    for (const pb::Variable& pv : root.vars()) {
        VarInfo v = decode_variable(pv, m, c, at, options);
        m.var_index[v.name] = m.vars.size();
        m.vars.push_back(std::move(v));
    }
    return m;
}

// What one object of a parsed header costs: the protobuf object (pb::Variable,
// the largest, is under 200 bytes), its slot and allocation, and the reader's copy.
constexpr uint64_t kWireObjectCost = 256;
static_assert(sizeof(pb::Variable) < 200 && sizeof(pb::Structure) < 200 && sizeof(pb::Group) < 200 &&
              sizeof(pb::Attribute) < 200 && sizeof(pb::Dimension) < 200);
// A data or error message carries a name, a section and a few numbers (its
// payload follows it): a longer one is refused before it is read.
constexpr uint64_t kMaxSmallMessage = 1 << 20;

// The header's text and what parsing it makes, counted before either is built.
void charge_header(const Cursor& c, uint64_t at, const std::string& bytes) {
    const uint64_t allowed = metadata_limits().per_file / kWireObjectCost;  // counting stops past it
    const auto objects = count_wire_objects(bytes, *pb::Header::descriptor(), allowed);
    if (!objects) throw c.error(at, "header message is not valid protobuf");
    charge_metadata(*objects, kWireObjectCost,
                    *objects > allowed ? "header entries (messages and repeated values) or more"
                                       : "header entries (messages and repeated values)");
}

template <typename Msg>
Msg parse_message(Cursor& c, uint64_t at, const char* what) {
    const uint64_t n = c.read_varint(std::string(what) + " message length");
    if (n > static_cast<uint64_t>(INT_MAX)) throw c.error(at, std::string(what) + " message length reaches 2 GiB");
    constexpr bool header = std::is_same_v<Msg, pb::Header>;
    // The header is kept (decoded into the dataset): its text is counted before it is read.
    if (header) charge_metadata(n, kParsedTextFactor, "bytes of header message, parsed");
    if (!header && n > kMaxSmallMessage)
        throw c.error(at, std::string(what) + " message of " + std::to_string(n) + " bytes (more than " +
                              std::to_string(kMaxSmallMessage) + ", its payload apart): refused");
    std::string bytes = c.read_string(n, std::string(what) + " message");
    if (header) charge_header(c, at, bytes);
    Msg msg;
    if (!msg.ParseFromString(bytes))
        throw c.error(at, std::string(what) + " message is not valid protobuf or lacks a required field");
    return msg;
}

// The data message's section (the whole variable when absent): no vlen, no stride, inside the shape.
void data_section(const pb::Data& d, const VarInfo& v, const Cursor& c, uint64_t at, const std::string& what,
                  std::vector<uint64_t>& start, std::vector<uint64_t>& count) {
    const size_t rank = v.shape.size();
    start.assign(rank, 0);
    count = v.shape;
    if (!d.has_section()) return;
    if (static_cast<size_t>(d.section().range_size()) != rank)
        throw c.error(at, what + ": section of rank " + std::to_string(d.section().range_size()) +
                              " for a variable of rank " + std::to_string(rank));
    for (size_t k = 0; k < rank; ++k) {
        const pb::Range& r = d.section().range(static_cast<int>(k));
        if (r.size() == kVlenSize) throw c.error(at, what + ": vlen section is not supported");
        const uint64_t stride = r.has_stride() && r.stride() != 0 ? r.stride() : 1;
        if (stride != 1 && r.size() > 1) throw c.error(at, what + ": strided sections are not supported");
        if (r.start() > v.shape[k] || r.size() > v.shape[k] - r.start())
            throw c.error(at, what + ": range [" + std::to_string(r.start()) + ", +" + std::to_string(r.size()) +
                                  ") outside dimension of length " + std::to_string(v.shape[k]));
        start[k] = r.start();
        count[k] = r.size();
    }
}

// STRING payload: a count, then length-prefixed strings in C order over the section (memory bounded).
void read_string_payload(Cursor& c, VarInfo& v, const std::string& what, const std::vector<uint64_t>& start,
                         const std::vector<uint64_t>& count, uint64_t elements, const ReaderOptions& options) {
    const size_t rank = v.shape.size();
    const uint64_t payload_at = c.pos();
    const uint64_t n = c.read_varint(what + ": string count");
    if (n != elements)
        throw c.error(payload_at, what + ": " + std::to_string(n) + " strings for a section of " +
                                      std::to_string(elements) + " elements");
    std::vector<uint64_t> idx = start;
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t len = c.read_varint(what + ": string length");
        if (len > options.max_string_variable_bytes - std::min(v.string_bytes, options.max_string_variable_bytes))
            throw c.error(c.pos(), what + ": string data exceeds the in-memory limit");
        charge_metadata(len, 1, "bytes of STRING values");
        uint64_t lin = 0;
        for (size_t k = 0; k < rank; ++k) lin = lin * v.shape[k] + idx[k];
        v.string_bytes += len;
        v.strings[lin] = c.read_string(len, what + ": string");
        for (size_t k = rank; k-- > 0;) {
            if (++idx[k] < start[k] + count[k]) break;
            idx[k] = start[k];
        }
    }
}

// Numeric payload: recorded as a piece (offset, length, byte order, deflate) and skipped.
void read_numeric_payload(Cursor& c, uint64_t at, const pb::Data& d, VarInfo& v, const std::string& what,
                          std::vector<uint64_t> start, std::vector<uint64_t> count, uint64_t elements) {
    const uint64_t es = type_size(v.type);
    const uint64_t raw = elements * es;
    const uint64_t length_at = c.pos();
    const uint64_t stored = c.read_varint(what + ": payload length");
    c.need(stored, what + ": payload");
    StoredPiece p;
    p.start = std::move(start);
    p.count = std::move(count);
    p.file_offset = c.pos();
    p.stored_length = stored;
    p.raw_length = raw;
    p.message_offset = at;
    // Notes 3.5: 4.x writers always wrote big-endian, whatever the flag says.
    p.big_endian = d.version() < 3 ? true : (d.has_bigend() ? d.bigend() : false);
    if (d.compress() == pb::DEFLATE) {
        if (d.has_uncompressedsize() && d.uncompressedsize() != raw)
            throw c.error(at, what + ": uncompressedSize " + std::to_string(d.uncompressedsize()) +
                                  " but the section holds " + std::to_string(raw) + " bytes");
        if (raw > 0 && stored == 0) throw c.error(length_at, what + ": empty deflated payload");
        p.deflated = raw > 0;
    } else if (stored != raw) {
        throw c.error(length_at, what + ": payload of " + std::to_string(stored) + " bytes, the section holds " +
                                     std::to_string(raw));
    }
    c.skip(stored, what + ": payload");
    if (raw > 0) {
        charge_metadata(1, sizeof(StoredPiece) + 16 * p.start.size(), "data messages");
        v.pieces.push_back(std::move(p));
    }
}

void read_data_message(Cursor& c, uint64_t at, Model& m, const ReaderOptions& options) {
    const pb::Data d = parse_message<pb::Data>(c, at, "data");
    const std::string name = unescape_name(d.varname());
    auto found = m.var_index.find(name);
    if (found == m.var_index.end()) throw c.error(at, "data message for undeclared variable " + d.varname());
    VarInfo& v = m.vars[found->second];
    const std::string what = "data message of variable " + v.name;
    if (d.vdata()) throw c.error(at, what + ": vlen data is not supported");
    if (v.is_string) {
        if (d.datatype() != pb::STRING) throw c.error(at, what + ": type " + pb::DataType_Name(d.datatype()) + ", not STRING");
    } else {
        auto t = nc_type_from_pb(d.datatype(), v.unsigned_flag);
        if (!t || type_size(*t) != type_size(v.type))
            throw c.error(at, what + ": type " + pb::DataType_Name(d.datatype()) + " does not match the header");
    }
    std::vector<uint64_t> start, count;
    data_section(d, v, c, at, what, start, count);
    const uint64_t elements = element_count(count);  // <= v.elements: no overflow
    if (!v.is_string) return read_numeric_payload(c, at, d, v, what, std::move(start), std::move(count), elements);
    if (d.compress() != pb::NONE) throw c.error(at, what + ": compressed STRING data is not supported");
    read_string_payload(c, v, what, start, count, elements, options);
}

std::vector<uint8_t> fill_value_native(NcType t, const std::vector<Attribute>& attributes) {
    const size_t es = type_size(t);
    for (const Attribute& a : attributes)
        if (a.name == "_FillValue" && a.type == t && a.length() == 1) return a.values;
    auto big = default_fill_big_endian(t);
    std::vector<uint8_t> fill(big.begin(), big.begin() + static_cast<std::ptrdiff_t>(es));
    swap_from_big_endian(t, fill.data(), 1);
    return fill;
}

}  // namespace

bool has_ncstream_magic(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
    if (fd < 0) return false;
    const bool yes = sniff_fd(fd) == FileFormat::Ncstream;
    ::close(fd);
    return yes;
}

Dataset open_ncstream_dataset(const std::string& path, const ReaderOptions& options) {
    return open_ncstream_dataset(OpenFile::open(path), options);
}

Dataset open_ncstream_dataset(std::shared_ptr<const OpenFile> file, const ReaderOptions& options) {
    const std::string& path = file->path();
    Cursor c(file);
    Magic magic;
    if (!c.read_magic(magic) || !magic_equals(magic, kMagicStart))
        throw c.error(0, "not an ncstream file: no MAGIC_START (\"CDFS\")");
    const uint64_t header_at = c.pos();
    if (!c.read_magic(magic) || !magic_equals(magic, kMagicHeader))
        throw c.error(header_at, "expected MAGIC_HEADER after MAGIC_START");
    const pb::Header header = parse_message<pb::Header>(c, header_at, "header");
    Model m = decode_header(header, c, header_at, options);

    while (true) {
        const uint64_t at = c.pos();
        if (!c.read_magic(magic)) throw c.error(at, "file ends without MAGIC_END");
        if (magic_equals(magic, kMagicEnd)) break;  // bytes after it are not ours to interpret
        if (magic_equals(magic, kMagicData)) {
            read_data_message(c, at, m, options);
        } else if (magic_equals(magic, kMagicErr)) {
            const pb::Error e = parse_message<pb::Error>(c, at, "error");
            throw c.error(at, "stream carries an error message: " + e.message());
        } else if (magic_equals(magic, kMagicHeader) || magic_equals(magic, kMagicData2)) {
            throw c.error(at, describe_magic(magic) + " messages after the first header are not supported");
        } else {
            throw c.error(at, describe_magic(magic) + " where a message should start");
        }
    }

    Dataset ds;
    ds.origin = path;
    ds.dimensions = std::move(m.dims);
    ds.attributes = std::move(m.attributes);
    auto cache = std::make_shared<InflateCache>(options.inflate_cache_bytes);
    for (VarInfo& v : m.vars) {
        Variable out;
        out.name = v.name;
        out.attributes = std::move(v.attributes);
        out.dimids = v.dimids;
        if (!v.is_string) {
            out.type = v.type;
            out.source = std::make_shared<PieceSource>(file, v.name, v.type, v.shape,
                                                       fill_value_native(v.type, out.attributes), std::move(v.pieces),
                                                       cache);
        } else {
            // Strings become a char array with one more, innermost dimension.
            uint64_t longest = 1;
            for (const auto& s : v.strings) longest = std::max<uint64_t>(longest, s.size());
            uint64_t bytes;
            if (__builtin_mul_overflow(v.elements, longest, &bytes) || bytes > options.max_string_variable_bytes)
                throw FormatError(path, header_at, "variable " + v.name + ": STRING values too large as a char array");
            charge_metadata(bytes, 1, "bytes of STRING values as a char array");
            const std::string dim = m.dim_names.unique(v.name + "_strlen");
            m.dim_names.add(dim, ds.dimensions.size());
            ds.dimensions.push_back(Dimension{dim, longest, false});
            out.dimids.push_back(ds.dimensions.size() - 1);
            std::vector<uint8_t> chars(bytes, 0);
            for (uint64_t i = 0; i < v.elements; ++i)
                std::memcpy(chars.data() + i * longest, v.strings[i].data(), v.strings[i].size());
            std::vector<uint64_t> shape = v.shape;
            shape.push_back(longest);
            out.type = NcType::Char;
            out.source = std::make_shared<MemorySource>(NcType::Char, std::move(shape), std::move(chars),
                                                        "in-memory ncstream variable");
        }
        ds.variables.push_back(std::move(out));
    }
    return ds;
}

}  // namespace ncafs::ncstream
