// Helpers shared by the ncstream unit tests: temporary files, the CDL corpus
// through ncgen, values as netcdf-c reads them, and a hand-made ncstream file
// builder (framing written here, messages with the generated classes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/dataset.hpp"
#include "codecs/ncstream/ncstream.pb.h"

namespace ncafs::ncstream::testing {

// A fresh directory under the build tree (or /tmp).
std::string make_temp_dir();
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_file(const std::string& path);
// ncgen of tests/data/ncstream/NAME.cdl into dir (cdf5 for names starting "cdf5").
std::string make_corpus_file(const std::string& dir, const std::string& name);
std::vector<std::string> corpus_names();

// Every value of a source, native byte order.
std::vector<uint8_t> read_all(const ArraySource& src);

// netcdf-c's view of a file (all calls under netcdf_library_mutex()).
struct NetcdfVariable {
    std::string name;
    int type = 0;
    std::vector<std::string> dims;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> values;  // native order
    std::vector<Attribute> attributes;
};
struct NetcdfFileContents {
    std::vector<Dimension> dims;
    std::vector<Attribute> attributes;
    std::vector<NetcdfVariable> variables;
};
NetcdfFileContents read_with_netcdf_c(const std::string& path);
// Hyperslab of one variable through nc_get_vara.
std::vector<uint8_t> netcdf_c_vara(const std::string& path, const std::string& var, const std::vector<uint64_t>& start,
                                   const std::vector<uint64_t>& count);

// Builds an ncstream byte string message by message.
class StreamBuilder {
public:
    StreamBuilder& start();                       // MAGIC_START
    StreamBuilder& header(const pb::Header& h);   // MAGIC_HEADER, vlenb, bytes
    // MAGIC_DATA, vlenb, Data, vlenb, payload
    StreamBuilder& data(const pb::Data& d, const std::vector<uint8_t>& payload);
    StreamBuilder& raw(const std::vector<uint8_t>& bytes);
    StreamBuilder& varint(uint64_t v);
    StreamBuilder& end();                         // MAGIC_END
    const std::vector<uint8_t>& bytes() const { return bytes_; }

private:
    std::vector<uint8_t> bytes_;
};

}  // namespace ncafs::ncstream::testing
