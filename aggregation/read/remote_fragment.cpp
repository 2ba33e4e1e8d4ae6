#include "aggregation/read/remote_fragment.hpp"

#include "codecs/sniff.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::agg {

RemoteFragmentFile open_remote_fragment(const std::string& url) {
    auto& store = remote::RemoteStore::shared();
    std::shared_ptr<const RemoteBytes> object = store.open(url);
    auto file = OpenFile::remote(object);
    RemoteFragmentFile r{file->identity(), file};
    if (sniff_file(*file) == FileFormat::Hdf5) r.read_from = store.local_copy(*object);
    return r;
}

}  // namespace ncafs::agg
