// Whether another process holds a file open for writing right now, asked
// with a read lease (fcntl F_SETLEASE, taken and dropped at once): the
// kernel grants one only while no descriptor of the file is open for
// writing. A write(2) in progress needs such a descriptor, so "no writer"
// means no write is under way at that moment. Leases need the file's owner
// or CAP_LEASE and a file system that has them; otherwise the answer is
// Unknown.
#pragma once

namespace ncafs {

enum class Writers { None, Some, Unknown };

Writers writers_of(int fd);

}  // namespace ncafs
