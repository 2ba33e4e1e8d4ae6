#!/usr/bin/python3
"""Partition files for the `ncafs aggregate` round trip, written with netCDF4-python.

Usage: make_partitions.py OUTDIR KIND   (KIND: time | packed | tiles | mismatch | classic4)
time:     5 classic files split along an unlimited time (lengths 3,4,2,5,1),
          time in "days since 2000-01-01" except part_3 ("hours since 2000-01-03"),
          tas with a _FillValue and masked points, time_bnds, lat/lon/crs (not along time).
packed:   3 files whose tas is packed into shorts with per-file scale_factor /
          add_offset; OUTDIR/expected.nc holds the unpacked values (netCDF4-python).
tiles:    4 files tiling time x lat (2 x 2), lat decreasing.
mismatch: 2 files whose lat:units differ (must be refused).
"""
import os
import sys

import netCDF4
import numpy as np

out, kind = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def part(path, t0, times, lats, tas=None, fmt="NETCDF3_CLASSIC", time_units="days since 2000-01-01", lat_units="degrees_north",
         packing=None, calendar=None):
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", len(lats))
        ds.createDimension("lon", 6)
        ds.createDimension("nv", 2)
        ds.title = "partition"
        ds.history = "made for " + os.path.basename(path)  # differs: a warning, not an error
        t = ds.createVariable("time", "f8", ("time",))
        t.units = time_units
        if calendar is not None:
            t.calendar = calendar
        t.bounds = "time_bnds"
        t[:] = times
        b = ds.createVariable("time_bnds", "f8", ("time", "nv"))
        b[:] = np.stack([times - 0.5, times + 0.5], axis=1)
        la = ds.createVariable("lat", "f4", ("lat",))
        la.units = lat_units
        la[:] = lats
        lo = ds.createVariable("lon", "f4", ("lon",))
        lo.units = "degrees_east"
        lo[:] = np.arange(6) * 60.0
        c = ds.createVariable("crs", "i4", ())
        c.grid_mapping_name = "latitude_longitude"
        c[...] = 0
        if packing:
            sf, ao = packing
            v = ds.createVariable("tas", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767))
            v.scale_factor = np.float32(sf)
            v.add_offset = np.float32(ao)
        else:
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(-999.0))
        v.units = "K"
        v.grid_mapping = "crs"
        v[:] = tas


if kind in ("time", "classic4"):
    lengths = [3, 4, 2, 5, 1]
    t = 0
    for i, n in enumerate(lengths):
        times = np.arange(t, t + n, dtype="f8")
        tas = np.ma.masked_array(rng.uniform(250, 300, (n, 4, 6)).astype("f4"))
        tas[0, 1, 2] = np.ma.masked
        units = "days since 2000-01-01"
        if i == 3:  # same instants in other units: converted to the first file's on read
            units, times = "hours since 2000-01-03", (times - 2) * 24
        part(os.path.join(out, f"part_{i}.nc"), t, times, np.array([-60, -20, 20, 60], "f4"), tas, time_units=units,
             fmt="NETCDF4" if kind == "classic4" else "NETCDF3_CLASSIC")
        t += n
elif kind == "packed":
    full = []
    for i, (sf, ao) in enumerate([(0.01, 270.0), (0.02, 280.0), (0.005, 290.0)]):
        phys = rng.uniform(260, 300, (2, 4, 6))
        tas = np.ma.masked_array(phys)
        tas[1, 0, 0] = np.ma.masked
        part(os.path.join(out, f"part_{i}.nc"), 2 * i, np.arange(2 * i, 2 * i + 2, dtype="f8"),
             np.array([-60, -20, 20, 60], "f4"), tas, packing=(sf, ao))
        with netCDF4.Dataset(os.path.join(out, f"part_{i}.nc")) as ds:
            full.append(np.ma.filled(ds["tas"][:].astype("f4"), netCDF4.default_fillvals["f4"]))  # its own unpacking
    with netCDF4.Dataset(os.path.join(out, "expected.nc"), "w") as ds:
        ds.createDimension("n", None)
        e = np.concatenate(full).ravel()
        v = ds.createVariable("tas", "f4", ("n",), fill_value=False)
        v[:] = e
elif kind == "tiles":
    for ti in range(2):
        for li, lats in enumerate([np.array([60, 20], "f4"), np.array([-20, -60], "f4")]):
            tas = np.ma.masked_array(rng.uniform(250, 300, (3, 2, 6)).astype("f4"))
            part(os.path.join(out, f"tile_{ti}_{li}.nc"), 3 * ti, np.arange(3 * ti, 3 * ti + 3, dtype="f8"), lats, tas)
elif kind == "no_records":
    # The newest file of a growing archive, created but not yet written (UNLIMITED time of length 0).
    for i, n in enumerate([2, 2, 0]):
        part(os.path.join(out, f"part_{i}.nc"), 2 * i, np.arange(2 * i, 2 * i + n, dtype="f8"),
             np.array([-60, -20, 20, 60], "f4"), rng.uniform(250, 300, (n, 4, 6)).astype("f4"))
elif kind == "mismatch":
    for i, u in enumerate(["degrees_north", "degree_north"]):
        part(os.path.join(out, f"part_{i}.nc"), 2 * i, np.arange(2 * i, 2 * i + 2, dtype="f8"),
             np.array([-60, -20, 20, 60], "f4"), rng.uniform(250, 300, (2, 4, 6)).astype("f4"), lat_units=u)
elif kind in ("calendars", "calendars_noleap", "calendars_mixed"):
    # Spellings CF-1.13 (4.4.3) gives for one calendar, and (mixed) two calendars.
    names = {"calendars": ["standard", "gregorian", " Gregorian", "standard"],
             "calendars_noleap": ["noleap", "365_day", "NOLEAP", "365_day"],
             "calendars_mixed": ["standard", "noleap", "standard", "standard"]}[kind]
    for i, cal in enumerate(names):
        part(os.path.join(out, f"part_{i}.nc"), 2 * i, np.arange(2 * i, 2 * i + 2, dtype="f8"),
             np.array([-60, -20, 20, 60], "f4"), rng.uniform(250, 300, (2, 4, 6)).astype("f4"), calendar=cal)
