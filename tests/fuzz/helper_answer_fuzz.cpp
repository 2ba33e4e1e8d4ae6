// libFuzzer target for a netCDF-4 helper's answer as the daemon decodes it
// (codecs/netcdf/survey_wire.hpp): the helper is assumed subverted by the
// file it read, so any bytes may arrive. Decoding must end in an answer or
// std::runtime_error; a decoded answer's description and survey are then
// used as the daemon uses them (chunk plans, chunk places, cache layouts),
// and rows of terms (alone, or several with the inventory) gathered and
// checked as TermReader does, which must end in a result or SourceError
//. Anything else (crash, other
// exception, sanitizer report, hang, an allocation beyond the input's
// bytes) is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "codecs/error.hpp"
#include "codecs/netcdf/chunked_read.hpp"
#include "codecs/netcdf/netcdf_terms.hpp"
#include "codecs/netcdf/raw_chunks.hpp"
#include "codecs/netcdf/survey_wire.hpp"

namespace {

using namespace ncafs::netcdf;

void use_description(const HelperAnswer& answer) {
    const NetcdfDescription& d = *answer.description;
    static DecodedChunkCache cache(1 << 20);
    for (const VariableDescription& v : d.variables) {
        std::vector<uint64_t> shape;
        for (size_t id : v.dimids) shape.push_back(d.dimensions.at(id).length);
        (void)chunk_layout_of(v.chunk_lengths, ncafs::type_size(v.type), shape, 1, largest_kept_chunk(cache));
        if (!answer.survey) continue;
        (void)find_contiguous(*answer.survey, d.group_path, v.name, v.type);
        const auto plan = plan_raw_chunks(*answer.survey, d.group_path, v.name, v.type, shape, 1 << 20);
        if (!plan) continue;
        const std::vector<uint64_t> first(shape.size(), 0);
        (void)locate_chunk(*plan, first, "fuzz.nc");
        (void)chunk_never_written(*plan, first, "fuzz.nc");
    }
}

// The daemon's reader of terms, given the rows a helper answered: every
// part kept as the inventory's rows are, the term alone as the only rows.
class AnsweredRows final : public TermReader {
public:
    explicit AnsweredRows(const HelperAnswer& answer) : TermReader("fuzz.nc"), term_(answer.term) {
        for (const TermArray& t : answer.terms) asked_.push_back(t.path);
        keep_first_rows(asked_, answer.terms);
    }
    void read_all() const {
        for (const std::string& path : asked_) use_term(read(path));
        if (term_) use_term(read(term_->path));
    }

private:
    TermArray rows(const std::string& full, uint64_t first_row) const override {
        if (!term_ || first_row > 0) throw ncafs::SourceError("fuzz.nc", "no more rows of " + full);
        return *term_;
    }
    static void use_term(const TermArray& t) {
        for (uint64_t i = 0; i < t.elements(); ++i) (void)t.text_at(i), (void)t.integer_at(i), (void)t.raw_at(i);
    }
    std::optional<TermArray> term_;
    std::vector<std::string> asked_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const HelperAnswer answer = decode_answer(std::vector<uint8_t>(data, data + size));
        if (answer.description) use_description(answer);
        if (answer.term || !answer.terms.empty()) AnsweredRows(answer).read_all();
    } catch (const ncafs::SourceError&) {
    } catch (const std::runtime_error&) {
    }
    return 0;
}
