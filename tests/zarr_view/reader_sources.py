"""The datasets whose `.zarr` views the tests of foreign readers (GDAL, HTTP
clients, Dask) read, and the `.nc` view's values they are compared with.

make_sources(SRC) writes, and returns as (stem, folder) beside each other:
  cls       a classic file (UNLIMITED time, CF attributes, a fill value, a
            char array, a scalar): its store is spliced, big-endian
  deflated  a deflated chunked netCDF-4 file (zlib + shuffle, UNLIMITED
            time, int64 with a fill value, char strings): computed,
            little-endian
  gappy     an NCA aggregation of CDF-5 partitions along UNLIMITED time
            holding int64 values, one partition missing (the mount takes
            MOUNT_OPTIONS: missing_partitions=fill)
"""
import collections
import os

import netCDF4
import numpy as np

from test_zarr_view import classic, deflated_netcdf4  # (it puts tests/e2e on the path)
import make_aggregations  # noqa: E402

MOUNT_OPTIONS = "missing_partitions=fill"
GAP_PARTS, GAP_STEPS = 8, 3  # time: 8 partitions of 3 records; the fourth is missing


def gappy_aggregation(folder):
    make_aggregations.write_aggregation(
        folder, "gappy", ["time", "y", "x"], {"time": GAP_PARTS * GAP_STEPS, "y": 6, "x": 7},
        {"time": [GAP_STEPS] * GAP_PARTS, "y": [6], "x": [7]}, var="n", dtype="i8",
        partition_format="NETCDF3_64BIT_DATA", nca_format="NETCDF3_64BIT_DATA", record_dim="time",
        coordinate="time")
    os.unlink(os.path.join(folder, "part_03_00_00.nc"))


def make_sources(src):
    os.makedirs(src)
    classic(os.path.join(src, "cls.nc"))
    deflated_netcdf4(os.path.join(src, "deflated.nc4"))
    gappy_aggregation(os.path.join(src, "gap"))
    return [("cls", ""), ("deflated", ""), ("gappy", "gap")]


Variable = collections.namedtuple("Variable", "values dims fill")


def raw_variables(nc_path):
    """{name: Variable}: the values as stored (no mask or scaling; char arrays as S1), the
    dimension names and the _FillValue (None without one)."""
    with netCDF4.Dataset(nc_path) as nc:
        nc.set_auto_maskandscale(False)
        return {name: Variable(v[...], v.dimensions, v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None)
                for name, v in nc.variables.items()}


def decoded_variables(nc_path):
    """{name: float64 values, fill values and missing values NaN, CF scaling applied} of the
    numeric variables, as netCDF4-python decodes them."""
    out = {}
    with netCDF4.Dataset(nc_path) as nc:
        for name, v in nc.variables.items():
            if v.dtype.kind in "iuf":
                values = v[...]
                out[name] = np.ma.masked_array(values).astype("f8").filled(float("nan"))
    return out
