#!/usr/bin/env python3
"""Integer conformance cases: every (partition type, master type) pair of the
eight netCDF integer types, each with several missing-value variants (fills
at the ends of the range, fills that differ from the master fill only beyond
double precision, a valid_range), written as an NCA aggregation of two
netCDF-4 partitions plus an oracle file holding the expected master array.

The expectation is computed here with numpy and Python integers (never
through float): an element equal to a partition missing value, or outside
the valid range, or not representable in the master type, becomes the master
fill; every other element keeps its exact value.

usage: generate_integer_pairs.py OUTDIR   (writes OUTDIR/manifest.json)
"""
import json
import os
import sys

import netCDF4
import numpy as np

TYPES = ['i1', 'u1', 'i2', 'u2', 'i4', 'u4', 'i8', 'u8']
NC_NAMES = {'i1': 'byte', 'u1': 'ubyte', 'i2': 'short', 'u2': 'ushort', 'i4': 'int', 'u4': 'uint',
            'i8': 'int64', 'u8': 'uint64'}


def limits(t):
    info = np.iinfo(t)
    return int(info.min), int(info.max)


def representable(t, x):
    lo, hi = limits(t)
    return lo <= x <= hi


def default_fill(t):
    return int(netCDF4.default_fillvals[t])


def sample_values(ptype, mfill):
    """Extremes of the partition type, values either side of 2**53 and of
    the master fill, small numbers: all as Python ints representable in ptype."""
    lo, hi = limits(ptype)
    cand = [lo, lo + 1, lo + 2, hi, hi - 1, hi - 2, 0, 1, -1, 2**53 + 1, -(2**53) - 1, 2**62 + 1, -(2**62) + 1,
            mfill - 1, mfill, mfill + 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1,
            2**32, 2**63 - 1, 2**63, 2**64 - 1]
    vals = sorted({c for c in cand if representable(ptype, c)})
    return vals


def variants(ptype, mtype):
    """(name, partition attributes as Python ints, master fill or None)."""
    lo, hi = limits(ptype)
    mlo, mhi = limits(mtype)
    mdef = default_fill(mtype)
    out = [('default', {}, None),
           ('fill_low', {'_FillValue': lo}, None),
           ('fill_high', {'_FillValue': hi}, mhi),
           ('range', {'valid_range': [lo + 2, hi - 2]}, mlo)]
    # A partition fill one away from the master fill: equal once both are doubles (64-bit).
    near = mdef + 1 if representable(ptype, mdef + 1) else mdef - 1
    if representable(ptype, near):
        out.append(('fill_near_master', {'_FillValue': near, 'missing_value': [near - 1]}, None))
    # Fills beyond 2**53 that differ by one: -2**62 / -2**62+1, 2**64-10 / 2**64-11.
    far = -(2**62) if representable(mtype, -(2**62)) else (2**64 - 10 if mtype == 'u8' else None)
    if far is not None and representable(ptype, far + 1):
        out.append(('fill_beyond_double', {'_FillValue': far + 1}, far))
    elif far is not None and representable(ptype, far - 1):
        out.append(('fill_beyond_double', {'_FillValue': far - 1}, far))
    return out


def expected_array(values, ptype, mtype, attrs, mfill):
    lo, hi = limits(ptype)
    missing = [attrs.get('_FillValue', default_fill(ptype))] + list(attrs.get('missing_value', []))
    vmin, vmax = (attrs['valid_range'] if 'valid_range' in attrs else (None, None))
    out = []
    for x in values:
        bad = x in missing or (vmin is not None and x < vmin) or (vmax is not None and x > vmax)
        out.append(mfill if bad or not representable(mtype, x) else x)
    return np.array(out, dtype=object).astype(mtype)  # exact: object ints, each representable


def write_partition(path, ptype, data, attrs):
    with netCDF4.Dataset(path, 'w', format='NETCDF4') as ds:
        ds.createDimension('x', len(data))
        fill = attrs.get('_FillValue')
        v = ds.createVariable('v', ptype, ('x',), fill_value=np.array(fill, dtype=ptype) if fill is not None else False)
        v.set_auto_maskandscale(False)
        if 'missing_value' in attrs:
            v.missing_value = np.array(attrs['missing_value'], dtype=ptype)
        if 'valid_range' in attrs:
            v.valid_range = np.array(attrs['valid_range'], dtype=ptype)
        v[:] = np.array(data, dtype=object).astype(ptype)


def write_case(d, ptype, mtype, attrs, mfill_attr):
    os.makedirs(d, exist_ok=True)
    values = sample_values(ptype, mfill_attr if mfill_attr is not None else default_fill(mtype))
    values += [attrs.get('_FillValue', default_fill(ptype))] * 2
    values = [v for v in values if representable(ptype, v)]
    half = len(values) // 2
    write_partition(os.path.join(d, 'p0.nc'), ptype, values[:half], attrs)
    write_partition(os.path.join(d, 'p1.nc'), ptype, values[half:], attrs)
    mfill = mfill_attr if mfill_attr is not None else default_fill(mtype)
    doc = {'pmshape': [2], 'pmdimensions': ['x'], 'Partitions': [
        {'index': [0], 'location': [[0, half - 1]], 'subarray': {'file': 'p0.nc', 'ncvar': 'v', 'shape': [half]}},
        {'index': [1], 'location': [[half, len(values) - 1]],
         'subarray': {'file': 'p1.nc', 'ncvar': 'v', 'shape': [len(values) - half]}}]}
    nca = os.path.join(d, 'agg.nca')
    with netCDF4.Dataset(nca, 'w', format='NETCDF4') as ds:
        ds.createDimension('x', len(values))
        v = ds.createVariable('v', mtype, (), fill_value=np.array(mfill_attr, dtype=mtype) if mfill_attr is not None else False)
        v.cf_role = 'nca_variable'
        v.nca_dimensions = 'x'
        v.nca_array = json.dumps(doc)
        ds.Conventions = 'CF-1.5 NCA'
    oracle = os.path.join(d, 'oracle.nc')
    with netCDF4.Dataset(oracle, 'w', format='NETCDF4') as ds:
        ds.createDimension('x', len(values))
        v = ds.createVariable('v', mtype, ('x',), fill_value=False)
        v.set_auto_maskandscale(False)
        v[:] = expected_array(values, ptype, mtype, attrs, mfill)
    return {'nca': nca, 'oracle': oracle, 'ptype': NC_NAMES[ptype], 'mtype': NC_NAMES[mtype]}


def main():
    out = sys.argv[1]
    manifest = []
    for p in TYPES:
        for m in TYPES:
            for name, attrs, mfill in variants(p, m):
                d = os.path.join(out, '%s_to_%s_%s' % (p, m, name))
                manifest.append(dict(write_case(d, p, m, attrs, mfill), variant=name))
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)


if __name__ == '__main__':
    main()
