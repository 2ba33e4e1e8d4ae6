#!/usr/bin/python3
"""netCDF-4 files are opened, described and read by helper processes: the
daemon never calls netcdf-c or HDF5 on them.

Run as: test_netcdf4_out_of_daemon.py CASE
  kinds   NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON=1 (any library lock taken in
          the daemon aborts it). One file holds every kind of variable:
          chunked deflate+shuffle+fletcher32, chunked unfiltered, contiguous
          little- and big-endian, contiguous never written, chunks never
          written beside written ones, a record variable, compact storage,
          szip and scaleoffset (HDF5 filters ncafs does not decode: written
          by h5py; a chunk of 36 MB, chunks of 40 bytes) and a string
          variable (left out). Through the mount, with cache_mem=512M (a
          chunk above the 32 MiB a helper answers at once is kept, and asked
          for in parts), and with cache_mem=64M (the 36 MB chunk asked for in
          boxes), the view's every variable equals netCDF4-python's reading
          of the file, twice (the second from the kept chunks), and the
          daemon is alive;
          `ncafs export`, `inspect` and `check` of the file (the CLI uses
          the same code) succeed under the same switch, the export's values
          equal too.
  lie     NCAFS_TEST_HELPER_LIE=lie.nc4: the helper of lie.nc4 answers a
          description claiming a variable of a dimension it did not
          describe; its view is refused (EIO or absent) with a log line
          naming the file and the malformed answer, the daemon stays up and
          a good file beside it reads.
  values_crash  NCAFS_TEST_HELPER_CRASH_VALUES=far.nc4: the helper asked
          for a compact variable's values dies; that read fails (EIO) with
          a log line naming the file and the signal, the daemon stays up,
          and the file's variables ncafs reads itself still read.
  budget  a netCDF-4 file of 2,000 variables under max_file_metadata_mem=1M:
          what its helper describes is charged before it is built, so the
          file is refused with a log line naming it, the count and the
          limit, and a small file beside it reads.
  cf_terms  NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON=1: CF-1.13 aggregations in
          netCDF-4 files, one written by `ncafs aggregate` (string uris,
          identifiers, integer maps), one by netCDF4-python with 100
          fragments whose map, string locations and variable names live in
          a group (CF group search); their term variables are read by
          helpers (NCAFS_TEST_TERM_ROWS_BYTES=256: in many answers of
          rows, the first of each term with the file's inventory, as
          NCAFS_HELPER_TIMING=1's lines show), and the views equal netCDF4-python's reading of the
          partitions; `ncafs check` of them succeeds under the same switch.
  cf_terms_lie  NCAFS_TEST_HELPER_LIE_TERMS=lie.nc: the helper answers
          rows of term variables whose text ends lie past the text sent,
          numbers more than their masks; the aggregation is refused (the
          file shown only as a real file, as any refused aggregation) with a log line
          naming the file and the malformed rows, the daemon stays up, a good
          aggregation beside it reads.
  cf_terms_huge  netCDF-4 aggregations whose string uris term has 2^27
          places never written (netcdf-c fails to read them: the
          aggregation is refused with a log line naming the file and the
          variable) or 2^17 written: under max_file_metadata_mem=1M (and
          NCAFS_TEST_TERM_ROWS_BYTES=65536) its rows are charged answer by
          answer and the aggregation refused with a log line naming the
          file and the limit; the daemon stays up, below 1 GiB of memory,
          and a good aggregation beside them reads.
Environment: NCAFS_BIN (the ncafs executable, set by CMake).
"""
import contextlib
import os
import subprocess
import sys

import h5py
import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from test_mount import NCAFS, Mount, check, run_cases  # noqa: E402
from test_library_containment import fails_or_absent  # noqa: E402


