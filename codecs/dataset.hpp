// The format-neutral dataset model every reader produces and every layout
// (CDF, ds, ncstream) consumes: dimensions, attributes, variables, and for
// each variable the ArraySource of its values.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/types.hpp"
#include "io/metadata_budget.hpp"

namespace ncafs {

class ArraySource;

struct Dimension {
    std::string name;
    uint64_t length = 0;     // current length (number of records for the unlimited one)
    bool unlimited = false;  // the record dimension of a CDF file
};

// Text attributes read from a file keep this many spare bytes of capacity
// after their values: SIMD JSON parsers (aggregation/json) read past the end.
constexpr size_t kTextAttributeSpareBytes = 64;

struct Attribute {
    std::string name;
    NcType type = NcType::Char;
    std::vector<uint8_t> values;  // length() elements of `type`, native byte order

    size_t length() const { return values.size() / type_size(type); }
    // Char attributes as text (no trailing NUL removal: bytes as stored).
    std::string as_text() const { return std::string(values.begin(), values.end()); }
    double as_double(size_t i = 0) const { return element_as_double(type, values.data(), i); }

    static Attribute text(std::string name, std::string_view value);
    // Builds a numeric attribute from native values of the matching C++ type.
    template <typename T>
    static Attribute numeric(std::string name, NcType type, const std::vector<T>& v) {
        Attribute a{std::move(name), type, {}};
        a.values.resize(v.size() * sizeof(T));
        if (!v.empty()) std::memcpy(a.values.data(), v.data(), a.values.size());
        return a;
    }
};

struct Variable {
    std::string name;
    NcType type = NcType::Double;
    std::vector<size_t> dimids;  // indices into Dataset::dimensions, outermost first
    std::vector<Attribute> attributes;
    std::shared_ptr<const ArraySource> source;  // values; shape equals the dimension lengths

    const Attribute* find_attribute(std::string_view name) const;
};

// Something a reader left out of the dataset, or refuses to read (for the
// log, `check` and `inspect`: "ORIGIN: TEXT").
struct DatasetNote {
    bool refused = false;  // refused for safety (check: a problem); else only left out (a warning)
    bool listed = false;   // the item stays in the dataset: each read of it fails and says why
    std::string name;      // the variable (or link) of this group it concerns; "" for none
    std::string text;      // why, without the file's name
};

struct Dataset {
    std::string origin;  // the file it was read from, for messages
    std::vector<DatasetNote> notes;
    std::vector<Dimension> dimensions;
    std::vector<Attribute> attributes;  // global
    std::vector<Variable> variables;
    // What its metadata was counted at (io/metadata_budget.hpp), held while it lives.
    std::shared_ptr<const MetadataCharge> charge;

    // Index of the unlimited dimension, if any.
    std::optional<size_t> unlimited_dimension() const;
    std::vector<uint64_t> shape(const Variable& v) const;
    const Variable* find_variable(std::string_view name) const;
    const Attribute* find_attribute(std::string_view name) const;
    std::optional<size_t> find_dimension(std::string_view name) const;
};

// Product of the lengths (1 for a scalar); saturates at UINT64_MAX instead of wrapping.
uint64_t element_count(std::span<const uint64_t> shape);

}  // namespace ncafs
