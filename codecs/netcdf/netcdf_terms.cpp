#include "codecs/netcdf/netcdf_terms.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "codecs/cdf/header_reader.hpp"
#include "codecs/checked_math.hpp"
#include "codecs/error.hpp"
#include "codecs/netcdf/library_calls.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/netcdf/netcdf_helpers.hpp"
#include "codecs/netcdf/survey_wire.hpp"
#include "codecs/netcdf/term_reading.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs::netcdf {

namespace {

// The elements one answer of rows holds, after checking that its parts
// agree with each other, with the answers before (`whole`, holding `done`
// elements) and with its claimed shape. Throws std::runtime_error.
uint64_t checked_elements(const TermArray& part, const std::string& full, const TermArray& whole, uint64_t done) {
    if (part.path != full) throw std::runtime_error("rows of another variable");
    if (part.dims.size() != part.shape.size()) throw std::runtime_error("a shape of another rank than its dimensions");
    std::optional<uint64_t> size = 1;
    for (uint64_t s : part.shape) size = size ? checked::mul(*size, s) : std::nullopt;
    if (!size || *size > kMaxTermElements) throw std::runtime_error("too many elements for a term variable");
    if (part.is_text == part.numeric_type.has_value()) throw std::runtime_error("neither text nor numbers");
    if (done > 0 && (part.dims != whole.dims || part.shape != whole.shape || part.is_text != whole.is_text ||
                     part.numeric_type != whole.numeric_type))
        throw std::runtime_error("rows of another shape or type than the rows before");
    const uint64_t n = part.masked.size();
    if (part.is_text) {
        if (part.text_end.size() != n || !part.bytes.empty() || !part.ints.empty())
            throw std::runtime_error("text of another element count than its masks");
        for (uint64_t i = 0, before = 0; i < n; before = part.text_end[i++])
            if (part.text_end[i] < before || part.text_end[i] > part.text_bytes.size())
                throw std::runtime_error("text ends out of order or past the text");
        if ((n ? part.text_end.back() : 0) != part.text_bytes.size()) throw std::runtime_error("text past its ends");
    } else {
        const bool integer = is_integer_type(*part.numeric_type);
        if (!part.text_end.empty() || !part.text_bytes.empty() || part.bytes.size() / type_size(*part.numeric_type) != n ||
            part.bytes.size() % type_size(*part.numeric_type) != 0 || part.ints.size() != (integer ? n : 0))
            throw std::runtime_error("values of another element count than their masks");
    }
    const uint64_t per_row = part.shape.empty() || part.shape[0] == 0 ? 1 : *size / part.shape[0];
    if (*size == 0 ? n != 0 : n == 0 || n % per_row != 0 || n > *size - done)
        throw std::runtime_error("rows that do not continue the rows before");
    return n;
}

// Appends the part's elements to whole (its header, from the first part).
void append_rows(TermArray& whole, TermArray&& part, bool first) {
    if (first) {
        whole.path = std::move(part.path), whole.dims = std::move(part.dims), whole.shape = std::move(part.shape);
        whole.is_text = part.is_text, whole.numeric_type = part.numeric_type;
        whole.text_attributes = std::move(part.text_attributes);
    }
    const uint64_t shift = whole.text_bytes.size();
    whole.text_bytes += part.text_bytes;
    for (uint64_t end : part.text_end) whole.text_end.push_back(shift + end);
    whole.bytes.insert(whole.bytes.end(), part.bytes.begin(), part.bytes.end());
    whole.ints.insert(whole.ints.end(), part.ints.begin(), part.ints.end());
    whole.masked.insert(whole.masked.end(), part.masked.begin(), part.masked.end());
}

// netcdf-c in this process: where no helpers run.
class InProcessTerms final : public TermReader {
public:
    explicit InProcessTerms(const OpenFile& file);
    ~InProcessTerms() override {
        LibraryLock lock;
        nc_close(ncid_);
    }

private:
    TermArray rows(const std::string& full, uint64_t first_row) const override;
    std::vector<char> image_;  // the file's bytes when opened in memory (see the constructor)
    int ncid_ = -1;
    // Term variables with HDF5 external storage or a virtual layout are never read.
    std::optional<Hdf5Indirections> indirections_;
};

// The CDF magic of netCDF classic files (CDF-1, -2, -5); false when unreadable.
bool is_classic_file(const OpenFile& file) {
    char magic[3] = {};
    if (file.size() < sizeof magic) return false;
    try {
        file.pread_exact(magic, sizeof magic, 0);
    } catch (const SourceError&) {
        return false;
    }
    return std::memcmp(magic, "CDF", sizeof magic) == 0;
}

InProcessTerms::InProcessTerms(const OpenFile& file) : TermReader(file.path()) {
    // netcdf-c 4.9.0 + HDF5: a second nc_open of a file that is already open
    // (the dataset cache holds it) makes string reads fail with "HDF error"
    // while a third file is open. An in-memory image is a separate HDF5
    // file, so aggregation files up to kMaxImage are read from a copy.
    // Classic files (CDF magic) do not go through HDF5 and are read in
    // place: a copy of a million fragments' names would only add to the peak.
    constexpr uint64_t kMaxImage = uint64_t{256} << 20;
    const bool classic = is_classic_file(file);
    if (!classic && file.size() > 0 && file.size() <= kMaxImage) {
        image_.resize(static_cast<size_t>(file.size()));
        try {
            file.pread_exact(image_.data(), image_.size(), 0);
        } catch (const SourceError&) {
            image_.clear();
        }
    }
    // Before netcdf-c opens it, by HDF5 on the copy (never a second HDF5
    // open of a file netcdf-c holds).
    if (!classic) indirections_ = indirections_before_open(file, image_);
    LibraryLock lock;
    int s = image_.empty() ? nc_open(file.proc_path().c_str(), NC_NOWRITE, &ncid_)
                           : nc_open_mem(shown_.c_str(), NC_NOWRITE, image_.size(), image_.data(), &ncid_);
    if (s != NC_NOERR) throw SourceError(shown_, "netcdf-c cannot open: " + nc_message(s));
    try {
        inventory_ = read_term_inventory(ncid_, shown_);
    } catch (...) {
        nc_close(ncid_);
        throw;
    }
}

// The refusal of the variable at `full` by what the HDF5 walk found, if any.
std::optional<std::string> refusal_of(const Hdf5Indirections* indirections, const std::string& full) {
    if (!indirections) return std::nullopt;
    const auto slash = full.rfind('/');
    const std::string group = slash == 0 || slash == std::string::npos ? "/" : full.substr(0, slash);
    return indirections->refusal(group, full.substr(slash == std::string::npos ? 0 : slash + 1));
}

TermArray InProcessTerms::rows(const std::string& full, uint64_t first_row) const {
    if (auto why = refusal_of(indirections_ ? &*indirections_ : nullptr, full)) throw SourceError(shown_, *why);
    LibraryLock lock;
    return read_term_rows(ncid_, shown_, full, first_row);
}

// A fresh helper per answer; netcdf-c never opens the file here.
class HelperTerms final : public TermReader {
public:
    HelperTerms(std::shared_ptr<const OpenFile> file, const std::vector<std::string>& wanted);

private:
    TermArray rows(const std::string& full, uint64_t first_row) const override;
    std::shared_ptr<const OpenFile> file_;
};

// The paths of `wanted` one request can carry (kMaxBatchedTerms, and well
// within kMaxRequestBytes); the others are asked alone.
std::vector<std::string> batchable(const std::vector<std::string>& wanted) {
    std::vector<std::string> out;
    uint64_t bytes = 0;
    for (const std::string& path : wanted) {
        if (out.size() == kMaxBatchedTerms || bytes + path.size() + 8 > kMaxRequestBytes / 2) break;
        if (std::find(out.begin(), out.end(), path) != out.end()) continue;
        bytes += path.size() + 8;
        out.push_back(path);
    }
    return out;
}

HelperTerms::HelperTerms(std::shared_ptr<const OpenFile> file, const std::vector<std::string>& wanted)
    : TermReader(file->path()), file_(std::move(file)) {
    cdf::check_classic_header(*file_);  // a malformed classic header: our parser's error, no library's
    HelperRequest request{shown_, ""};
    request.term_paths = batchable(wanted);
    request.terms = request.term_paths.empty() ? TermAsk::Inventory : TermAsk::InventoryAndRows;
    HelperAnswer answer = answer_in_helper(*file_, request);
    if (!answer.inventory) throw SourceError(shown_, "the netCDF-4 helper's answer is malformed: no inventory");
    uint64_t bytes = 0;
    for (const TermVariable& v : answer.inventory->variables) {
        if (v.path.empty() || v.path[0] != '/')
            throw SourceError(shown_, "the netCDF-4 helper's answer is malformed: a variable path not from the root");
        bytes += v.path.size();
        for (const auto& d : v.dims) bytes += d.size() + kNameCost;
        for (const auto& [name, value] : v.text_attributes) bytes += name.size() + value.size() + 2 * kNameCost;
    }
    charge_metadata(answer.inventory->variables.size(), sizeof(TermVariable) + kNameCost, "variables of term search");
    charge_metadata(bytes, 1, "bytes of variable names and text attributes");
    inventory_ = std::move(*answer.inventory);
    keep_first_rows(request.term_paths, std::move(answer.terms));
}

TermArray HelperTerms::rows(const std::string& full, uint64_t first_row) const {
    HelperRequest request{shown_, full, false, 0, {first_row}, {1}};
    request.terms = TermAsk::Rows;
    HelperAnswer answer = answer_in_helper(*file_, request);
    if (!answer.term) throw SourceError(shown_, "the netCDF-4 helper's answer is malformed: no rows of " + full);
    return std::move(*answer.term);
}

}  // namespace

