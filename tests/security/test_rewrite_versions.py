#!/usr/bin/python3
"""A partition rewritten in place, as fast as a process can, between two
versions whose data lie at different offsets, while 8 processes read its
aggregation: every read gives the bytes of one version or fails with EIO.

Run as: test_rewrite_versions.py CASE  (steady | bursts | coarse). Environment:
NCAFS_BIN; NCAFS_REWRITE_ROUNDS (mounts, default 4), NCAFS_REWRITE_SECONDS
(seconds of rewriting per mount, default 4).

Version A and version B of the partition have the same size, but B's
header is 64 bytes longer (a longer global attribute), so its data begin 64
bytes later (a shorter trailing variable keeps the size); A holds
1000.5 + i at element i, B the negative. B's bytes read where A's layout
puts the data give B's values shifted by 8 elements: neither version. The
readers (O_DIRECT: every read reaches the daemon) classify each element of
the partition's part of the view as A's, B's or neither; any "neither" fails.
  steady: the writer rewrites without a pause (open, one pwrite, close);
  bursts: the writer waits 1.1 s (the file settles: extents may be spliced)
          and then rewrites for 30 ms, again and again;
  coarse: steady, with SOURCE on a ramfs, whose timestamps move once a
          clock tick: many rewrites leave ctime (and the whole identity) as
          it was. Root only (it mounts the ramfs); SKIPPED otherwise.
The writer runs as the partition's owner with no descriptor kept open
between rewrites, so a moment with no writer always comes.
"""
import errno
import os
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import make_aggregations  # noqa: E402
from test_mount import Mount, check, fail, run_cases  # noqa: E402

SHAPE = (8, 500)
SHIFT = 64  # bytes B's header is longer

WRITER = r"""
import os, sys, time
part, a, b, seconds, bursts = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read(), \
    float(sys.argv[4]), sys.argv[5] == "bursts"
end, n = time.time() + seconds, 0
while time.time() < end:
    if bursts:
        time.sleep(1.1)
    until = time.time() + (0.03 if bursts else seconds)
    while time.time() < min(until, end):
        fd = os.open(part, os.O_WRONLY)
        os.pwrite(fd, b if n % 2 == 0 else a, 0)
        os.close(fd)
        n += 1
    fd = os.open(part, os.O_WRONLY)  # A again at the end of a burst
    os.pwrite(fd, a, 0)
    os.close(fd)
    n += 1 - n % 2
print(n)
"""

# Reads the partition's bytes of the view until the file named by argv[4]
# exists; prints "A B neither EIO" counts, and the first odd read.
READER = r"""
import errno, os, sys
import numpy as np
view, at, n, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
a = (np.arange(n, dtype="f8") + 1000.5).astype(">f8")
b = -a
counts, odd = [0, 0, 0, 0], None
while not os.path.exists(stop):
    fd = os.open(view, os.O_RDONLY | os.O_DIRECT)
    try:
        data = os.pread(fd, n * 8, at)
    except OSError as e:
        if e.errno != errno.EIO:
            raise
        counts[3] += 1
        continue
    finally:
        os.close(fd)
    got = np.frombuffer(data, dtype=">f8")
    if got.size == n and np.array_equal(got, a):
        counts[0] += 1
    elif got.size == n and np.array_equal(got, b):
        counts[1] += 1
    else:
        counts[2] += 1
        if odd is None:
            is_a = got == a[:got.size]
            is_b = got == b[:got.size]
            neither = np.flatnonzero(~(is_a | is_b))
            odd = "%d of %d elements neither A's nor B's (first at %d: %r)" % (
                neither.size, got.size, neither[0] if neither.size else -1,
                float(got[neither[0]]) if neither.size else None)
print(*counts)
print(odd or "")
"""


