#include "codecs/open_dataset.hpp"

#include <algorithm>

#include "codecs/cdf/cdf_dataset.hpp"
#include "codecs/cdf/header_reader.hpp"
#include "codecs/ds/ds_reader.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "codecs/netcdf/netcdf_dataset.hpp"
#include "codecs/sniff.hpp"
#include "codecs/vds/vds_reader.hpp"

namespace ncafs {

static_assert(kDatasetHeadBytes == cdf::kHeaderFirstRead, "one read serves the sniff and a classic header");

Dataset open_dataset(const std::string& path) {
    // Fail here with the real reason (ENOENT, EACCES, EMFILE, a FIFO...)
    // rather than let netcdf-c guess at a file we could not even open.
    return open_dataset(OpenFile::open(path));
}

namespace {

Dataset read_dataset(std::shared_ptr<const OpenFile> file, const std::string& group) {
    if (!group.empty()) return netcdf::open_netcdf_dataset(std::move(file), nullptr, group);
    // A local file's first bytes serve both the sniff and a classic header
    // (one pread, checked, where a sniff and a header read were two).
    const size_t head_size = static_cast<size_t>(std::min<uint64_t>(file->size(), kDatasetHeadBytes));
    std::vector<uint8_t> head = file->take_head();  // read and checked at the open (open_with_head)
    if (!file->is_remote() && head.size() != head_size) {
        head.resize(head_size);
        file->pread_exact(head.data(), head.size(), 0);
    }
    const FileFormat format = file->is_remote() ? sniff_file(*file) : sniff_format(head);
    if (format == FileFormat::Cdf) {  // by pread: no netcdf-c mutex, file extents for splicing
        Dataset ds = cdf::open_cdf_dataset(file, head);
        file->keep_first_read(std::move(head));  // a small file whole: its data read next comes from here
        return ds;
    }
    if (!head.empty()) file->keep_first_read(std::move(head));
    switch (format) {
        case FileFormat::Ds:
            return ds::open_ds_dataset(std::move(file));
        case FileFormat::Vds:
            return vds::open_vds_dataset(std::move(file));
        case FileFormat::Ncstream:
            return ncstream::open_ncstream_dataset(std::move(file));
        default:  // HDF5, and whatever else netcdf-c may know (it names the error)
            return netcdf::open_netcdf_dataset(std::move(file));
    }
}

}  // namespace

Dataset open_dataset(std::shared_ptr<const OpenFile> file, const std::string& group) {
    MetadataScope scope(file->path());  // the readers below count what they build
    Dataset ds = read_dataset(std::move(file), group);
    ds.charge = scope.take();
    return ds;
}

}  // namespace ncafs