void TermReader::take_rows(Gathering& g, const std::string& full, TermArray&& part) const {
    uint64_t n = 0;
    try {
        n = checked_elements(part, full, g.whole, g.done);
    } catch (const std::runtime_error& e) {
        throw SourceError(shown_, "variable " + full + ": malformed rows of a term variable: " + e.what());
    }
    charge_metadata(term_bytes(part), 1, "bytes of term variable values");
    const uint64_t size = part.size();
    const uint64_t per_row = part.shape.empty() || part.shape[0] == 0 ? 1 : size / part.shape[0];
    append_rows(g.whole, std::move(part), !g.started);
    g.started = true;
    g.done += n, g.next_row += n / per_row;
}

void TermReader::keep_first_rows(const std::vector<std::string>& asked, std::vector<TermArray> parts) {
    for (TermArray& part : parts) {
        const std::string full = part.path;
        if (std::find(asked.begin(), asked.end(), full) == asked.end() || kept_.count(full))
            throw SourceError(shown_, "variable " + full +
                                          ": malformed rows of a term variable: rows of a variable not asked for "
                                          "or answered twice");
        take_rows(kept_[full], full, std::move(part));
    }
}

TermArray TermReader::read(const std::string& full) const {
    Gathering g;
    if (auto kept = kept_.find(full); kept != kept_.end()) g = std::move(kept->second), kept_.erase(kept);
    while (!g.complete()) take_rows(g, full, rows(full, g.next_row));
    return std::move(g.whole);
}