def version(path, values, pad, tail):
    """A classic file: tas(8, 500) f8 = values, a global attribute `pad`
    characters long and a byte variable of `tail` elements after tas."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.pad = "p" * pad
        ds.createDimension("t", SHAPE[0])
        ds.createDimension("x", SHAPE[1])
        ds.createDimension("n", tail)
        v = ds.createVariable("tas", "f8", ("t", "x"), fill_value=False)
        v.units = "K"
        v[...] = values
        ds.createVariable("tail", "i1", ("n",), fill_value=False)[...] = np.zeros(tail, dtype="i1")
    return open(path, "rb").read()


def data_offset(content, values):
    at = content.find(values.astype(">f8").tobytes())
    check(at > 0, "the values lie in the file")
    return at


def run(work, mode):
    src, scratch = os.path.join(work, "src"), os.path.join(work, "scratch")
    if mode == "coarse":
        os.makedirs(src)
        mounted = subprocess.run(["mount", "-t", "ramfs", "ncafs-test", src], capture_output=True, text=True)
        if mounted.returncode != 0:
            print("SKIPPED: cannot mount a ramfs (%s)" % mounted.stderr.strip())
            sys.exit(77)
        try:
            return rewrite_rounds(src, scratch, work, "steady")
        finally:
            subprocess.run(["umount", src])
    return rewrite_rounds(src, scratch, work, mode)


def rewrite_rounds(src, scratch, work, mode):
    agg = os.path.join(src, "agg")
    make_aggregations.write_aggregation(agg, "rw", ["t", "x"], {"t": 16, "x": 500}, {"t": [8, 8], "x": [500]},
                                        dtype="f8")
    part = os.path.join(agg, "part_01_00.nc")
    os.makedirs(scratch)
    a_values = np.arange(SHAPE[0] * SHAPE[1], dtype="f8").reshape(SHAPE) + 1000.5
    a = version(os.path.join(scratch, "a.nc"), a_values, 4, 128)
    b = version(os.path.join(scratch, "b.nc"), -a_values, 4 + SHIFT, 128 - SHIFT)
    check(len(a) == len(b), "A and B have one size (%d, %d)" % (len(a), len(b)))
    check(data_offset(b, -a_values) - data_offset(a, a_values) == SHIFT, "B's data lie %d bytes later" % SHIFT)
    with open(part, "wb") as f:
        f.write(a)
    time.sleep(1.1)  # settled: the first open reads it once
    rounds = int(os.environ.get("NCAFS_REWRITE_ROUNDS", "4"))
    seconds = float(os.environ.get("NCAFS_REWRITE_SECONDS", "4"))
    totals, rewrites = [0, 0, 0, 0], 0
    for k in range(rounds):
        with Mount(src) as m:
            view = m.path("agg", "rw.nc")
            whole = open(view, "rb").read()
            at = whole.find(a_values.astype(">f8").tobytes())
            check(at > 0, "the partition's values lie in the view")
            stop = os.path.join(work, "stop%d" % k)
            readers = [subprocess.Popen([sys.executable, "-c", READER, view, str(at), str(a_values.size), stop],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
            writer = subprocess.run([sys.executable, "-c", WRITER, part, os.path.join(scratch, "a.nc"),
                                     os.path.join(scratch, "b.nc"), str(seconds), mode],
                                    capture_output=True, text=True, timeout=seconds + 60)
            open(stop, "w").close()
            check(writer.returncode == 0, "the writer: " + writer.stderr)
            rewrites += int(writer.stdout)
            odd = []
            for r in readers:
                out, err = r.communicate(timeout=120)
                check(r.returncode == 0, "a reader failed: " + err)
                lines = out.splitlines()
                counts = [int(c) for c in lines[0].split()]
                totals = [t + c for t, c in zip(totals, counts)]
                if len(lines) > 1 and lines[1]:
                    odd.append(lines[1])
            if odd:
                fail("round %d (%s): reads gave bytes of neither version: %s; totals A/B/neither/EIO %s" %
                     (k, mode, odd[0], totals))
    print("%s: %d rewrites; reads of A %d, of B %d, neither %d, EIO %d" % ((mode, rewrites) + tuple(totals)))
    check(totals[2] == 0, "no read gives bytes of neither version")
    check(totals[0] + totals[1] > 0, "some reads succeeded")


def case_steady(work):
    run(work, "steady")


def case_bursts(work):
    run(work, "bursts")


def case_coarse(work):
    run(work, "coarse")


CASES = {"steady": case_steady, "bursts": case_bursts, "coarse": case_coarse}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-rewrite-versions-"))
