#!/usr/bin/python3
"""What a netCDF-4 file holds that the classic views leave out, said once.

Run as: test_left_out.py CASE   (CASE: netcdf4)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

A netCDF-4 file written by netCDF4-python with a string variable, two groups
and a numeric variable: through a real mount the views read without the string
variable (the numeric one as written), the debug log (-o debug; nothing at
the default level) says what was left out in ONE line however often the
folder is listed and the view read, and
`ncafs inspect` lists each item. A CF-1.13 aggregation file (ncgen) whose
term variables are netCDF-4 strings: `inspect` counts them as private
variables and does not call them left out.
"""
import os
import subprocess
import sys

import netCDF4
import numpy as np

from test_mount import NCAFS, Mount, check, run_cases  # noqa: F401

T_VALUES = np.array([1.5, -2.25, 1e300], dtype="f8")


def write_file(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 3)
        names = ds.createVariable("names", str, ("n",))
        names[:] = np.array(["a", "bb", "ccc"], dtype=object)
        ds.createVariable("t", "f8", ("n",))[:] = T_VALUES
        ds.createGroup("sub").createVariable("y", "i4", ())
        ds.createGroup("other")


def write_cf_aggregation(folder):
    for i, name in enumerate(("a.nc", "b.nc")):
        with netCDF4.Dataset(os.path.join(folder, name), "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("x", 2)
            ds.createVariable("v", "f8", ("x",))[:] = [10.0 * i, 10.0 * i + 1]
    cdl = """netcdf agg {
dimensions: x = 4 ; f_x = 2 ; j = 1 ; i = 2 ;
variables:
  double v ; v:aggregated_dimensions = "x" ;
    v:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  int fragment_map(j, i) ;
  string fragment_uris(f_x) ;
  string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 2, 2 ;
  fragment_uris = "a.nc", "b.nc" ;
  fragment_identifiers = "v" ;
}
"""
    ncgen4(folder, cdl)


def ncgen4(folder, cdl):
    """FOLDER/agg.nc4, written by ncgen from the CDL text."""
    cdl_path = os.path.join(folder, "agg.cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    out = os.path.join(folder, "agg.nc4")
    r = subprocess.run(["ncgen", "-4", "-o", out, cdl_path], capture_output=True, text=True)
    check(r.returncode == 0, "ncgen failed: " + r.stderr)
    os.unlink(cdl_path)
    return out


def inspect(path):
    r = subprocess.run([NCAFS, "inspect", path], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "inspect %s failed: %s" % (path, r.stdout + r.stderr))
    return r.stdout


def case_netcdf4(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    write_file(os.path.join(src, "strs.nc4"))
    with Mount(src) as m:  # the default log level: a fact about the file, not logged
        os.listdir(m.mnt)
        with netCDF4.Dataset(m.path("strs.nc")) as ds:
            check("names" not in ds.variables, "the string variable is left out")
        check("left out" not in m.log_text(), "left out, logged at the default level:\n" + m.log_text())
    with Mount(src, "debug") as m:
        for _ in range(3):
            names = os.listdir(m.mnt)
            check("strs.nc" in names, "strs.nc listed: %s" % names)
            with netCDF4.Dataset(m.path("strs.nc")) as ds:
                check("names" not in ds.variables, "the string variable is left out")
                check(np.array_equal(np.asarray(ds["t"][:]), T_VALUES), "t reads as written")
            with open(m.path("strs.ds"), "rb") as f:
                f.read()
        lines = [line for line in m.log_text().splitlines() if "strs.nc4: left out:" in line]
        check(len(lines) == 1, "one log line for what strs.nc4 leaves out:\n" + m.log_text())
        check("variable names skipped" in lines[0] and "groups sub, other left out" in lines[0],
              "the line names the string variable and the groups: " + lines[0])
    out = inspect(os.path.join(src, "strs.nc4"))
    check("left out: %s: variable names skipped" % os.path.join(src, "strs.nc4") in out, "inspect lists names:\n" + out)
    check("groups sub, other left out" in out, "inspect lists the groups:\n" + out)

    cf = os.path.join(work, "cf")
    os.makedirs(cf)
    write_cf_aggregation(cf)
    out = inspect(os.path.join(cf, "agg.nc4"))
    # fragment_map (int), fragment_uris and fragment_identifiers (strings).
    check("3 private variable(s)" in out, "the string term variables count as private:\n" + out)
    check("left out" not in out, "private term variables are not 'left out':\n" + out)


if __name__ == "__main__":
    sys.exit(run_cases({"netcdf4": case_netcdf4}, "ncafs-left-out-"))
