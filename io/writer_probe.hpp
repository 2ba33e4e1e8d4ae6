// Whether another process holds a file open for writing right now, asked
// with a read lease (fcntl F_SETLEASE, taken and dropped at once): the
// kernel grants one only while no descriptor of the file is open for
// writing. A write(2) in progress needs such a descriptor, so "no writer"
// means no write is under way at that moment. Leases need the file's owner
// or CAP_LEASE and a file system that has them; otherwise the answer is
// Unknown. The leases themselves are counted per descriptor here, so that
// a probe and a lease held for a read (read_lease.hpp) on one descriptor
// do not drop each other's.
#pragma once

namespace ncafs {

enum class Writers { None, Some, Unknown };

Writers writers_of(int fd);

// Takes (or joins, when this descriptor holds one already) a read lease on
// fd; false when the kernel refuses (errno set: EAGAIN for a writer).
bool take_read_lease(int fd);
// Drops one take; the lease goes with the last.
void drop_read_lease(int fd);

}  // namespace ncafs
