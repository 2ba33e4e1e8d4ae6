#!/usr/bin/python3
"""A realistic NCA aggregation for the client tests: four record-dimension
partitions (time UNLIMITED, `noleap` calendar, time bounds) of a packed
short variable (scale_factor/add_offset/_FillValue) and a float variable
with _FillValue and gaps, plus the NCA file that aggregates them along time.

write(folder) -> list of partition paths (in time order); the NCA file is
folder/real.nca. The partitions alone are what ncrcat concatenates.
"""
import json
import os

import netCDF4
import numpy as np

STEPS = [3, 2, 4, 3]  # time steps per partition
NLAT, NLON = 4, 5
PS_SCALE, PS_OFFSET, PS_FILL = np.float32(0.01), np.float32(1000.0), np.int16(-32767)
TAS_FILL = np.float32(1.0e20)


def _dimensions_and_coordinates(ds):
    """What a partition and the aggregation file share: an unlimited time,
    the grid and the bounds dimension, and the lat/lon coordinates."""
    ds.createDimension("time", None)
    ds.createDimension("lat", NLAT)
    ds.createDimension("lon", NLON)
    ds.createDimension("nv", 2)
    _coordinates(ds)


def _partition(path, first, n):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.8"
        ds.title = "realistic partition"
        _dimensions_and_coordinates(ds)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.bounds, t.standard_name = "days since 2000-01-01", "noleap", "time_bnds", "time"
        b = ds.createVariable("time_bnds", "f8", ("time", "nv"))
        days = 365.0 + 30.0 * np.arange(first, first + n)
        t[:] = days + 15.0
        b[:] = np.stack([days, days + 30.0], axis=1)
        ps = ds.createVariable("ps", "i2", ("time", "lat", "lon"), fill_value=PS_FILL)
        ps.set_auto_maskandscale(False)
        ps.scale_factor, ps.add_offset, ps.units = PS_SCALE, PS_OFFSET, "hPa"
        raw = (np.arange(n * NLAT * NLON).reshape(n, NLAT, NLON) * 37 + first * 1000 - 9000).astype("i2")
        raw[:, 0, 0] = PS_FILL  # a missing station
        ps[:] = raw
        tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=TAS_FILL)
        tas.set_auto_maskandscale(False)
        tas.units, tas.cell_methods = "K", "time: mean"
        vals = (250.0 + np.arange(n * NLAT * NLON).reshape(n, NLAT, NLON) * 0.25 + first).astype("f4")
        vals[:, 1:3, 2] = TAS_FILL  # gaps
        if first == 3:
            vals[1] = TAS_FILL  # a whole missing time step
        tas[:] = vals


def _coordinates(ds):
    lat = ds.createVariable("lat", "f4", ("lat",))
    lat.units, lat.standard_name = "degrees_north", "latitude"
    lat[:] = np.linspace(-60, 60, NLAT)
    lon = ds.createVariable("lon", "f4", ("lon",))
    lon.units, lon.standard_name = "degrees_east", "longitude"
    lon[:] = np.linspace(0, 288, NLON)


def _nca(folder, parts):
    total = sum(STEPS)
    with netCDF4.Dataset(os.path.join(folder, "real.nca"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.8 NCA"
        ds.title = "realistic partition"
        _dimensions_and_coordinates(ds)
        # time and its bounds are small: ordinary variables of the aggregation file.
        with netCDF4.MFDataset(parts) as src:
            times, bounds = src.variables["time"][:], src.variables["time_bnds"][:]
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.bounds, t.standard_name = "days since 2000-01-01", "noleap", "time_bnds", "time"
        t[:] = times
        b = ds.createVariable("time_bnds", "f8", ("time", "nv"))
        b[:] = bounds
        for name, dtype, attrs in (("ps", "i2", {"scale_factor": PS_SCALE, "add_offset": PS_OFFSET, "units": "hPa"}),
                                   ("tas", "f4", {"units": "K", "cell_methods": "time: mean"})):
            fill = PS_FILL if name == "ps" else TAS_FILL
            v = ds.createVariable(name, dtype, (), fill_value=fill)
            v.setncatts(attrs)
            v.cf_role = "nca_variable"
            v.nca_dimensions = "time lat lon"
            partitions, start = [], 0
            for k, (p, n) in enumerate(zip(parts, STEPS)):
                partitions.append({"index": [k], "location": [[start, start + n - 1], [0, NLAT - 1], [0, NLON - 1]],
                                   "subarray": {"file": os.path.basename(p), "ncvar": name, "shape": [n, NLAT, NLON]}})
                start += n
            v.nca_array = json.dumps({"pmdimensions": ["time"], "pmshape": [len(parts)], "Partitions": partitions})
    assert start == total


def write(folder):
    os.makedirs(folder, exist_ok=True)
    parts, first = [], 0
    for k, n in enumerate(STEPS):
        p = os.path.join(folder, "real_%02d.nc" % k)
        _partition(p, first, n)
        parts.append(p)
        first += n
    _nca(folder, parts)
    return parts
