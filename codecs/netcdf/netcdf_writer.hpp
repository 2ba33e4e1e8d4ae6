// Writing a netCDF file with netcdf-c, for ncafs' own output (`ncafs
// aggregate` writes its CF-1.13 aggregation files so): the caller describes
// the file (OutputFile, no netcdf-c in it), the gateway writes it, each call
// under the library lock, each failure a SourceError naming the output and
// what was being written. No user's file is opened.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "codecs/dataset.hpp"

namespace ncafs::netcdf {

enum class OutputFormat { Classic64BitOffset, Cdf5, Netcdf4 };

struct OutputDimension {
    std::string name;
    uint64_t length = 0;
    bool unlimited = false;
};

struct OutputVariable {
    std::string name;
    NcType type = NcType::Char;
    bool is_string = false;              // a netCDF-4 string variable (type unused)
    std::vector<std::string> dims;       // names of the file's dimensions, outermost first
    std::vector<Attribute> attributes;   // char ones written as their bytes
};

// Native elements of the variable's type (nothing written when empty).
struct ElementBytes {
    std::span<const uint8_t> bytes;
};
// Converted to the variable's integer type by netcdf-c.
struct Integers {
    std::vector<long long> values;
};
// Into a string variable, or NUL-padded to a char variable's last dimension.
struct Strings {
    std::vector<std::string> values;
};
// The same, element i being (*values)[(*picks)[i]]: many, shared, not copied.
struct PickedStrings {
    const std::vector<std::string>* values = nullptr;
    const std::vector<size_t>* picks = nullptr;
};

// A whole variable's values, written after the definitions.
struct OutputValues {
    std::string variable;
    std::variant<ElementBytes, Integers, Strings, PickedStrings> data;
    std::string what;  // names them in an error message
};

struct OutputFile {
    OutputFormat format = OutputFormat::Netcdf4;
    std::vector<OutputDimension> dimensions;  // defined in this order
    std::vector<Attribute> attributes;        // global, char ones written as their bytes
    std::vector<OutputVariable> variables;    // defined in this order, each with its attributes
    std::vector<OutputValues> values;         // written in this order
};

// Creates (clobbers) `path` and writes `file` into it; `shown` names it in
// messages. On an error the file is closed and its bytes are not to be kept.
void write_netcdf_file(const std::string& path, const std::string& shown, const OutputFile& file);

}  // namespace ncafs::netcdf
