#!/usr/bin/python3
"""`ncafs inspect` of every aggregation convention, text and --json.

Run as: test_inspect.py CASE   (CASE: cf_missing | calendars | fixtures)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

cf_missing: 36 monthly partitions written by netCDF4-python, aggregated by
`ncafs aggregate` (CF-1.13), one partition file removed: the report lists
both master arrays with their shapes and partition counts, the missing file
and the coverage bar, and no partition is opened or read (inotify); with an
actual_range on the aggregated time (as NCO's ncatted would add) the range
is decoded as netCDF4.num2date decodes it;
--json parses and holds the same numbers.
calendars: a coordinate in each CF calendar (aliases included) kept in the aggregation file
itself (no partition opened) decode as num2date does.
fixtures: the CFA-0.6 and CF draft files of other writers report their
master arrays, with the shapes their dimensions give, and their partition
files as refused (outside the allowed roots) or missing.
"""
import json
import os
import subprocess
import sys

import netCDF4
import numpy as np

from test_left_out import ncgen4
from test_mount import NCAFS, check, run_cases

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "security"))
from test_listing_race import Watch  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "aggregation-examples")
UNITS = "days since 2000-01-01"


def inspect(*args):
    r = subprocess.run([NCAFS, "inspect", *args], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "inspect %s failed: %s" % (args, r.stdout + r.stderr))
    return r.stdout


def day(value, units, calendar):
    """num2date's date, with its time of day when not midnight (as inspect writes it)."""
    d = netCDF4.num2date(value, units, calendar)
    return d.strftime("%Y-%m-%d") + (d.strftime(" %H:%M:%S") if (d.hour, d.minute, d.second) != (0, 0, 0) else "")


def write_months(folder, calendar):
    months = []
    for m in range(36):
        path = os.path.join(folder, "tas_%02d.nc" % m)
        with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 2)
            t = ds.createVariable("time", "f8", ("time",))
            t.units, t.calendar = UNITS, calendar
            t[:] = [15.0 + 30.0 * m]
            ds.createVariable("tas", "f4", ("time", "lat"))[:] = np.full((1, 2), m, "f4")
        months.append(path)
    return months


def arrays_of(text):
    """{name: (shape, partitions)} from the text report."""
    out, name = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and " shape [" in line:
            name = line.split("(")[0]
            shape = json.loads(line.split(" shape ")[1].split(" units")[0])
            out[name] = [shape, None]
        elif name and line.startswith("  partition matrix:"):
            out[name][1] = int(line.split(", ")[-1].split(" ")[0])
    return out


def case_cf_missing(work):
    parts = os.path.join(work, "parts")
    os.makedirs(parts)
    months = write_months(parts, "standard")
    agg = os.path.join(work, "tas_agg.nc")
    r = subprocess.run([NCAFS, "aggregate", "--dim", "time", "-o", agg, *months], capture_output=True, text=True)
    check(r.returncode == 0, "aggregate failed: " + r.stderr)
    times = [netCDF4.Dataset(p)["time"][0] for p in months]
    os.unlink(months[7])
    watch = Watch(parts)
    text = inspect(agg)
    check(watch.events() == [], "inspect opened or read a partition: %s" % watch.events())
    check(text.splitlines()[0].endswith("2 master array(s), 2 variable(s) presented, 6 private variable(s) and "
                                        "5 private dimension(s) hidden"), "header line:\n" + text)
    check(arrays_of(text) == {"time": [[36], 36], "tas": [[36, 2], 36]}, "master arrays:\n" + text)
    check(text.count("  missing: " + months[7] + "\n") == 2, "the missing file, once per array:\n" + text)
    bar = "#" * 7 + "." + "#" * 28
    check(text.count("  time  [0:36)  [%s] 36 partitions, 1 missing" % bar) == 2, "coverage line:\n" + text)
    check("files: 36 (35 present" in text, "35 of 36 files present:\n" + text)

    with netCDF4.Dataset(agg, "a") as ds:
        ds["time"].actual_range = np.array([min(times), max(times)])
    text = inspect(agg)
    first, last = day(min(times), UNITS, "standard"), day(max(times), UNITS, "standard")
    line = "  time  %s..%s  [%s] 36 partitions, 1 missing" % (first, last, bar)
    check(text.count(line) == 2, "decoded range %s:\n%s" % (line, text))

    doc = json.loads(inspect("--json", agg))
    (report,) = doc["files"]
    check(report["file"] == agg and report["left_out"] == [], "file and notes: %s" % report)
    arrays = {a["name"]: a for a in report["master_arrays"]}
    check(sorted(arrays) == ["tas", "time"], "json arrays: %s" % sorted(arrays))
    for name, shape in (("time", [36]), ("tas", [36, 2])):
        a = arrays[name]
        check(a["shape"] == shape and a["partitions"] == 36 and a["files"] == 36 and a["files_present"] == 35,
              "json numbers of %s: %s" % (name, a))
        check(a["missing_files"] == [months[7]], "json missing file: %s" % a["missing_files"])
        (cov,) = a["coverage"]
        check(cov["name"] == "time" and cov["bar"] == bar and cov["partitions"] == 36 and cov["missing"] == 1,
              "json coverage: %s" % cov)
        check((cov["first_date"], cov["last_date"]) == (first, last) and cov["first"] == min(times),
              "json range: %s" % cov)


