#!/usr/bin/python3
"""`ncafs aggregate` at any number of partitions: paths from
a list file or standard input (--files-from FILE|-), directory walks (DIR
--glob PATTERN: recursive, sorted, symbolic links not followed out of DIR),
and 20,000 partitions through --files-from - (the command line caps near
100,000 paths).

The partitions are CDF-1 bytes written by test_descriptors.FIXED
(partition i holds time = i and tas = expected_tas_row(i)); every aggregation
is read back by netCDF4-python (through a real mount, or from `ncafs export`)
and compared with the values computed from the inputs.

Run as: test_aggregate_inputs.py CASE   (CASE: files_from, progress, walk, many; NCAFS_BIN: the ncafs executable)
`progress` (the progress line on a terminal) exits 77, SKIPPED, without script(1).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_partitions as tp  # noqa: E402  (scratch)
from test_descriptors import FIXED, expected_tas_row, read_variable  # noqa: E402

cdf1_partition = FIXED.partition_bytes


def read_tas(path):
    return read_variable(path, "tas")
from test_mount import NCAFS, SKIP, Mount, check, fuse_usable, run_cases  # noqa: E402


def write_partitions(folder, indices):
    os.makedirs(folder, exist_ok=True)
    names = []
    for i in indices:
        name = os.path.join(folder, "part_%05d.nc" % i)
        with open(name, "wb") as f:
            f.write(cdf1_partition(i))
        names.append(name)
    return names


def check_tas(got, count, what):
    want = np.array([expected_tas_row(i) for i in range(count)], dtype="f4")
    check(got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape))
    check(np.array_equal(got, want), "%s: values differ from those written into the partitions" % what)


def aggregate(args, stdin=None):
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time"] + args, input=stdin, capture_output=True, text=True, timeout=1200)
    check(r.returncode == 0, "ncafs aggregate %s failed (%d):\n%s" % (" ".join(args[:6]), r.returncode, r.stderr))
    return r


def read_through_mount(source, names, count):
    with Mount(source, "cache_timeout=0") as m:
        for name in names:
            check_tas(read_tas(m.path(name)), count, "mount " + name)


def case_files_from(work):
    source = os.path.join(work, "src")
    names = write_partitions(source, range(30))
    random.Random(14).shuffle(names)
    listing = os.path.join(work, "list.txt")
    with open(listing, "w") as f:
        f.write("".join(n + "\n" for n in names[:20]) + "\n")  # an empty line is skipped
    # Half from the list file, the rest on the command line; all of them from stdin.
    listed = aggregate(["-o", os.path.join(source, "listed.nc"), "--files-from", listing] + names[20:])
    aggregate(["--classic", "-o", os.path.join(source, "stdin.nc"), "--files-from", "-"],
              stdin="".join(n + "\n" for n in names))
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(work, "x.nc"), "--files-from", os.path.join(work, "none")],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "none" in r.stderr, "a missing list file is not reported: " + r.stderr)
    check("files/s" not in listed.stderr, "a progress line was written to a stderr that is not a terminal")
    read_through_mount(source, ["listed.nc", "stdin.nc"], 30)


def case_progress(work):
    """On a terminal (script(1) gives the command a pseudo-terminal) a progress line is drawn."""
    if not shutil.which("script"):
        print("SKIPPED: the progress-line check needs script(1) (bsdutils), which is not installed")
        sys.exit(SKIP)
    listing = os.path.join(work, "list.txt")
    with open(listing, "w") as f:
        f.write("".join(n + "\n" for n in write_partitions(os.path.join(work, "src"), range(20))))
    command = " ".join([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(work, "tty.nc"), "--files-from", listing])
    r = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "ncafs aggregate on a terminal failed: " + r.stdout)
    check("100%  20 of 20 files" in r.stdout, "no progress line on a terminal:\n" + r.stdout)


def case_walk(work):
    source = os.path.join(work, "src")
    data = os.path.join(source, "data")
    write_partitions(os.path.join(data, "b"), range(10, 25))
    write_partitions(os.path.join(data, "a"), range(0, 10))
    write_partitions(os.path.join(data, "a", "deeper"), range(25, 29))
    # Partition 29 is reached through a link inside DIR to a name the glob does not match: taken.
    os.makedirs(os.path.join(data, "store"))
    with open(os.path.join(data, "store", "p29.bin"), "wb") as f:
        f.write(cdf1_partition(29))
    os.symlink(os.path.join("..", "store", "p29.bin"), os.path.join(data, "a", "part_00029.nc"))
    outside = write_partitions(os.path.join(work, "outside"), [30, 31])
    with open(os.path.join(data, "notes.txt"), "w") as f:
        f.write("not a partition\n")
    with open(os.path.join(data, "other.nc"), "w") as f:
        f.write("matches *.nc, not part_*.nc\n")
    # Links out of DIR are not followed: a file (time 30) and a folder (time 31).
    os.symlink(outside[0], os.path.join(data, "part_00030.nc"))
    os.symlink(os.path.dirname(outside[1]), os.path.join(data, "linked_dir"))
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(source, "dup.nc"), data, "--glob", "*.nc"],
                       capture_output=True, text=True)
    check(r.returncode == 1, "other.nc matched by --glob '*.nc' should make the aggregation fail: " + r.stderr)
    aggregate(["-o", os.path.join(source, "walked.nc"), data, "--glob", "part_*.nc"])
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(work, "y.nc"), data, "--glob", "*.none"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "no file matching" in r.stderr, "an empty walk is not reported: " + r.stderr)
    read_through_mount(source, ["walked.nc"], 30)


def case_many(work):
    # 20,000 small files: in memory when /dev/shm has room (tiny_partitions.scratch_folder).
    with tp.scratch("ncafs-agg-many-", 20_000 * 4096) as scratch:
        aggregate_many(scratch)


def aggregate_many(work):
    count = 20000
    source = os.path.join(work, "src")
    names = write_partitions(source, range(count))
    random.Random(14).shuffle(names)
    out = os.path.join(source, "many.nc")
    aggregate(["-o", out, "--files-from", "-"], stdin="".join(n + "\n" for n in names))
    import netCDF4  # the written CF-1.13 file as netcdf-c reads it: one URI per fragment, in time order
    with netCDF4.Dataset(out) as ds:
        uris = [str(u) for u in ds["fragment_uris_tas"][...].ravel()]
    check(uris == ["part_%05d.nc" % i for i in range(count)], "fragment_uris_tas is not the partitions in time order")
    exported = os.path.join(work, "export.nc")
    r = subprocess.run([NCAFS, "export", out, "-o", exported], capture_output=True, text=True, timeout=1200)
    check(r.returncode == 0, "ncafs export failed: " + r.stderr)
    check_tas(read_tas(exported), count, "export of many.nc")
    with netCDF4.Dataset(exported) as ds:
        check(np.array_equal(ds["time"][...], np.arange(count)), "time of the export differs from the partitions'")


CASES = {"files_from": case_files_from, "progress": case_progress, "walk": case_walk, "many": case_many}


def main():
    return run_cases(CASES, "ncafs-agg-inputs-")


if __name__ == "__main__":
    sys.exit(main())
