#!/usr/bin/python3
"""Hostile files against a mounted ncafs: crashes, amplification, small files.

Run as: test_hostile.py CASE   (CASE: crashes, amplification, small; see CASES)
Environment: NCAFS_BIN (set by CMake), NCAFS_SKIP_FUSE=1 to report "skipped"
(exit 77) where /dev/fuse is unusable.

Every input is generated here, at test time, in a fresh SOURCE tree. Each is
listed (ls -l) and read through a real mount; afterwards the daemon must be
alive, must have logged one line naming the file, and (amplification) its
peak RSS (VmHWM in /proc/PID/status) must stay under a stated bound.
Expected values come from the generator or from netCDF4-python reading the
source, never from ncafs itself. Timeouts only say "does not hang".
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from test_mount import Mount, check, fail, fuse_usable, NCAFS, SKIP, run_cases  # noqa: E402

HANG = 120  # seconds: "does not hang", not a performance threshold


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    fail("no %s in /proc/%d/status" % (key, pid))


def reset_peak(pid):
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, timeout=HANG, **kw)


def ls_l(mount):
    r = run(["ls", "-lR", mount.mnt])
    check(mount.alive(), "daemon died during ls -l:\n" + mount.log_text())
    return r.stdout.decode(errors="replace")


def read_all(path):
    """Reads a virtual file; returns None on an I/O error (expected for bad files)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def expect_logged(mount, needle, also=()):
    log = mount.log_text()
    lines = [l for l in log.splitlines() if needle in l and all(a in l for a in also)]
    check(lines, "no log line names %r %r:\n%s" % (needle, also, log))


def nca_file(path, json_text, units="K", calendar=None, dims=(("x", 4), ("y", 3))):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        for name, n in dims:
            ds.createDimension(name, n)
        v = ds.createVariable("v", "f4", ())
        v.cf_role = "nca_variable"
        v.nca_dimensions = " ".join(d for d, _ in dims)
        v.nca_array = json_text
        v.units = units
        if calendar:
            v.calendar = calendar


def partition(path, rows, cols=3, base=0.0):
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.createDimension("a", rows)
        ds.createDimension("b", cols)
        p = ds.createVariable("p", "f4", ("a", "b"))
        p[:] = (base + np.arange(rows * cols, dtype="f8").reshape(rows, cols)).astype("f4")


def two_parts(location_b="[[2, 4], [0, 3]]", extra_b="", location_a="[[0, 2], [0, 3]]"):
    return ('{"pmshape": [2], "pmdimensions": ["x"], "Partitions": ['
            '{"index": [0], "location": %s, "subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}},'
            '{"index": [1], "location": %s, %s"subarray": {"file": "b.nc", "ncvar": "p", "shape": [2, 3]}}]}'
            % (location_a, location_b, extra_b))


def folder(src, name):
    d = os.path.join(src, name)
    os.makedirs(d)
    partition(os.path.join(d, "a.nc"), 2)
    partition(os.path.join(d, "b.nc"), 2, base=100)
    return d


