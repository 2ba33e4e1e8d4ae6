// A Zarr v2 or v3 directory store as a Dataset. The store is a folder
// holding ".zgroup" or ".zarray" (v2) or "zarr.json" (v3); the arrays shown
// are those at its top (or the store itself when it is one array, named
// after the folder without ".zarr"), built like a reference set's arrays
// (aggregation/reference_set): dimensions from _ARRAY_DIMENSIONS or
// dimension_names, attributes, _FillValue from fill_value. Sub-groups and
// arrays that cannot be shown are left out, each with a note. Opening reads
// the top folder's listing and each array's metadata, never a chunk; at most
// kMaxZarrArrays arrays (the rest left out with one note) and
// max_metadata bytes of metadata. docs/zarr.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/read/open_aggregation.hpp"
#include "aggregation/zarr_store/zarr_chunk_readers.hpp"
#include "codecs/dataset.hpp"
#include "io/confined_open.hpp"

namespace ncafs {

// Arrays shown of one store: each costs its metadata and, in a .vds view, a
// channel (about 90 KB of memory when the view is planned).
inline constexpr uint64_t kMaxZarrArrays = 1'000;
// Entries of the store's top folder looked at when listing its arrays.
inline constexpr uint64_t kMaxZarrTopEntries = 1'000'000;
// The files whose presence in a folder makes it a Zarr store.
inline constexpr const char* kZarrStoreMarkers[] = {".zgroup", ".zarray", "zarr.json"};

// path: the store's folder, opened through `confined` (beneath SOURCE).
// Throws SourceError naming the store and the reason.
std::shared_ptr<const Dataset> open_zarr_store(const std::string& path, const ConfinedRoots& confined,
                                               const AggregationOptions& options);

// The folder of a store, opened confined (SourceError naming it when refused or missing).
UniqueFd open_store_folder(const std::string& path, const ConfinedRoots& confined);
// A local store named as a fragment of an aggregation, its folder (or the
// folder of the group read) open. With readers (allow_other: the caller
// check covers the store's folder only, and `readers` are who may read it,
// agg::readers_of), every member read must be readable by all of them (as
// chunks are against their array's metadata file, docs/zarr.md
// "Confinement"), else that read fails.
std::shared_ptr<const Dataset> open_zarr_fragment_store(UniqueFd folder, const std::string& path,
                                                        std::optional<agg::ZarrReaders> readers);

// A store on an HTTP(S) server or in S3 (url: its root, http://, https://
// or s3://), read through remote/ (agg::RemoteZarrPrefix); with `group`
// ("/a/b"), the store's sub-group at that path. Reads the metadata only.
// Throws SourceError naming the URL and the reason.
std::shared_ptr<const Dataset> open_remote_zarr_store(const std::string& url, const std::string& group,
                                                      const AggregationOptions& options);

// The store's folder, its arrays' folders and the metadata files read: what
// the caller check tests under allow_other (chunk files are not listed).
std::vector<std::string> zarr_store_files(const Dataset& dataset);

}  // namespace ncafs