def case_calendars(work):
    for calendar in ("360_day", "noleap", "all_leap", "julian", "proleptic_gregorian", "gregorian"):
        folder = os.path.join(work, calendar)
        os.makedirs(folder)
        for i in range(2):
            with netCDF4.Dataset(os.path.join(folder, "p%d.nc" % i), "w", format="NETCDF3_CLASSIC") as ds:
                ds.createDimension("time", 3)
                ds.createVariable("v", "f8", ("time",))[:] = np.arange(3) + 3 * i
        # A CF-1.13 file whose time coordinate lives in the file itself (ncgen).
        values = [45.0, 400.5, 1000.0, 1500.0, 2000.0, 3650.25]
        cdl = """netcdf agg {
dimensions: time = 6 ; f_time = 2 ; j = 1 ;
variables:
  double time(time) ; time:units = "%s" ; time:calendar = "%s" ;
  double v ; v:aggregated_dimensions = "time" ;
    v:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  int fragment_map(j, f_time) ; string fragment_uris(f_time) ; string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  time = %s ; fragment_map = 3, 3 ; fragment_uris = "p0.nc", "p1.nc" ; fragment_identifiers = "v" ;
}
""" % (UNITS, calendar, ", ".join(str(v) for v in values))
        agg = ncgen4(folder, cdl)
        text = inspect(agg)
        expect = "  time  %s..%s  [######] 2 partitions, 0 missing" % (day(values[0], UNITS, calendar),
                                                                     day(values[-1], UNITS, calendar))
        check(expect in text, "%s: expected %r:\n%s" % (calendar, expect, text))
        check(arrays_of(text) == {"v": [[6], 2]}, "%s master array:\n%s" % (calendar, text))


def case_fixtures(work):
    del work
    for rel in ("cfa-0.6.2/rainmaker.nca", "cf-draft-2024-location-address-shape/testrain.nca"):
        path = os.path.join(EXAMPLES, rel)
        with netCDF4.Dataset(path) as ds:
            shape = [len(ds.dimensions[d]) for d in ("time", "latitude", "longitude")]
        text = inspect(path)
        check(": 1 master array(s)," in text.splitlines()[0], "%s: one master array:\n%s" % (rel, text))
        check(arrays_of(text) == {"p": [shape, 10]}, "%s: p and its partitions:\n%s" % (rel, text))
        check("  time  " in text and "10 partitions, 10 missing" in text, "%s: coverage line:\n%s" % (rel, text))
        report = json.loads(inspect("--json", path))["files"][0]
        (p,) = report["master_arrays"]
        check(p["shape"] == shape and p["partitions"] == 10, "%s json: %s" % (rel, p))
        # rainmaker names /home/users/...: outside the allowed roots, refused
        # whether or not it exists; testrain's files lie beside it, absent.
        outside = rel.startswith("cfa-0.6")
        check(len(p["refused_files" if outside else "missing_files"]) == 10 and
              len(p["missing_files" if outside else "refused_files"]) == 0, "%s json files: %s" % (rel, p))
        check(text.count("  refused: " if outside else "  missing: ") == 10, "%s: the files listed:\n%s" % (rel, text))


if __name__ == "__main__":
    sys.exit(run_cases({"cf_missing": case_cf_missing, "calendars": case_calendars, "fixtures": case_fixtures},
                       "ncafs-inspect-"))