# ------------------------------------------------------------------ crashes
def case_crashes(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    # (a) a location whose start + count wraps past 2^64: inclusive (as partition 0
    # reads), no shape given, so its count is 1 and start + 1 wraps to 0.
    nca_file(os.path.join(folder(src, "wrap"), "agg.nca"),
             two_parts("[[18446744073709551615, 18446744073709551615], [0, 2]]",
                       location_a="[[0, 1], [0, 2]]").replace(', "shape": [2, 3]}}]}', "}}]}"))
    # (b) JSON nested 100,000 deep, in an nca_array and in a .ds header.
    nca_file(os.path.join(folder(src, "deep"), "agg.nca"), '{"Partitions": ' + "[" * 100000 + "]" * 100000 + "}")
    with open(os.path.join(src, "deep", "deep.ds"), "wb") as f:
        header = ('{"dims": {}, "vars": {}, "attrs": {"a": ' + "[" * 100000 + "]" * 100000 + "}}").encode()
        f.write(b"ds-1.0\n" + header + b"\n")
    # (c) a 32-byte CDF-1 file claiming 2^31-1 variables.
    with open(os.path.join(src, "claims.nc"), "wb") as f:
        f.write(b"CDF\x01" + struct.pack(">I", 0) + struct.pack(">II", 0, 0) * 2 + struct.pack(">II", 0x0B, 2**31 - 1))
    # (d) partition units whose reference year overflows a 360_day calendar.
    d = folder(src, "calendar")
    nca_file(os.path.join(d, "agg.nca"),
             two_parts(extra_b='"units": "days since 9000000000000000000-01-01", '),
             units="days since 2000-01-01", calendar="360_day")
    with Mount(src) as m:
        listing = ls_l(m)
        for rel in ["wrap/agg.nca", "deep/agg.nca", "deep/deep.ds", "claims.nc", "calendar/agg.nca"]:
            stem = os.path.splitext(rel)[0]
            for view in [rel, stem + ".nc", stem + ".ds", stem + ".ncs"]:
                if os.path.exists(m.path(view)):
                    read_all(m.path(view))
            check(m.alive(), "daemon died reading %s:\n%s" % (rel, m.log_text()))
        check("claims.nc" in listing, "claims.nc not listed")
        expect_logged(m, os.path.join(src, "wrap/agg.nca"), ["location[0]", "runs past the master dimension"])
        expect_logged(m, os.path.join(src, "deep/agg.nca"), ["nested deeper than 256 levels"])
        expect_logged(m, os.path.join(src, "deep/deep.ds"), ["nested deeper than 256 levels"])
        expect_logged(m, os.path.join(src, "claims.nc"))
        expect_logged(m, os.path.join(src, "calendar/agg.nca"), ["reference year out of range"])
        # The aggregations that failed are real files only: no twin is listed for them.
        check(not os.path.exists(m.path("wrap", "agg.nc")), "a broken aggregation is shown as a view")
        print(m.log_text())


# ------------------------------------------------------------------ amplification
def cf_constant_map(path, n):
    """CF-1.13: n x n fragments of one element each, every one a unique value (compressed: tiny file)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for name, size in [("t", n), ("x", n), ("j", 2), ("i", n), ("ft", n), ("fx", n)]:
            ds.createDimension(name, size)
        q = ds.createVariable("q", "i4", ())
        q.aggregated_dimensions = "t x"
        q.aggregated_data = "map: fmap unique_values: fval"
        fmap = ds.createVariable("fmap", "i4", ("j", "i"), zlib=True, complevel=9)
        fmap[:] = np.ones((2, n), "i4")
        fval = ds.createVariable("fval", "i4", ("ft", "fx"), zlib=True, complevel=9)
        fval[:] = np.full((n, n), 7, "i4")
        ds.Conventions = "CF-1.13"


def case_amplification(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    # 4 million constant fragments from a file of some kB: refused before they are built.
    cf_constant_map(os.path.join(src, "constant.nc"), 2000)
    size_kib = os.path.getsize(os.path.join(src, "constant.nc")) // 1024
    # A part list [[0, N-1]] over a partition of N rows: only 2 rows may be read.
    d = os.path.join(src, "sparse")
    os.makedirs(d)
    rows = 1 << 22  # 48 MiB of float32
    partition(os.path.join(d, "a.nc"), rows)
    partition(os.path.join(d, "b.nc"), 2, base=100)
    js = two_parts().replace('"subarray": {"file": "a.nc", "ncvar": "p", "shape": [2, 3]}',
                             '"part": "[[0, %d], (0, 2, 1)]", "subarray": {"file": "a.nc", "ncvar": "p", "shape": [%d, 3]}'
                             % (rows - 1, rows))
    nca_file(os.path.join(d, "agg.nca"), js)
    # A small .ncs whose deflated payload inflates to 1 GiB (zeros) with data near its end.
    big = os.path.join(work, "big.nc")
    with netCDF4.Dataset(big, "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.createDimension("n", 1 << 28)
        z = ds.createVariable("z", "f4", ("n",), fill_value=False)
        z[(1 << 28) - 4:] = np.array([1, 2, 3, 4], "f4")
    r = run([NCAFS, "export", big, "--format", "ncs", "--deflate=1", "-o", os.path.join(src, "bomb.ncs")])
    check(r.returncode == 0, "export failed: %s" % r.stderr.decode(errors="replace"))
    bomb_kib = os.path.getsize(os.path.join(src, "bomb.ncs")) // 1024
    with netCDF4.Dataset(big) as ds:
        tail = np.asarray(ds["z"][(1 << 28) - 1024:], dtype=">f4").tobytes()
    os.unlink(big)

    with Mount(src) as m:
        pid = m.process.pid
        rss0 = status_kib(pid, "VmRSS")
        reset_peak(pid)
        ls_l(m)  # classifies constant.nc: the fragment count is refused here
        check(read_all(m.path("constant.nc")) is not None, "constant.nc is a real file only and reads")
        expect_logged(m, os.path.join(src, "constant.nc"), ["max_fragments"])
        peak = status_kib(pid, "VmHWM") - rss0
        print("ls -l with constant map (%d KiB file, 4,000,000 fragments): peak RSS growth %d KiB" % (size_kib, peak))
        check(peak < 256 * 1024, "4 million constant fragments took %d KiB" % peak)

        reset_peak(pid)
        rss0 = status_kib(pid, "VmRSS")
        with open(m.path("sparse", "agg.nc"), "rb") as f:
            whole = f.read()
        with netCDF4.Dataset(m.path("sparse", "agg.nc")) as ds:
            got = ds["v"][:]
        last = (rows - 1) * 3.0
        want = np.array([[0, 1, 2], [last, last + 1, last + 2], [100, 101, 102], [103, 104, 105]], "f4")
        check(np.array_equal(got, want), "sparse part read %s, want %s" % (got, want))
        peak = status_kib(pid, "VmHWM") - rss0
        print("part [[0, N-1]] over %d rows (%d bytes served): peak RSS growth %d KiB" % (rows, len(whole), peak))
        check(peak < 24 * 1024, "a 48-byte read of a sparse part list took %d KiB (the box is 48 MiB)" % peak)

        reset_peak(pid)
        rss0 = status_kib(pid, "VmRSS")
        view = m.path("bomb.nc")
        size = os.path.getsize(view)
        t0 = time.time()
        with open(view, "rb") as f:
            first = os.pread(f.fileno(), 4096, size - 4096)  # walks the stream once
            again = [os.pread(f.fileno(), 4096, size - 4096 * k) for k in range(1, 64)]
        check(first[-4096:] == tail[-4096:] and again[0] == first, "bomb.nc tail differs from netCDF4-python's")
        peak = status_kib(pid, "VmHWM") - rss0
        print("bomb.ncs (%d KiB, 1 GiB inflated): 64 reads near the end in %.1f s, peak RSS growth %d KiB"
              % (bomb_kib, time.time() - t0, peak))
        check(peak < 160 * 1024, "inflating near the end of a 1 GiB payload took %d KiB" % peak)
        check(m.alive(), "daemon died:\n" + m.log_text())


# ------------------------------------------------------------------ small
def case_small(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    d = folder(src, "twins")
    nca_file(os.path.join(d, "bad.nc"), two_parts("[[3, 9], [0, 3]]"))  # runs past the master: broken
    evil = "evil\nncafs: error: forged line.nca"
    nca_file(os.path.join(d, evil), '{"Partitions": [\u0000 oops')
    with Mount(src) as m:
        names = os.listdir(m.path("twins"))
        check("bad.nc" in names and "bad.ds" not in names and "bad.ncs" not in names,
              "twins listed for a broken .nc aggregation: %s" % names)
        for n in names:  # every listed name can be looked up
            check(os.path.lexists(m.path("twins", n)), "%r is listed but gives ENOENT" % n)
        ls_l(m)
        log = m.log_text()
        check(not any(l.startswith("ncafs: error: forged") for l in log.splitlines()), "a file name forged a log line:\n" + log)
        expect_logged(m, "evil\\x0ancafs: error: forged line.nca")
    # A dead mount (daemon killed): another SOURCE is refused with the way
    # out (exit status 2, nothing stacked on it); the same SOURCE clears it.
    # With the sandbox on, its helper would unmount the dead mount: off here.
    mnt = tempfile.mkdtemp(prefix="ncafs-mnt-")
    other = tempfile.mkdtemp(prefix="ncafs-other-")
    p = subprocess.Popen([NCAFS, src, mnt, "-f", "-o", "sandbox=off"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not os.path.ismount(mnt) and time.time() < deadline:
            time.sleep(0.05)
        check(os.path.ismount(mnt), "mount did not appear")
        p.send_signal(signal.SIGKILL)
        p.wait()
        try:
            r = subprocess.run([NCAFS, other, mnt, "-f"], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            fail("ncafs mounted over a dead mount of another SOURCE instead of saying how to clear it")
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 2 and "fusermount3 -u " + mnt in err, "remount over a dead mount says: %s" % err)
        print("remount of another SOURCE over a dead mount: " + err.strip())
        r = subprocess.run([NCAFS, src, mnt], capture_output=True, timeout=60)
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 0 and "cleared the dead mount" in err, "remount of the same SOURCE: %s" % err)
        check(len(os.listdir(mnt)) > 0, "the new mount does not answer")
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        print("remount of the same SOURCE: " + err.strip())
    finally:
        for _ in range(3):  # the dead mount, and one stacked on it should the check above fail
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
        if p.poll() is None:
            p.kill()
        try:
            os.rmdir(mnt)
            os.rmdir(other)
        except OSError as e:
            print("cannot remove %s: %s" % (mnt, e))


CASES = {"crashes": case_crashes, "amplification": case_amplification, "small": case_small}


def main():
    return run_cases(CASES, "ncafs-hostile-")


if __name__ == "__main__":
    sys.exit(main())
