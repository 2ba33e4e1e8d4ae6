#!/usr/bin/python3
"""Generates small NCA (G1) aggregations with netCDF4-python for the
end-to-end tests and the demo, and returns the master arrays they describe,
computed here from the same formulas (independent of ncafs).

Each aggregation: partition files part_*.nc beside NAME.nca, whose scalar
carrier variable holds the `nca_array` JSON (locations inclusive, as
cf-python writes them, with the sub-array shape so that the reading is
unambiguous).

Usage as a program: make_aggregations.py DIR [monthly|all]
"""
import json
import os
import sys

import netCDF4
import numpy as np


def _values(shape, dtype, seed):
    """Deterministic values that differ between partitions and positions."""
    n = int(np.prod(shape)) if shape else 1
    base = np.arange(n, dtype=np.float64).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return (base * 0.25 + seed * 1000.0 + 0.125).astype(dtype)
    info = np.iinfo(dtype)
    span = min(int(info.max) - max(int(info.min), 0), 1 << 40)
    return ((base.astype(np.int64) * 7 + seed * 1009) % span + max(int(info.min), 0)).astype(dtype)


def _nca_json(dims, pmdims, pmshape, partitions):
    return json.dumps({
        "directions": {d: True for d in dims},
        "pmdimensions": pmdims,
        "pmshape": pmshape,
        "Partitions": partitions,
    })


def write_aggregation(folder, name, dims, sizes, splits, var="tas", dtype="f4",
                      partition_format="NETCDF3_CLASSIC", nca_format="NETCDF3_CLASSIC",
                      record_dim=None, coordinate=None, nca_suffix=".nca", chunked=False):
    """Writes partitions and NAME.nca. `splits[d]` lists the partition
    lengths along dimension d (sum = sizes[d]). Returns the master array.
    record_dim: make this dimension unlimited in partitions and master (for
    ncrcat). coordinate: name of a dimension that gets a double coordinate
    variable (a normal variable in the NCA file, a partition variable too).
    chunked: netCDF-4 partitions chunked, one chunk per step of the first
    dimension, not deflated (partitions of one shape have one size)."""
    os.makedirs(folder, exist_ok=True)
    master = np.zeros([sizes[d] for d in dims], dtype=dtype)
    coord_values = None
    if coordinate is not None:
        coord_values = np.arange(sizes[coordinate], dtype="f8") * 30.0 + 15.0
    grid = [len(splits[d]) for d in dims]
    pmdims = [d for d in dims if len(splits[d]) > 1] or [dims[0]]
    pmshape = [len(splits[d]) for d in pmdims]
    partitions = []
    for index in np.ndindex(*grid):
        starts = [sum(splits[d][:i]) for d, i in zip(dims, index)]
        lengths = [splits[d][i] for d, i in zip(dims, index)]
        fname = "part_" + "_".join("%02d" % i for i in index) + ".nc"
        seed = len(partitions) + 1
        data = _values(lengths, dtype, seed)
        master[tuple(slice(s, s + l) for s, l in zip(starts, lengths))] = data
        with netCDF4.Dataset(os.path.join(folder, fname), "w", format=partition_format) as ds:
            for d, l in zip(dims, lengths):
                ds.createDimension(d, None if d == record_dim else l)
            layout = dict(contiguous=False, chunksizes=[1] + lengths[1:]) if chunked else {}
            v = ds.createVariable(var, dtype, dims, fill_value=False, **layout)
            v.units = "K"
            v[...] = data
            if coordinate is not None:
                ci = dims.index(coordinate)
                c = ds.createVariable(coordinate, "f8", (coordinate,))
                c.units = "days since 2000-01-01"
                c[:] = coord_values[starts[ci]:starts[ci] + lengths[ci]]
        partitions.append({
            "index": [index[dims.index(d)] for d in pmdims],
            "location": [[s, s + l - 1] for s, l in zip(starts, lengths)],
            "subarray": {"file": fname, "ncvar": var, "shape": lengths},
            "format": "netCDF",
        })
    with netCDF4.Dataset(os.path.join(folder, name + nca_suffix), "w", format=nca_format) as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.title = "test aggregation " + name
        for d in dims:
            ds.createDimension(d, None if d == record_dim else sizes[d])
        if coordinate is not None:
            c = ds.createVariable(coordinate, "f8", (coordinate,))
            c.units = "days since 2000-01-01"
            c[:] = coord_values
        carrier = ds.createVariable(var, dtype, (), fill_value=False)
        carrier.units = "K"
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = " ".join(dims)
        carrier.nca_array = _nca_json(dims, pmdims, pmshape, partitions)
    return {"master": master, "var": var, "coordinate": coord_values, "coordinate_name": coordinate}


def monthly(folder, name="monthly", lat=18, lon=36, per_month=2):
    """Twelve monthly partitions split along an unlimited time dimension."""
    return write_aggregation(folder, name, ["time", "lat", "lon"],
                             {"time": 12 * per_month, "lat": lat, "lon": lon},
                             {"time": [per_month] * 12, "lat": [lat], "lon": [lon]},
                             record_dim="time", coordinate="time")


def split_2d(folder, name="tiles"):
    """A 3x2 grid of tiles over lat x lon, fixed dimensions."""
    return write_aggregation(folder, name, ["time", "lat", "lon"], {"time": 3, "lat": 10, "lon": 12},
                             {"time": [3], "lat": [4, 3, 3], "lon": [5, 7]}, dtype="f8")


def cdf5_type(folder, name="counts"):
    """An unsigned 64-bit master (CDF-5 only) from CDF-5 partitions."""
    return write_aggregation(folder, name, ["y", "x"], {"y": 6, "x": 5}, {"y": [2, 4], "x": [5]},
                             var="counts", dtype="u8", partition_format="NETCDF3_64BIT_DATA",
                             nca_format="NETCDF3_64BIT_DATA")


def netcdf4_partitions(folder, name="nc4parts"):
    """Partitions in netCDF-4 (HDF5) files, a netCDF-4 aggregation file."""
    return write_aggregation(folder, name, ["time", "x"], {"time": 8, "x": 7}, {"time": [3, 5], "x": [7]},
                             var="v", dtype="i4", partition_format="NETCDF4", nca_format="NETCDF4")


ALL = {"monthly": monthly, "tiles": split_2d, "counts": cdf5_type, "nc4parts": netcdf4_partitions}


def main():
    folder = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "monthly"
    names = list(ALL) if which == "all" else [which]
    for n in names:
        ALL[n](os.path.join(folder, n) if which == "all" else folder)
        print(os.path.join(folder, n) if which == "all" else folder)


if __name__ == "__main__":
    main()
