#!/usr/bin/env python3
"""An incomplete collection: 36 monthly partitions (deflated netCDF-4, time
UNLIMITED) aggregated by `ncafs aggregate` (CF-1.13), one month removed and
one replaced by a file of no dataset format.

  fill   -o missing_partitions=fill: xarray, NCO (ncks) and CDO (cdo infon)
         read the whole view; values equal the partitions' own (read by
         netCDF4-python from the files) where present, the fill value (NaN in
         xarray) where missing; one log line for the missing partition however
         many reads; `ncafs export` gives the same values; `ncafs check`
         reports it. With the default (error), a read of the missing month
         fails with EIO; with fill, a damaged netCDF partition still does.
  first_contact  the default (error): the log line of the first failed
         read, `ncafs check`, `export` and `inspect` name the missing file
         and -o missing_partitions=fill.
"""
import errno
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mount import Mount, check, fail, NCAFS, run_cases  # noqa: E402

MONTHS, LAT, LON = 36, 6, 8
GONE = 17  # the month removed
JUNK = 30   # the month whose file holds no dataset (an error page saved in its place)
FILL = np.float32(1.0e20)


def write_partitions(folder):
    """{month: tas array} of 36 one-step partitions, as written."""
    import netCDF4
    os.makedirs(folder)
    written = {}
    rng = np.random.default_rng(23)
    for m in range(MONTHS):
        values = rng.normal(280, 10, (1, LAT, LON)).astype("f4")
        values[0, 0, m % LON] = FILL  # a masked cell of the partition's own
        with netCDF4.Dataset(os.path.join(folder, "tas_%02d.nc" % m), "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", LAT)
            ds.createDimension("lon", LON)
            t = ds.createVariable("time", "f8", ("time",))
            t.units, t.calendar, t.standard_name = "days since 2000-01-01", "standard", "time"
            t[:] = [30.0 * m]
            la = ds.createVariable("lat", "f4", ("lat",))
            la.units, la[:] = "degrees_north", np.linspace(-50, 50, LAT)
            lo = ds.createVariable("lon", "f4", ("lon",))
            lo.units, lo[:] = "degrees_east", np.linspace(0, 315, LON)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, fill_value=FILL)
            v.units, v.standard_name = "K", "air_temperature"
            v[:] = values
        written[m] = values[0]
    return written


def partition_values(path):
    """The partition's tas as netCDF4-python reads it (raw, unmasked)."""
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds.variables["tas"]
        v.set_auto_maskandscale(False)
        return np.array(v[0])


def expected(folder, gone_values):
    """[MONTHS, LAT, LON]: each present partition's values, the fill where missing."""
    out = np.empty((MONTHS, LAT, LON), "f4")
    for m in range(MONTHS):
        path = os.path.join(folder, "tas_%02d.nc" % m)
        out[m] = partition_values(path) if os.path.exists(path) and m != JUNK else FILL
    check(not np.array_equal(out[GONE], gone_values), "the missing month must differ from its lost values")
    return out


def raw_tas(path):
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds.variables["tas"]
        v.set_auto_maskandscale(False)
        return np.array(v[:])


def run(cmd, want_code=0):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    check(r.returncode == want_code, "%s: exit %d, want %d:\n%s%s" % (" ".join(cmd), r.returncode, want_code,
                                                                     r.stdout[-2000:], r.stderr[-2000:]))
    return r


def expect_eio(path, what):
    """A whole read of path fails with EIO."""
    try:
        with open(path, "rb") as f:
            f.read()
    except OSError as e:
        check(e.errno == errno.EIO, "%s: %s, want EIO" % (what, e))
        return
    fail("%s: the whole read must fail with EIO" % what)


def fill_lines(log, variable="", month=GONE):
    gone = "tas_%02d.nc" % month
    return [line for line in log.splitlines() if gone in line and "missing_partitions=fill" in line
            and "read as the fill value" + variable in line]


