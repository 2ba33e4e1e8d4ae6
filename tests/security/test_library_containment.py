#!/usr/bin/python3
"""netCDF-4/HDF5 files read by helper processes, never in the daemon itself.

Run as: test_library_containment.py CASE
  strings   netCDF-4 partitions (deflated, UNLIMITED time, tas(time, lat, lon),
            a scalar NC_STRING variable `note`, as ERA5 files carry `expver`),
            written by netCDF4-python, aggregated by `ncafs aggregate --dim
            time`, mounted; four `cat`s of the view, a `cat` of each
            partition's own view and four netCDF4-python readers at once,
            three rounds, and `ncafs export` of the aggregation: the daemon stays up and every value
            equals netCDF4-python's on the partitions (the crash of the
            in-process HDF5 open of such files while netcdf-c held them).
  crash     NCAFS_TEST_HELPER_CRASH=bad.nc4: the helper reading bad.nc4
            dies; its view's read fails (EIO, or the view is absent) with one
            log line naming the file and the signal, while other readers of
            other files all succeed at the same time; the mount stays up, and
            `ncafs export --format ds`, `inspect` and `check` of it, and
            `ncafs aggregate` of partitions one of which crashes its helper,
            fail naming the file and the signal.
  hang      NCAFS_TEST_HELPER_HANG=slow.nc4 and a 2 s deadline: the helper of
            slow.nc4 spins until the zygote kills it; `ls -l` and a read of
            its view end within a bound (EIO or absent) with a log line
            naming the file and the deadline, while other files read at once.
  no_files  NCAFS_TEST_HELPER_TRY_OPEN=/etc/passwd: a confined helper cannot
            open a file, make a TCP socket or signal its zygote (the answer
            carries each errno into the log).
  mutants   the mutated netCDF-4 files of tests/data/hdf5_mutants (found by
            tests/mutate_netcdf4.py: each crashes or hangs ncdump) in SOURCE
            beside a good file: `ls -l` and `cat` of their views end within a
            bound (EIO or absent), the daemon stays up, the good file reads.
Environment: NCAFS_BIN (the ncafs executable, set by CMake).
"""
import concurrent.futures
import glob
import os
import subprocess
import sys
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from test_mount import NCAFS, Mount, check, run_cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MUTANTS = os.path.join(HERE, "..", "data", "hdf5_mutants")
NT, NLAT, NLON = 30, 20, 30


def write_partition(path, index):
    """One deflated netCDF-4 partition; returns its tas values."""
    rng = np.random.default_rng(index)
    tas = rng.standard_normal((NT, NLAT, NLON)).astype("f4") + 280
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", NLAT)
        ds.createDimension("lon", NLON)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "hours since 2000-01-01"
        t[:] = np.arange(NT) + index * NT
        ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-90, 90, NLAT)
        ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 357, NLON)
        v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, chunksizes=(10, NLAT, NLON))
        v[:] = tas
        note = ds.createVariable("note", str, ())
        note[...] = "expver %d" % index
    return tas


def partitions(folder, n):
    os.makedirs(folder, exist_ok=True)
    expected = []
    for i in range(n):
        expected.append(write_partition(os.path.join(folder, "part_%03d.nc4" % i), i))
    return np.concatenate(expected)


def aggregate(output, folder):
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", output, folder, "--glob", "part_*.nc4"],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "ncafs aggregate failed (%d):\n%s" % (r.returncode, r.stdout + r.stderr))


def read_tas(path):
    with netCDF4.Dataset(path) as ds:
        v = ds["tas"]
        v.set_auto_maskandscale(False)
        return np.array(v[:])


READ_TAS_PROGRAM = """
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    v = ds["tas"]
    v.set_auto_maskandscale(False)
    sys.stdout.buffer.write(v[:].astype("<f4").tobytes())
"""


