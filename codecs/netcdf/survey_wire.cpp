#include "codecs/netcdf/survey_wire.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "codecs/checked_math.hpp"

namespace ncafs::netcdf {

namespace {

constexpr uint32_t kMagic = 0x4e434832;  // "NCH2": version 2 (term rows of several variables at once)
constexpr uint64_t kMaxStorageRank = 32;
constexpr uint64_t kMaxText = 1 << 16;
constexpr uint64_t kMaxItems = uint64_t{1} << 20;  // dimensions, variables, attributes, notes of one group
constexpr uint64_t kMaxVariableRank = 1024;       // NC_MAX_VAR_DIMS
constexpr uint64_t kMaxTermInventoryItems = uint64_t{1} << 20;  // variables of a file's inventory
constexpr uint64_t kMinTermBytes = 88;  // an encoded TermArray's eleven counts and words

class Writer {
public:
    void u64(uint64_t v) { bytes_.insert(bytes_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); }
    void text(const std::string& s) {
        u64(s.size());
        bytes_.insert(bytes_.end(), s.begin(), s.end());
    }
    void list(const std::vector<uint64_t>& v) {
        u64(v.size());
        for (uint64_t x : v) u64(x);
    }
    void blob(const std::vector<uint8_t>& v) {
        u64(v.size());
        bytes_.insert(bytes_.end(), v.begin(), v.end());
    }
    void texts(const std::vector<std::string>& v) {
        u64(v.size());
        for (const auto& s : v) text(s);
    }
    std::vector<uint8_t> take() { return std::move(bytes_); }

private:
    std::vector<uint8_t> bytes_;
};

class Reader {
public:
    explicit Reader(const std::vector<uint8_t>& b) : bytes_(b) {}
    uint64_t u64() {
        need(8);
        uint64_t v;
        std::memcpy(&v, bytes_.data() + at_, 8);
        at_ += 8;
        return v;
    }
    // A count of items of at least `item` bytes each: no more than the bytes left hold.
    uint64_t count(uint64_t item, uint64_t most) {
        const uint64_t n = u64();
        if (n > most || n > (bytes_.size() - at_) / item) throw std::runtime_error("a count beyond its bound");
        return n;
    }
    std::string text() {
        const uint64_t n = count(1, kMaxText);
        std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
        at_ += n;
        return s;
    }
    std::vector<uint8_t> blob() {
        const uint64_t n = count(1, kMaxAnswerBytes);
        std::vector<uint8_t> v(bytes_.begin() + static_cast<ptrdiff_t>(at_), bytes_.begin() + static_cast<ptrdiff_t>(at_ + n));
        at_ += n;
        return v;
    }
    std::vector<uint64_t> list(uint64_t most) {
        std::vector<uint64_t> v(count(8, most));
        for (auto& x : v) x = u64();
        return v;
    }
    std::vector<std::string> texts(uint64_t most) {
        std::vector<std::string> v(count(8, most));
        for (auto& s : v) s = text();
        return v;
    }
    bool done() const { return at_ == bytes_.size(); }

private:
    void need(uint64_t n) const {
        if (bytes_.size() - at_ < n) throw std::runtime_error("truncated");
    }
    const std::vector<uint8_t>& bytes_;
    size_t at_ = 0;
};

void write_storage(Writer& w, const Hdf5Storage& s) {
    w.u64(s.pipeline.size());
    for (auto f : s.pipeline) w.u64(static_cast<uint64_t>(f));
    w.u64(s.shuffle_size);
    w.u64(s.type_size);
    w.u64(s.big_endian);
    w.list(s.dims);
    w.list(s.chunk);
    w.u64(s.chunks.size());
    for (const StoredChunk& c : s.chunks) w.u64(c.address), w.u64(c.size);
}

// The chunk positions of dims over chunk (nullopt: a zero chunk length or overflow).
std::optional<uint64_t> grid_positions(const std::vector<uint64_t>& dims, const std::vector<uint64_t>& chunk) {
    std::optional<uint64_t> n = 1;
    for (size_t d = 0; d < dims.size() && n; ++d) {
        if (chunk[d] == 0) return std::nullopt;
        n = checked::mul(*n, dims[d] == 0 ? 0 : (dims[d] - 1) / chunk[d] + 1);
    }
    return n;
}

std::shared_ptr<const Hdf5Storage> read_storage(Reader& r, uint64_t& budget) {
    auto s = std::make_shared<Hdf5Storage>();
    const uint64_t filters = r.count(8, 8);
    for (uint64_t i = 0; i < filters; ++i) {
        const uint64_t f = r.u64();
        if (f > static_cast<uint64_t>(Hdf5Storage::Filter::Fletcher32)) throw std::runtime_error("an unknown filter");
        s->pipeline.push_back(static_cast<Hdf5Storage::Filter>(f));
    }
    s->shuffle_size = r.u64();
    s->type_size = r.u64();
    s->big_endian = r.u64() != 0;
    s->dims = r.list(kMaxStorageRank);
    s->chunk = r.list(kMaxStorageRank);
    // The shuffle's element size counts only with a shuffle: deflate or fletcher32 alone leave it 0.
    const bool shuffled = std::count(s->pipeline.begin(), s->pipeline.end(), Hdf5Storage::Filter::Shuffle) > 0;
    if ((shuffled && (s->shuffle_size == 0 || s->shuffle_size > 1024)) || s->type_size == 0 || s->type_size > 8 ||
        s->dims.size() != s->chunk.size() || s->dims.empty())
        throw std::runtime_error("a storage out of bounds");
    const auto positions = grid_positions(s->dims, s->chunk);
    const uint64_t n = r.count(16, budget);
    if (!positions || *positions != n) throw std::runtime_error("a chunk index of the wrong length");
    budget -= n;
    s->chunks.resize(n);
    for (StoredChunk& c : s->chunks) c.address = r.u64(), c.size = r.u64();
    return s;
}

void write_survey(Writer& w, const Hdf5Survey& survey) {
    w.u64(survey.file_size);
    w.u64(survey.indirections.has_value());
    if (survey.indirections) {
        w.u64(survey.indirections->datasets().size());
        for (const auto& [path, finding] : survey.indirections->datasets()) {
            w.text(path);
            w.u64(finding ? 1 + static_cast<uint64_t>(finding->kind) : 0);
            if (finding) w.text(finding->path), w.text(finding->target);
        }
    }
    w.u64(survey.storage.size());
    for (const auto& [path, s] : survey.storage) w.text(path), write_storage(w, *s);
    w.u64(survey.contiguous.size());
    for (const auto& [path, c] : survey.contiguous)
        w.text(path), w.u64(c.type_size), w.u64(c.big_endian), w.u64(c.at.address), w.u64(c.at.size);
}

Hdf5Survey read_survey(Reader& r) {
    Hdf5Survey survey;
    survey.file_size = r.u64();
    if (r.u64()) {
        Hdf5Indirections::Datasets datasets;
        std::vector<Hdf5Indirections::Finding> findings;
        const uint64_t n = r.count(16, 100000 + 1);
        for (uint64_t i = 0; i < n; ++i) {
            std::string path = r.text();
            const uint64_t kind = r.u64();
            if (kind > 1 + static_cast<uint64_t>(Hdf5IndirectionKind::ExternalLink)) throw std::runtime_error("an unknown kind");
            std::optional<Hdf5Indirections::Finding> f;
            if (kind) {
                f = Hdf5Indirections::Finding{static_cast<Hdf5IndirectionKind>(kind - 1), r.text(), r.text()};
                findings.push_back(*f);
            }
            datasets[std::move(path)] = std::move(f);
        }
        survey.indirections = Hdf5Indirections::from_parts(std::move(datasets), std::move(findings));
    }
    uint64_t budget = kMaxSurveyedChunks;
    const uint64_t n = r.count(8, 100000);
    for (uint64_t i = 0; i < n; ++i) {
        std::string path = r.text();
        survey.storage[std::move(path)] = read_storage(r, budget);
    }
    const uint64_t contiguous = r.count(40, 100000);
    for (uint64_t i = 0; i < contiguous; ++i) {
        std::string path = r.text();
        Hdf5Contiguous c;
        c.type_size = r.u64();
        c.big_endian = r.u64() != 0;
        c.at.address = r.u64(), c.at.size = r.u64();
        if (c.type_size == 0 || c.type_size > 8) throw std::runtime_error("a contiguous storage out of bounds");
        survey.contiguous[std::move(path)] = c;
    }
    return survey;
}

void write_attributes(Writer& w, const std::vector<Attribute>& attributes) {
    w.u64(attributes.size());
    for (const Attribute& a : attributes) w.text(a.name), w.u64(static_cast<uint64_t>(a.type)), w.blob(a.values);
}

NcType read_type(Reader& r) {
    const uint64_t t = r.u64();
    if (t < 1 || t > 11) throw std::runtime_error("an unknown type");
    return static_cast<NcType>(t);
}

std::vector<Attribute> read_attributes(Reader& r) {
    std::vector<Attribute> out(r.count(24, kMaxItems));
    for (Attribute& a : out) {
        a.name = r.text();
        a.type = read_type(r);
        a.values = r.blob();
        if (a.values.size() % type_size(a.type) != 0) throw std::runtime_error("attribute values of a partial element");
    }
    return out;
}

void write_variable(Writer& w, const VariableDescription& v) {
    w.text(v.name);
    w.u64(static_cast<uint64_t>(v.type));
    w.u64(static_cast<uint64_t>(v.varid));
    w.list(std::vector<uint64_t>(v.dimids.begin(), v.dimids.end()));
    write_attributes(w, v.attributes);
    w.u64(v.refusal.has_value());
    if (v.refusal) w.text(*v.refusal);
    w.list(v.chunk_lengths);
    w.u64(v.filtered);
    w.blob(v.fill);
}

VariableDescription read_variable(Reader& r, size_t dimensions) {
    VariableDescription v;
    v.name = r.text();
    v.type = read_type(r);
    const uint64_t varid = r.u64();
    if (varid > (uint64_t{1} << 30)) throw std::runtime_error("a variable id out of bounds");
    v.varid = static_cast<int>(varid);
    for (uint64_t id : r.list(kMaxVariableRank)) {
        if (id >= dimensions) throw std::runtime_error("a variable of a dimension not described");
        v.dimids.push_back(static_cast<size_t>(id));
    }
    v.attributes = read_attributes(r);
    if (r.u64()) v.refusal = r.text();
    v.chunk_lengths = r.list(kMaxVariableRank);
    if (!v.chunk_lengths.empty() && v.chunk_lengths.size() != v.dimids.size())
        throw std::runtime_error("chunk lengths of another rank than the variable");
    v.filtered = r.u64() != 0;
    v.fill = r.blob();
    if (!v.fill.empty() && v.fill.size() != type_size(v.type)) throw std::runtime_error("a fill value of another size");
    return v;
}

void write_description(Writer& w, const NetcdfDescription& d) {
    w.text(d.group), w.text(d.group_path), w.u64(static_cast<uint64_t>(d.group_id));
    w.u64(d.dimensions.size());
    for (const Dimension& dim : d.dimensions) w.text(dim.name), w.u64(dim.length), w.u64(dim.unlimited);
    write_attributes(w, d.attributes);
    w.u64(d.variables.size());
    for (const VariableDescription& v : d.variables) write_variable(w, v);
    w.u64(d.notes.size());
    for (const DatasetNote& n : d.notes) w.u64(n.refused), w.u64(n.listed), w.text(n.name), w.text(n.text);
    w.u64(d.skipped.size());
    for (const std::string& line : d.skipped) w.text(line);
}

NetcdfDescription read_description(Reader& r) {
    NetcdfDescription d;
    d.group = r.text(), d.group_path = r.text();
    const uint64_t id = r.u64();
    if (id > 0xffff) throw std::runtime_error("a group number out of bounds");
    d.group_id = static_cast<int>(id);
    d.dimensions.resize(r.count(24, kMaxItems));
    for (Dimension& dim : d.dimensions) dim.name = r.text(), dim.length = r.u64(), dim.unlimited = r.u64() != 0;
    d.attributes = read_attributes(r);
    const uint64_t variables = r.count(80, kMaxItems);
    for (uint64_t i = 0; i < variables; ++i) d.variables.push_back(read_variable(r, d.dimensions.size()));
    d.notes.resize(r.count(32, kMaxItems));
    for (DatasetNote& n : d.notes) n.refused = r.u64() != 0, n.listed = r.u64() != 0, n.name = r.text(), n.text = r.text();
    d.skipped.resize(r.count(8, kMaxItems));
    for (std::string& line : d.skipped) line = r.text();
    return d;
}


void write_text_attributes(Writer& w, const TextAttributes& attributes) {
    w.u64(attributes.size());
    for (const auto& [name, value] : attributes) w.text(name), w.text(value);
}

TextAttributes read_text_attributes(Reader& r) {
    TextAttributes out(r.count(16, kMaxItems));
    for (auto& [name, value] : out) name = r.text(), value = r.text();
    return out;
}

void write_inventory(Writer& w, const TermInventory& inventory) {
    w.u64(inventory.variables.size());
    for (const TermVariable& v : inventory.variables) w.text(v.path), w.texts(v.dims), write_text_attributes(w, v.text_attributes);
}

TermInventory read_inventory(Reader& r) {
    TermInventory inventory;
    inventory.variables.resize(r.count(24, kMaxTermInventoryItems));
    for (TermVariable& v : inventory.variables)
        v.path = r.text(), v.dims = r.texts(kMaxVariableRank), v.text_attributes = read_text_attributes(r);
    return inventory;
}

// Rows of a term variable. Only what bounds memory is checked here; that the
// parts agree (ends, masks, element counts) is netcdf_terms.cpp's to check.
void write_term(Writer& w, const TermArray& t) {
    w.text(t.path), w.texts(t.dims), w.list(t.shape);
    w.u64(t.is_text), w.u64(t.numeric_type ? static_cast<uint64_t>(*t.numeric_type) : 0);
    w.blob(std::vector<uint8_t>(t.text_bytes.begin(), t.text_bytes.end()));
    w.list(t.text_end);
    w.blob(t.bytes);
    w.list(std::vector<uint64_t>(t.ints.begin(), t.ints.end()));
    w.blob(std::vector<uint8_t>(t.masked.begin(), t.masked.end()));
    write_text_attributes(w, t.text_attributes);
}

TermArray read_term(Reader& r) {
    TermArray t;
    t.path = r.text(), t.dims = r.texts(kMaxVariableRank), t.shape = r.list(kMaxVariableRank);
    t.is_text = r.u64() != 0;
    if (const uint64_t type = r.u64(); type != 0) {
        if (type > 11) throw std::runtime_error("an unknown type");
        t.numeric_type = static_cast<NcType>(type);
    }
    const std::vector<uint8_t> text = r.blob();
    t.text_bytes.assign(text.begin(), text.end());
    t.text_end = r.list(kMaxTermElements);
    t.bytes = r.blob();
    for (uint64_t v : r.list(kMaxTermElements)) t.ints.push_back(static_cast<int64_t>(v));
    const std::vector<uint8_t> masked = r.blob();
    t.masked.assign(masked.begin(), masked.end());
    t.text_attributes = read_text_attributes(r);
    return t;
}

}  // namespace

std::vector<uint8_t> encode_answer(const HelperAnswer& answer) {
    Writer w;
    w.u64(kMagic);
    w.text(answer.diagnostic);
    const bool batched = answer.inventory && !answer.terms.empty();
    const uint64_t kind = answer.error       ? 2
                          : answer.values    ? 3
                          : batched          ? 6
                          : answer.inventory ? 4
                          : answer.term      ? 5
                          : answer.survey    ? 1
                                             : 0;
    w.u64(kind);
    if (kind == 2) return w.text(*answer.error), w.take();
    if (kind == 3) return w.blob(*answer.values), w.take();
    if (kind == 4) return write_inventory(w, *answer.inventory), w.take();
    if (kind == 5) return write_term(w, *answer.term), w.take();
    if (kind == 6) {
        write_inventory(w, *answer.inventory);
        w.u64(answer.terms.size());
        for (const TermArray& t : answer.terms) write_term(w, t);
        return w.take();
    }
    if (answer.survey) write_survey(w, *answer.survey);
    w.u64(answer.description.has_value());
    if (answer.description) write_description(w, *answer.description);
    return w.take();
}

std::vector<uint8_t> encode_request(const HelperRequest& request) {
    Writer w;
    w.u64(kMagic);
    w.text(request.shown.substr(0, 4096)), w.text(request.group);
    w.u64(request.values), w.u64(static_cast<uint64_t>(request.varid));
    w.list(request.start), w.list(request.count);
    w.u64(static_cast<uint64_t>(request.terms));
    w.texts(request.term_paths);
    return w.take();
}

HelperRequest decode_request(const std::vector<uint8_t>& bytes) {
    Reader r(bytes);
    if (r.u64() != kMagic) throw std::runtime_error("not a helper request");
    HelperRequest request;
    request.shown = r.text(), request.group = r.text();
    request.values = r.u64() != 0;
    request.varid = static_cast<int>(r.u64() & 0x3fffffff);
    request.start = r.list(kMaxVariableRank), request.count = r.list(kMaxVariableRank);
    if (request.start.size() != request.count.size()) throw std::runtime_error("a box of two ranks");
    const uint64_t terms = r.u64();
    if (terms > static_cast<uint64_t>(TermAsk::InventoryAndRows)) throw std::runtime_error("an unknown request of terms");
    request.terms = static_cast<TermAsk>(terms);
    request.term_paths = r.texts(kMaxBatchedTerms);
    if (!r.done()) throw std::runtime_error("bytes after the request");
    return request;
}

HelperAnswer decode_answer(const std::vector<uint8_t>& bytes) {
    Reader r(bytes);
    if (r.u64() != kMagic) throw std::runtime_error("not a helper answer");
    HelperAnswer answer;
    answer.diagnostic = r.text();
    const uint64_t kind = r.u64();
    if (kind > 6) throw std::runtime_error("an unknown answer");
    if (kind == 2) answer.error = r.text();
    if (kind == 3) answer.values = r.blob();
    if (kind == 4) answer.inventory = read_inventory(r);
    if (kind == 5) answer.term = read_term(r);
    if (kind == 6) {
        answer.inventory = read_inventory(r);
        answer.terms.resize(r.count(kMinTermBytes, kMaxBatchedTerms));
        for (TermArray& t : answer.terms) t = read_term(r);
    }
    if (kind == 1) answer.survey = read_survey(r);
    if (kind < 2 && r.u64()) answer.description = read_description(r);
    if (!r.done()) throw std::runtime_error("bytes after the answer");
    return answer;
}

}  // namespace ncafs::netcdf
