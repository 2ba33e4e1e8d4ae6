// The ncstream view of a dataset: a VirtualFile holding the uncompressed
// ncafs profile (docs/formats/ncstream.md, "The profile we write") — MAGIC_START, one header, one
// big-endian v1 data message per variable (per slab for payloads of 2 GiB and
// more), MAGIC_END. Size and offsets come from metadata alone; reads are lazy
// and random-access, payload bytes come from each variable's ArraySource
// (passed through as file extents where the source has them).
#pragma once

#include <memory>
#include <string>

#include "codecs/dataset.hpp"
#include "codecs/virtual_file.hpp"

namespace ncafs {

// `location` goes into Header.location (the virtual path); empty means the
// dataset's origin. Throws UsageError for a dataset the profile cannot hold.
std::shared_ptr<const VirtualFile> make_ncstream_view(std::shared_ptr<const Dataset> dataset,
                                                      std::string location = {});

}  // namespace ncafs