def read_tas_in_process(path):
    """read_tas in a process of its own: netCDF4-python releases the GIL
    around netcdf-c, which is not thread-safe, so readers at once must be
    separate processes (threads of one crash it, as they did in CI)."""
    r = subprocess.run(["/usr/bin/python3", "-c", READ_TAS_PROGRAM, path], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise OSError("reading %s failed (%d): %s" % (path, r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return np.frombuffer(r.stdout, dtype="<f4").reshape(-1, NLAT, NLON)


def cat(path):
    """The bytes of `cat path` (its exit status and stderr when it fails)."""
    r = subprocess.run(["cat", path], capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def case_strings(work):
    source = os.path.join(work, "src")
    expected = partitions(os.path.join(source, "data"), 36)
    aggregate(os.path.join(source, "tas.nc"), os.path.join(source, "data"))
    # `ncafs export` of the aggregation (its confined child died of SIGSEGV
    # in HDF5 every time, and the parent said nothing).
    out = os.path.join(work, "export.nc")
    r = subprocess.run([NCAFS, "export", os.path.join(source, "tas.nc"), "-o", out], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 0 and "Sanitizer" not in r.stderr, "export failed (%d): %s" % (r.returncode, r.stderr[-3000:]))
    check(np.array_equal(read_tas(out), expected), "the exported tas differs from the partitions")
    with Mount(source, "cache_timeout=0") as m:
        view = m.path("tas.nc")
        parts = [m.path("data", "part_%03d.nc" % i) for i in range(36)]
        for _ in range(3):
            with concurrent.futures.ThreadPoolExecutor(12) as pool:
                # Each partition as its own view too: the same files, opened for both at once.
                cats = [pool.submit(cat, view) for _ in range(4)] + [pool.submit(cat, p) for p in parts]
                readers = [pool.submit(read_tas_in_process, view) for _ in range(4)]
                for f in cats:
                    code, data, err = f.result()
                    check(code == 0, "cat of the view failed: %s" % err)
                    check(len(data) > 0, "cat read nothing")
                for f in readers:
                    check(np.array_equal(f.result(), expected), "tas through the mount differs from the partitions")
            check(m.alive(), "the daemon died:\n" + m.log_text())
            subprocess.run(["sync"])
        # Each partition's own view, read directly too.
        for i in (0, 17, 35):
            got = read_tas(m.path("data", "part_%03d.nc" % i))
            check(np.array_equal(got, expected[i * NT:(i + 1) * NT]), "partition %d differs" % i)
        check(m.alive(), "the daemon died:\n" + m.log_text())


def good_files(source, n):
    values = {}
    for i in range(n):
        values["good%d" % i] = write_partition(os.path.join(source, "good%d.nc4" % i), 100 + i)
    return values


def read_one_view(m, name, expected):
    got = read_tas_in_process(m.path(name + ".nc"))
    return np.array_equal(got, expected)


def fails_or_absent(path):
    """True when reading path fails (EIO) or it does not exist."""
    try:
        with open(path, "rb") as f:
            f.read()
    except OSError:
        return True
    return False


def case_crash(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    values = good_files(source, 6)
    write_partition(os.path.join(source, "bad.nc4"), 7)
    os.environ["NCAFS_TEST_HELPER_CRASH"] = "bad.nc4"
    try:
        with Mount(source, "cache_timeout=0") as m:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                bad = [pool.submit(fails_or_absent, m.path("bad.nc")) for _ in range(2)]
                good = [pool.submit(read_one_view, m, name, v) for name, v in values.items() for _ in range(2)]
                check(all(f.result() for f in bad), "bad.nc read although its helper crashed")
                check(all(f.result() for f in good), "a good file's read failed while another file's helper crashed")
            check(m.alive(), "the daemon died:\n" + m.log_text())
            names = os.listdir(m.mnt)
            check("good0.nc" in names, "the listing lost good files: %s" % names)
            lines = [line for line in m.log_text().splitlines() if "bad.nc4" in line and "helper" in line]
            check(lines, "no log line names bad.nc4 and its helper:\n" + m.log_text())
            check(any("signal" in line for line in lines), "the log line does not say how it died: %s" % lines)
            for name, v in values.items():  # after the crash, still
                check(read_one_view(m, name, v), name + " reads wrong after the crash")
        for command in (["inspect"], ["check"], ["export", "--format", "ds", "-o", os.path.join(work, "out.ds")]):
            r = subprocess.run([NCAFS] + command[:1] + [os.path.join(source, "bad.nc4")] + command[1:],
                               capture_output=True, text=True, timeout=120)
            check(r.returncode != 0, "%s of bad.nc4 succeeded" % command[0])
            said = r.stdout + r.stderr
            check("bad.nc4" in said and "signal" in said,
                  "%s does not name the file and the signal: %s" % (command[0], said))
        folder = os.path.join(work, "parts")
        os.makedirs(folder)
        for i in range(3):
            write_partition(os.path.join(folder, "part_%03d.nc4" % i), i)
        os.environ["NCAFS_TEST_HELPER_CRASH"] = "part_001.nc4"
        r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(work, "agg.nc"), folder,
                            "--glob", "part_*.nc4"], capture_output=True, text=True, timeout=120)
        check(r.returncode != 0 and "part_001.nc4" in r.stderr and "signal" in r.stderr,
              "aggregate does not name the partition and the signal (%d): %s" % (r.returncode, r.stderr))
    finally:
        del os.environ["NCAFS_TEST_HELPER_CRASH"]


def case_hang(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    values = good_files(source, 4)
    write_partition(os.path.join(source, "slow.nc4"), 9)
    os.environ.update(NCAFS_TEST_HELPER_HANG="slow.nc4", NCAFS_TEST_HELPER_DEADLINE_MS="2000")
    try:
        with Mount(source, "cache_timeout=0") as m:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                listing = pool.submit(timed, subprocess_run, ["ls", "-l", m.mnt], dict(capture_output=True, timeout=60))
                slow = pool.submit(timed, fails_or_absent, m.path("slow.nc"))
                good = [pool.submit(read_one_view, m, name, v) for name, v in values.items()]
                (r, seconds) = listing.result()
                check(r.returncode == 0 and seconds < 30, "ls -l: status %d after %.1f s" % (r.returncode, seconds))
                (refused, seconds) = slow.result()
                check(refused and seconds < 30, "slow.nc: refused %s after %.1f s" % (refused, seconds))
                check(all(f.result() for f in good), "a good file's read failed while another file's helper hung")
            check(m.alive(), "the daemon died:\n" + m.log_text())
            lines = [line for line in m.log_text().splitlines() if "slow.nc4" in line and "deadline" in line]
            check(lines, "no log line names slow.nc4 and the deadline:\n" + m.log_text())
    finally:
        for name in ("NCAFS_TEST_HELPER_HANG", "NCAFS_TEST_HELPER_DEADLINE_MS"):
            del os.environ[name]


def case_no_files(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    write_partition(os.path.join(source, "probe.nc4"), 1)
    os.environ["NCAFS_TEST_HELPER_TRY_OPEN"] = "/etc/passwd"
    try:
        with Mount(source, "cache_timeout=0") as m:
            check(fails_or_absent(m.path("probe.nc")), "the probe's view read although the switch refuses it")
            lines = [line for line in m.log_text().splitlines() if "helper open(/etc/passwd)" in line]
            check(lines, "the helper's attempt is not logged:\n" + m.log_text())
            check("helper open(/etc/passwd): Permission denied" in lines[0], "a helper could open /etc/passwd: " + lines[0])
            check("helper socket(AF_INET): Operation not permitted" in lines[0], "a helper could make a socket: " + lines[0])
            check("helper kill(zygote, 0): Operation not permitted" in lines[0], "a helper could signal: " + lines[0])
            check(m.alive(), "the daemon died")
    finally:
        del os.environ["NCAFS_TEST_HELPER_TRY_OPEN"]


def timed(function, *args):
    start = time.monotonic()
    result = function(*args)
    return result, time.monotonic() - start


def case_mutants(work):
    mutants = sorted(glob.glob(os.path.join(MUTANTS, "*.nc4")))
    check(mutants, "no mutants in " + MUTANTS)
    source = os.path.join(work, "src")
    os.makedirs(source)
    for path in mutants:
        with open(path, "rb") as f, open(os.path.join(source, os.path.basename(path)), "wb") as out:
            out.write(f.read())
    expected = write_partition(os.path.join(source, "good.nc4"), 3)
    os.environ["NCAFS_TEST_HELPER_DEADLINE_MS"] = "3000"
    try:
        with Mount(source, "cache_timeout=0") as m:
            for _ in range(2):
                r, seconds = timed(subprocess_run, ["ls", "-l", m.mnt], dict(capture_output=True, timeout=60))
                check(r.returncode == 0, "ls -l failed: %s" % r.stderr)
                check(seconds < 30, "ls -l took %.1f s" % seconds)
            for path in mutants:
                view = m.path(os.path.basename(path)[:-1])  # NAME.nc4 -> NAME.nc
                code, data, err = cat(view)
                check(m.alive(), "the daemon died on %s:\n%s" % (path, m.log_text()[-3000:]))
            check(np.array_equal(read_tas(m.path("good.nc")), expected), "good.nc reads wrong beside the mutants")
            check(m.alive(), "the daemon died:\n" + m.log_text()[-3000:])
            log = m.log_text().splitlines()
            for name in (os.path.basename(p) for p in mutants):
                # What `ncdump -h` already dies or loops on, the helper does too: one line says how
                # (a crash: a signal, or an exit status where AddressSanitizer caught the signal).
                said = ["deadline"] if name.startswith("hang") else ["signal", "exited with status"]
                if name in ("crash_01.nc4",):  # its metadata reads: only its data crashes ncdump
                    continue
                check(any(name in line and any(s in line for s in said) for line in log),
                      "no log line says how %s ended its helper:\n%s" % (name, m.log_text()[-3000:]))
    finally:
        del os.environ["NCAFS_TEST_HELPER_DEADLINE_MS"]


def subprocess_run(args, kwargs):
    return subprocess.run(args, **kwargs)


if __name__ == "__main__":
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"  # fresh inputs read as settled ones (tests/README.md)
    sys.exit(run_cases({"strings": case_strings, "crash": case_crash, "hang": case_hang, "no_files": case_no_files,
                        "mutants": case_mutants}, "ncafs-containment-"))
