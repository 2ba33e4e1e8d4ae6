#include "aggregation/zarr_store/zarr_chunk_readers.hpp"

#include <sys/xattr.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ncafs::agg {

namespace {

// An access ACL makes the mode's group bits a mask and grants named users
// and groups: the mode alone then no longer says who may read.
bool has_access_acl(int fd) { return ::fgetxattr(fd, "system.posix_acl_access", nullptr, 0) > 0; }

std::string octal(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

}  // namespace

ZarrReaders readers_of(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw std::runtime_error(std::string("cannot stat metadata: ") + std::strerror(errno));
    return ZarrReaders{st.st_uid, st.st_gid, static_cast<mode_t>(st.st_mode & 0444), has_access_acl(fd)};
}

ZarrReaders readers_of_both(const ZarrReaders& a, const ZarrReaders& b) {
    ZarrReaders both = a;
    both.read_bits |= b.read_bits;
    both.beyond_mode = a.beyond_mode || b.beyond_mode || a.uid != b.uid || a.gid != b.gid;
    return both;
}

std::string fewer_readers_than(int fd, const struct stat& st, const ZarrReaders& checked) {
    // A folder is passed through with its x bits, a file read with its r bits.
    const mode_t granted = static_cast<mode_t>((S_ISDIR(st.st_mode) ? st.st_mode << 2 : st.st_mode) & 0444);
    const bool acl = has_access_acl(fd);
    if (granted == 0444 && !acl) return "";  // every user may read it
    const std::string what = "mode " + octal(st.st_mode) + ", owner " + std::to_string(st.st_uid) + ":" +
                             std::to_string(st.st_gid) + (acl ? ", an ACL" : "") +
                             "; its array's metadata file: mode " + octal(checked.read_bits) + " readable, owner " +
                             std::to_string(checked.uid) + ":" + std::to_string(checked.gid) +
                             (checked.beyond_mode ? ", an ACL or a new owner" : "");
    if (acl || checked.beyond_mode)
        return "an ACL on it, or an ACL or a new owner on its array's metadata file, and not readable by all (" +
               what + ")";
    if (st.st_uid != checked.uid || st.st_gid != checked.gid)
        return "another owner or group than its array's metadata file and not readable by all (" + what + ")";
    if ((granted & checked.read_bits) != checked.read_bits)
        return "less readable than its array's metadata file (" + what + ")";
    return "";
}

}  // namespace ncafs::agg
