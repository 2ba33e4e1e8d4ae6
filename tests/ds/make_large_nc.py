#!/usr/bin/python3
"""Writes a netCDF file whose masked variables span many 65536-element
chunks of the ds view (random masks, packed values, padded char rows).
Usage: make_large_nc.py OUT.nc FORMAT (NETCDF3_CLASSIC, NETCDF4, ...)"""
import sys

import netCDF4
import numpy as np

rng = np.random.default_rng(20240611)
with netCDF4.Dataset(sys.argv[1], "w", format=sys.argv[2]) as f:
    f.createDimension("n", 300001)
    f.createDimension("m", 70001)
    f.createDimension("rows", 2000)
    f.createDimension("len", 40)
    x = f.createVariable("x", "f4", ("n",), fill_value=-1.0)
    data = rng.standard_normal(300001).astype("f4")
    data[rng.random(300001) < 0.3] = -1.0
    data[:70000][::3] = -1.0  # a dense stretch
    x[:] = data
    y = f.createVariable("y", "i2", ("m",))
    y.scale_factor = np.float32(0.25)
    y.add_offset = np.float32(-3.0)
    y.set_auto_maskandscale(False)
    raw = rng.integers(-32768, 32767, 70001, dtype="i2")
    raw[rng.random(70001) < 0.01] = -32767  # the default fill
    y[:] = raw
    c = f.createVariable("c", "S1", ("rows", "len"))
    words = ["w%d" % (i * 7919 % 100000) for i in range(2000)]
    c[:] = netCDF4.stringtochar(np.array(words, "S40"))
    z = f.createVariable("z", "f8", ("n",))
    z[:] = np.arange(300001, dtype="f8")  # no missing values: no mask