def write_kinds(path):
    """Every kind of variable a netCDF-4 file stores, in one file."""
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "kinds"
        ds.createDimension("time", None)
        ds.createDimension("y", 40)
        ds.createDimension("x", 60)
        t = ds.createVariable("time", "f8", ("time",))
        t[:] = np.arange(12) * 6.0
        deflated = ds.createVariable("deflated", "f4", ("time", "y", "x"), zlib=True, shuffle=True,
                                     fletcher32=True, chunksizes=(3, 20, 30))
        deflated[:] = rng.standard_normal((12, 40, 60)).astype("f4")
        unfiltered = ds.createVariable("chunked_unfiltered", "i4", ("y", "x"), chunksizes=(16, 16))
        unfiltered[:] = np.arange(40 * 60, dtype="i4").reshape(40, 60)
        little = ds.createVariable("contiguous", "f8", ("y", "x"), contiguous=True)
        little[:] = rng.standard_normal((40, 60))
        big = ds.createVariable("contiguous_big", np.dtype(">i2"), ("y", "x"), contiguous=True, endian="big")
        big[:] = (np.arange(40 * 60) % 3000 - 1500).astype("i2").reshape(40, 60)
        ds.createVariable("contiguous_unwritten", "f4", ("y", "x"), contiguous=True, fill_value=-7.5)
        sparse = ds.createVariable("sparse", "i4", ("y", "x"), zlib=True, chunksizes=(10, 10), fill_value=-99)
        sparse[0:10, 0:10] = np.arange(100, dtype="i4").reshape(10, 10)  # one chunk of 24 written
        record = ds.createVariable("record", "i2", ("time", "x"))
        record[:] = (np.arange(12 * 60) % 1000).astype("i2").reshape(12, 60)
        note = ds.createVariable("note", str, ())
        note[...] = "left out"
    with h5py.File(path, "a") as f:
        space = h5py.h5s.create_simple((50,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        compact = h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
        compact.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(50, dtype="<i4") * 3)
        f.create_dataset("szipped", data=rng.standard_normal((64, 64)).astype("f4"), chunks=(32, 32),
                         compression="szip")
        f.create_dataset("scaled", data=(np.arange(64 * 64) % 500).astype("i4").reshape(64, 64), chunks=(16, 64),
                         scaleoffset=0)
        # One chunk of 36 MB: asked of helpers in boxes of at most 32 MiB.
        f.create_dataset("scaled_wide", data=(np.arange(3000 * 3000) % 7777).astype("i4").reshape(3000, 3000),
                         chunks=(3000, 3000), scaleoffset=0)
        # Chunks of 40 bytes, a filter ncafs does not decode: asked of a helper in large boxes.
        f.create_dataset("scaled_tiny", data=np.arange(5000, dtype="i4"), chunks=(10,), scaleoffset=0)


def source_values(path):
    """netCDF4-python's values of every variable of a classic type."""
    out = {}
    with netCDF4.Dataset(path) as ds:
        for name, v in ds.variables.items():
            if v.dtype == str or v.dtype.kind not in "iuf":
                continue
            v.set_auto_maskandscale(False)
            out[name] = np.array(v[...])
    return out


def compare(path, expected, what):
    got = source_values(path)
    check(set(got) == set(expected), "%s: variables %s, not %s" % (what, sorted(got), sorted(expected)))
    for name, values in expected.items():
        check(got[name].shape == values.shape and np.array_equal(got[name], values),
              "%s: %s differs from netCDF4-python's" % (what, name))


def forbid_library():
    os.environ["NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON"] = "1"


def case_kinds(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    path = os.path.join(source, "kinds.nc4")
    write_kinds(path)
    expected = source_values(path)
    for name in ("compact", "szipped", "scaled", "scaled_wide", "scaled_tiny", "sparse", "contiguous_unwritten",
                 "contiguous_big"):
        check(name in expected, "the fixture lacks " + name)
    check("note" not in expected, "the string variable is of a classic type?")
    forbid_library()
    try:
        for cache in ("512M", "64M"):
            with Mount(source, "cache_timeout=0,cache_mem=" + cache) as m:
                for round in range(2):
                    compare(m.path("kinds.nc"), expected, "the view (cache_mem=%s, round %d)" % (cache, round))
                    check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
                check("NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON" not in m.log_text(), "the daemon called the libraries")
        out = os.path.join(work, "export.nc")
        r = subprocess.run([NCAFS, "export", path, "-o", out], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "export failed (%d): %s" % (r.returncode, r.stderr[-3000:]))
        compare(out, expected, "the export")
        for command in ("inspect", "check"):
            r = subprocess.run([NCAFS, command, path], capture_output=True, text=True, timeout=300)
            check(r.returncode == 0 and "FORBID" not in r.stderr,
                  "%s failed (%d): %s" % (command, r.returncode, (r.stdout + r.stderr)[-3000:]))
    finally:
        del os.environ["NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON"]


@contextlib.contextmanager
def switched(name, value):
    """The test-only switch NAME set to VALUE in the environment for the block."""
    os.environ[name] = value
    try:
        yield
    finally:
        del os.environ[name]


def logged(m, *needles):
    """The daemon's first log line holding every needle (the case fails without one)."""
    lines = [line for line in m.log_text().splitlines() if all(n in line for n in needles)]
    check(lines, "no log line names %r:\n%s" % (needles, m.log_text()[-4000:]))
    return lines[0]


def case_lie(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    write_kinds(os.path.join(source, "lie.nc4"))
    write_kinds(os.path.join(source, "good.nc4"))
    expected = source_values(os.path.join(source, "good.nc4"))
    with switched("NCAFS_TEST_HELPER_LIE", "lie.nc4"), Mount(source, "cache_timeout=0") as m:
        check(fails_or_absent(m.path("lie.nc")), "lie.nc read although its helper's answer lies")
        compare(m.path("good.nc"), expected, "good.nc beside a lying helper")
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
        logged(m, "lie.nc4", "malformed")


def write_far_apart(path):
    """Variables ncafs reads itself, then 4 MiB of padding, then a compact
    one a helper reads: a view's reads come in blocks (read-ahead), and a
    block that touches a failing variable fails whole."""
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 512)
        ds.createDimension("x", 512)
        ds.createVariable("first", "f4", ("y", "x"), contiguous=True)[:] = rng.standard_normal((512, 512))
        deflated = ds.createVariable("deflated", "f4", ("y", "x"), zlib=True, chunksizes=(64, 512))
        deflated[:] = rng.standard_normal((512, 512)).astype("f4")
        ds.createDimension("pad", 1 << 20)
        ds.createVariable("padding", "f4", ("pad",), contiguous=True)[:] = np.zeros(1 << 20, "f4")
    with h5py.File(path, "a") as f:
        space = h5py.h5s.create_simple((50,))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        compact = h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
        compact.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(50, dtype="<i4"))


def case_values_crash(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    write_far_apart(os.path.join(source, "far.nc4"))
    expected = source_values(os.path.join(source, "far.nc4"))
    os.environ["NCAFS_TEST_HELPER_CRASH_VALUES"] = "far.nc4"
    try:
        with Mount(source, "cache_timeout=0") as m:
            with netCDF4.Dataset(m.path("far.nc")) as ds:
                try:
                    ds["compact"][...]
                    check(False, "compact read although its helper died")
                except (OSError, RuntimeError):
                    pass
            # A failed read fails every later read of that open (fs/): a new open reads.
            with netCDF4.Dataset(m.path("far.nc")) as ds:
                for name in ("first", "deflated"):
                    v = ds[name]
                    v.set_auto_maskandscale(False)
                    check(np.array_equal(np.array(v[...]), expected[name]), name + " differs after a helper died")
            check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
            logged(m, "far.nc4", "signal")
    finally:
        del os.environ["NCAFS_TEST_HELPER_CRASH_VALUES"]


def case_budget(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    with netCDF4.Dataset(os.path.join(source, "many.nc4"), "w", format="NETCDF4") as ds:
        ds.createDimension("x", 2)
        for i in range(2000):
            v = ds.createVariable("v%04d" % i, "i2", ("x",))
            v.long_name = "variable number %d" % i
    write_kinds(os.path.join(source, "good.nc4"))
    expected = source_values(os.path.join(source, "good.nc4"))
    with Mount(source, "cache_timeout=0,max_file_metadata_mem=1M") as m:
        check(fails_or_absent(m.path("many.nc")), "many.nc read although it is over the budget")
        compare(m.path("good.nc"), expected, "good.nc beside a file over the budget")
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
        line = logged(m, "many.nc4", "2000 variables")
        check("max_file_metadata_mem" in line, "the refusal does not name the limit: " + line)


def write_partitions(folder, count, rows=2):
    """COUNT netCDF-4 partitions of pr(time, y) and time(time); their values, concatenated."""
    os.makedirs(folder, exist_ok=True)
    times, values = [], []
    for i in range(count):
        with netCDF4.Dataset(os.path.join(folder, "p%03d.nc4" % i), "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("y", 4)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2010-01-01"
            t[:] = np.arange(rows) + rows * i
            v = ds.createVariable("pr", "f4", ("time", "y"), zlib=True)
            v[:] = np.arange(rows * 4, dtype="f4").reshape(rows, 4) + 10 * i
    for i in range(count):  # read back by netCDF4-python, one file at a time
        with netCDF4.Dataset(os.path.join(folder, "p%03d.nc4" % i)) as ds:
            times.append(np.array(ds["time"][:]))
            values.append(np.array(ds["pr"][:]))
    return {"time": np.concatenate(times), "pr": np.concatenate(values)}


def ncafs_aggregate(out, inputs):
    r = subprocess.run([NCAFS, "aggregate", "-o", out] + inputs, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "ncafs aggregate failed (%d): %s" % (r.returncode, r.stderr[-3000:]))


def write_grouped_aggregation(path, parts, count, uris=None, sparse=False):
    """A CF-1.13 aggregation of pr(time, y) over COUNT partitions with its
    term variables in group /aggregation. URIS: the uris term's length
    instead of COUNT, every place written (SPARSE: only the first COUNT and
    the last, the rest never written)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.13"
        ds.createDimension("time", 2 * count)
        ds.createDimension("y", 4)
        pr = ds.createVariable("pr", "f4", ())
        pr.aggregated_dimensions = "time y"
        pr.aggregated_data = "map: /aggregation/map uris: /aggregation/uris identifiers: /aggregation/identifiers"
        g = ds.createGroup("aggregation")
        g.createDimension("j", 2)
        g.createDimension("i", count)
        g.createDimension("f_time", None if sparse else uris or count)  # unlimited: a sparse huge term
        g.createDimension("f_y", 1)
        m = g.createVariable("map", "i4", ("j", "i"), fill_value=-1)
        sizes = np.full((2, count), -1, "i4")
        sizes[0, :] = 2
        sizes[1, 0] = 4
        m[:] = sizes
        written = count if sparse else uris or count
        names = np.array([os.path.join(parts, "p%03d.nc4" % (i % count)) for i in range(written)], dtype=object)
        loc = g.createVariable("uris", str, ("f_time", "f_y"), chunksizes=(4096, 1) if sparse else None)
        loc[0:count, 0] = names[:count]
        if sparse:
            loc[uris - 1, 0] = "last"
        elif uris:
            loc[count:, 0] = names[count:]
        g.createVariable("identifiers", str, ())[...] = "pr"


def compare_aggregation(path, expected, what):
    with netCDF4.Dataset(path) as ds:
        for name in ("pr",) + (("time",) if "time" in ds.variables else ()):
            v = ds[name]
            v.set_auto_maskandscale(False)
            got = np.array(v[...])
            check(got.shape == expected[name].shape and np.array_equal(got, expected[name]),
                  "%s: %s differs from netCDF4-python's reading of the partitions" % (what, name))


def case_cf_terms(work):
    source = os.path.join(work, "src")
    expected3 = write_partitions(os.path.join(source, "few"), 3)
    ncafs_aggregate(os.path.join(source, "written.nc"), [os.path.join(source, "few", "p%03d.nc4" % i) for i in range(3)])
    expected100 = write_partitions(os.path.join(source, "many"), 100)
    write_grouped_aggregation(os.path.join(source, "grouped.nc"), "many", 100)
    forbid_library()
    os.environ["NCAFS_TEST_TERM_ROWS_BYTES"] = "256"
    try:
        with switched("NCAFS_HELPER_TIMING", "1"), Mount(source, "cache_timeout=0") as m:
            compare_aggregation(m.path("written.nc"), expected3, "the view of ncafs aggregate's file")
            compare_aggregation(m.path("grouped.nc"), {"pr": expected100["pr"]}, "the view of the grouped terms")
            check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
            check("NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON" not in m.log_text(), "the daemon called the libraries")
            # The first rows of the terms come with the inventory (one helper), never after it.
            for name in ("written.nc", "grouped.nc"):
                logged(m, "helper timing", name + " (inventory and term rows):")
            check(" (inventory):" not in m.log_text(), "an inventory asked without the rows of the terms")
        for name in ("written.nc", "grouped.nc"):
            r = subprocess.run([NCAFS, "check", os.path.join(source, name)], capture_output=True, text=True,
                               timeout=300)
            check(r.returncode == 0 and "FORBID" not in r.stderr,
                  "check %s failed (%d): %s" % (name, r.returncode, (r.stdout + r.stderr)[-3000:]))
    finally:
        del os.environ["NCAFS_TEST_FORBID_LIBRARY_IN_DAEMON"]
        del os.environ["NCAFS_TEST_TERM_ROWS_BYTES"]


def not_aggregated(path, shape):
    """True when the view at PATH fails, is absent or is no aggregation of pr of SHAPE
    (a file whose aggregation is refused is shown only as the real file it is)."""
    try:
        with netCDF4.Dataset(path) as ds:
            return "pr" not in ds.variables or ds["pr"].shape != shape
    except OSError:
        return True


def case_cf_terms_lie(work):
    source = os.path.join(work, "src")
    expected = write_partitions(os.path.join(source, "parts"), 3)
    inputs = [os.path.join(source, "parts", "p%03d.nc4" % i) for i in range(3)]
    ncafs_aggregate(os.path.join(source, "lie.nc"), inputs)
    ncafs_aggregate(os.path.join(source, "good.nc"), inputs)
    with switched("NCAFS_TEST_HELPER_LIE_TERMS", "lie.nc"), Mount(source, "cache_timeout=0") as m:
        check(not_aggregated(m.path("lie.nc"), expected["pr"].shape), "lie.nc aggregated although its helper's rows lie")
        compare_aggregation(m.path("good.nc"), expected, "good.nc beside a lying helper")
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
        logged(m, "lie.nc", "malformed rows")


def peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def case_cf_terms_huge(work):
    source = os.path.join(work, "src")
    expected = write_partitions(os.path.join(source, "parts"), 3)
    write_grouped_aggregation(os.path.join(source, "sparse.nc"), "parts", 3, uris=1 << 27, sparse=True)
    write_grouped_aggregation(os.path.join(source, "big.nc"), "parts", 3, uris=1 << 17)
    write_grouped_aggregation(os.path.join(source, "good.nc"), "parts", 3)
    check(os.path.getsize(os.path.join(source, "sparse.nc")) < (1 << 20), "the sparse term is not sparse")
    os.environ["NCAFS_TEST_TERM_ROWS_BYTES"] = "65536"
    try:
        with Mount(source, "cache_timeout=0,max_file_metadata_mem=1M") as m:
            for name in ("sparse.nc", "big.nc"):
                check(not_aggregated(m.path(name), expected["pr"].shape), name + " aggregated although its term is refused")
            compare_aggregation(m.path("good.nc"), {"pr": expected["pr"]}, "good.nc beside huge terms")
            check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
            logged(m, "sparse.nc", "variable /aggregation/uris")
            line = logged(m, "big.nc", "term variable")
            check("max_file_metadata_mem" in line, "the refusal does not name the limit: " + line)
            check(peak_kib(m.process.pid) < (1 << 20), "the daemon's peak memory passed 1 GiB")
    finally:
        del os.environ["NCAFS_TEST_TERM_ROWS_BYTES"]


if __name__ == "__main__":
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"  # fresh inputs read as settled ones (tests/README.md)
    sys.exit(run_cases({"kinds": case_kinds, "lie": case_lie, "values_crash": case_values_crash, "budget": case_budget,
                       "cf_terms": case_cf_terms, "cf_terms_lie": case_cf_terms_lie, "cf_terms_huge": case_cf_terms_huge}, "ncafs-netcdf4-out-"))
