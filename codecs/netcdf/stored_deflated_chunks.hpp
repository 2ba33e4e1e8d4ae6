// The stored chunks of a netCDF-4 variable handed out as they lie
// (deflated_chunks.hpp), from the plan its raw chunk reader keeps
// (raw_chunks.hpp): only a pipeline of deflate, or shuffle then deflate
// (the shuffle over whole elements), is one a Zarr v2 reader decodes as
// HDF5 encoded it. The chunk index came from the file's survey, maybe a
// helper's answer: every place is checked before any is handed out.
#pragma once

#include <memory>
#include <string>

#include "codecs/deflated_chunks.hpp"
#include "codecs/netcdf/raw_chunks.hpp"

namespace ncafs::netcdf {

// Null when the pipeline is another, a chunk was stored without some of its
// filters, or one never written has no known fill (nothing said); null with
// *why saying which place is unsound (beyond the
// file, above max_stored_bytes(plan), overlapping another chunk).
std::shared_ptr<const DeflatedChunks> stored_deflated_chunks(const RawChunkPlan& plan,
                                                             std::shared_ptr<const OpenFile> file,
                                                             std::vector<uint8_t> fill, std::string* why);

}  // namespace ncafs::netcdf