std::unique_ptr<TermReader> open_term_reader(std::shared_ptr<const OpenFile> file,
                                             const std::vector<std::string>& wanted) {
    if (netcdf_helpers_started() && file->fd() >= 0) return std::make_unique<HelperTerms>(std::move(file), wanted);
    return std::make_unique<InProcessTerms>(*file);
}

TermInventory term_inventory_here(const std::string& path, const std::string& shown) {
    auto handle = NetcdfHandle::open(path, shown);
    LibraryLock lock;
    return read_term_inventory(handle->ncid(), shown);
}

TermArray term_rows_here(const std::string& path, const std::string& shown, const std::string& full,
                         uint64_t first_row) {
    auto handle = NetcdfHandle::open(path, shown);
    if (auto why = refusal_of(handle->indirections(), full)) throw SourceError(shown, *why);
    LibraryLock lock;
    return read_term_rows(handle->ncid(), shown, full, first_row);
}

std::pair<TermInventory, std::vector<TermArray>> term_inventory_and_rows_here(const std::string& path,
                                                                             const std::string& shown,
                                                                             const std::vector<std::string>& wanted) {
    auto handle = NetcdfHandle::open(path, shown);
    LibraryLock lock;
    std::pair<TermInventory, std::vector<TermArray>> out{read_term_inventory(handle->ncid(), shown), {}};
    std::set<std::string> held;
    for (const TermVariable& v : out.first.variables) held.insert(v.path);
    const uint64_t cap = term_rows_bytes();
    uint64_t used = 0;
    for (const std::string& full : wanted) {
        if (used >= cap) break;
        if (!held.count(full) || refusal_of(handle->indirections(), full)) continue;
        try {
            out.second.push_back(read_term_rows(handle->ncid(), shown, full, 0, cap - used));
            used += term_bytes(out.second.back());
        } catch (const std::exception&) {
            // Left out: the daemon asks for it alone and hears why.
        }
    }
    return out;
}

}  // namespace ncafs::netcdf