def case_fill(work):
    import xarray
    source = os.path.join(work, "src")
    parts = os.path.join(source, "parts")
    written = write_partitions(parts)
    agg = os.path.join(source, "tas.nc")
    run([NCAFS, "aggregate", "--dim", "time", "-o", agg, parts])
    os.unlink(os.path.join(parts, "tas_%02d.nc" % GONE))
    with open(os.path.join(parts, "tas_%02d.nc" % JUNK), "wb") as f:
        f.write(b"<html><body>404 Not Found</body></html>\n")
    want = expected(parts, written[GONE])

    # error (the default): a read of the missing month's bytes fails with EIO
    # (interleaved records: here every block holds some of them).
    with Mount(source) as m:
        fd = os.open(m.path("tas.nc"), os.O_RDONLY)
        try:
            check(os.pread(fd, 4, 0) == b"CDF\x01" or os.pread(fd, 4, 0) == b"CDF\x02", "error: the header reads")
            try:
                os.pread(fd, 1 << 20, 0)
                check(False, "error: a read of the whole view must fail")
            except OSError as e:
                check(e.errno == errno.EIO, "error: %s, want EIO" % e)
        finally:
            os.close(fd)

    with Mount(source, "missing_partitions=fill") as m:
        view = m.path("tas.nc")
        # xarray: masked -> NaN where the fill is, the partitions' values elsewhere.
        for _ in range(2):  # a second whole read: still one log line
            with xarray.open_dataset(view) as ds:
                got = ds["tas"].load().values
                times = ds["time"].values
        check(got.shape == want.shape, "xarray: shape %s" % (got.shape,))
        masked = want == FILL
        check(np.array_equal(np.isnan(got), masked), "xarray: NaN exactly where the fill is")
        check(np.array_equal(got[~masked], want[~masked]), "xarray: values differ from the partitions'")
        check(np.isnan(got[GONE]).all() and np.isnan(got[JUNK]).all(), "xarray: the missing months must be all NaN")
        check(len(times) == MONTHS, "xarray: %d times" % len(times))
        # NCO: a whole copy of the view, read back by netCDF4-python.
        copied = os.path.join(work, "ncks.nc")
        run(["ncks", "-O", view, copied])
        check(np.array_equal(raw_tas(copied), want), "ncks: values differ")
        # CDO: one line per time step, the missing month all missing.
        out = run(["cdo", "-s", "infon", view]).stdout
        rows = [line.split() for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
        check(len(rows) == MONTHS, "cdo infon: %d rows, want %d:\n%s" % (len(rows), MONTHS, out))
        header = out.splitlines()[0].split()
        miss = header.index("Miss")
        misses = [int(r[miss]) for r in rows]  # "N : Date Time Level Gridsize Miss : ..."
        check(all(n == (LAT * LON if i in (GONE, JUNK) else 1) for i, n in enumerate(misses)),
              "cdo infon: missing values per month %s" % misses)
        for month in (GONE, JUNK):
            lines = fill_lines(m.log_text(), month=month)
            check(len(lines) == 1, "want one log line for partition %d, got %d:\n%s" % (month, len(lines), m.log_text()))

    # export: the same values, the same one line on stderr.
    exported = os.path.join(work, "export.nc")
    r = run([NCAFS, "export", agg, "-o", exported, "-o", "missing_partitions=fill"])
    check(np.array_equal(raw_tas(exported), want), "export: values differ")
    check(len(fill_lines(r.stderr)) == 1, "export: want one line for the missing partition:\n" + r.stderr)
    r = run([NCAFS, "export", agg, "-o", os.path.join(work, "refused.nc")], want_code=1)
    # check: still a finding, saying it reads as fill.
    r = run([NCAFS, "check", "-o", "missing_partitions=fill", agg], want_code=1)
    check(len(fill_lines(r.stdout, " of tas")) == 1, "check: want the missing partition reported as fill:\n" + r.stdout)
    check(len(fill_lines(r.stdout, " of tas", JUNK)) == 1, "check: want the junk partition reported as fill:\n" + r.stdout)

    # A damaged netCDF file (a CDF signature, then garbage) is never masked.
    with open(os.path.join(parts, "tas_03.nc"), "wb") as f:
        f.write(b"CDF\x01" + b"\xff" * 60)
    with Mount(source, "missing_partitions=fill") as m:
        expect_eio(m.path("tas.nc"), "fill: a damaged netCDF partition")


def case_first_contact(work):
    """With the default (error), the first EIO's log line, `ncafs check` and
    `ncafs export` name the missing file and missing_partitions=fill."""
    source = os.path.join(work, "src")
    parts = os.path.join(source, "parts")
    write_partitions(parts)
    agg = os.path.join(source, "tas.nc")
    run([NCAFS, "aggregate", "--dim", "time", "-o", agg, parts])
    gone = os.path.join(parts, "tas_%02d.nc" % GONE)
    os.unlink(gone)

    def advises(text):
        return [line for line in text.splitlines() if gone in line and "-o missing_partitions=fill" in line]

    with Mount(source) as m:
        expect_eio(m.path("tas.nc"), "error: a missing partition")
        failures = [line for line in m.log_text().splitlines() if "failed" in line]
        check(failures and advises(failures[0]),
              "the first failed read's log line must name %s and -o missing_partitions=fill:\n%s" % (gone, m.log_text()))
    r = run([NCAFS, "check", agg], want_code=1)
    check(advises(r.stdout), "check must name %s and the option:\n%s" % (gone, r.stdout))
    r = run([NCAFS, "export", agg, "-o", os.path.join(work, "refused.nc")], want_code=1)
    check(advises(r.stderr), "export must name %s and the option:\n%s" % (gone, r.stderr))
    r = run([NCAFS, "inspect", agg])
    check("missing: " + gone in r.stdout and "-o missing_partitions=fill" in r.stdout,
          "inspect must list %s and name the option:\n%s" % (gone, r.stdout))


CASES = {"fill": case_fill, "first_contact": case_first_contact}


if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-e2e-missing-"))
