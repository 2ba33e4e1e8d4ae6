// With allow_other, who may read a Zarr store's chunk files. The caller check
// (fs/caller_access) covers each array's folder and metadata file, not the
// chunk files (there may be millions), and reads do not know their caller:
// a chunk file, and each folder between it and its array's folder, is served
// only when whoever could read the array's metadata file could read it too,
// judged from its fstat when it is opened. Otherwise the read fails for every
// caller (docs/zarr.md "Confinement").
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace ncafs::agg {

// The readers of a file the caller check tested: its owner, group, the read
// bits of its mode (0444 at most), and whether the mode alone does not say
// who they are (an access ACL, or an owner that changed).
struct ZarrReaders {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t read_bits = 0;
    bool beyond_mode = false;
};

// The readers of the open file fd.
ZarrReaders readers_of(int fd);
// Everyone either a or b grants: the metadata file when the store was opened
// and now (a caller may have been judged at either time).
ZarrReaders readers_of_both(const ZarrReaders& a, const ZarrReaders& b);

// Why the member at fd (stat st; a folder must be searchable, a file
// readable) could be read by fewer users than `checked` ("" when not).
std::string fewer_readers_than(int fd, const struct stat& st, const ZarrReaders& checked);

}  // namespace ncafs::agg
