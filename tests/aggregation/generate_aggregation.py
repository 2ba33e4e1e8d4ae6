#!/usr/bin/python3
"""Random NCA (G1) / CFA-0.4 (G2) aggregations with an independent oracle.

For each case the master array is generated first (numpy), cut into a random
partition grid, and every partition is written (netCDF4-python) in some file
format, type, axis order, direction, units, packing, with its own missing
values, possibly embedded in a bigger sub-array selected by `part`, possibly
as a private variable of the aggregation file; some cells are left uncovered.
The master array as generated (masked and uncovered cells = master fill) is
written to an oracle file, a single-file dataset. The resolver under test never sees the
oracle; the oracle never goes through the resolver.

usage: generate_aggregation.py OUTDIR [--seed N] [--cases N]
       generate_aggregation.py OUTDIR --examples      (spec examples 3 and 4)
       generate_aggregation.py OUTDIR --bench N       (N partitions along time)
Writes OUTDIR/manifest.json.
"""
import argparse
import json
import os

import cftime
import netCDF4
import numpy as np

NAMES = {'i1': 'byte', 'u1': 'ubyte', 'i2': 'short', 'u2': 'ushort', 'i4': 'int', 'u4': 'uint',
         'i8': 'int64', 'u8': 'uint64', 'f4': 'float', 'f8': 'double'}
CLASSIC = ['i1', 'i2', 'i4', 'f4', 'f8']
FORMATS = ['NETCDF3_CLASSIC', 'NETCDF3_64BIT_OFFSET', 'NETCDF3_64BIT_DATA', 'NETCDF4']
DIMNAMES = ['time', 'lev', 'lat', 'lon']
# A partition's own fill value, never equal to a generated value.
PART_FILL = {'i1': -7, 'u1': 250, 'i2': -7, 'u2': 65000, 'i4': -7, 'u4': 4000000000, 'i8': -7,
             'u8': 2 ** 63, 'f4': 1e6, 'f8': 1e6}
PACK_SCALE, PACK_OFFSET = 0.25, 10.0


def default_fill(t):
    return netCDF4.default_fillvals[t]


def allowed_types(fmt):
    return CLASSIC if fmt in ('NETCDF3_CLASSIC', 'NETCDF3_64BIT_OFFSET') else list(NAMES)


def pseudo_json(obj):
    """The single-quoted Python-literal style of the published examples."""
    return repr(obj)


class Case:
    def __init__(self, rng, outdir, idx):
        self.rng, self.idx = rng, idx
        self.dir = os.path.join(outdir, 'case%03d' % idx)
        os.makedirs(os.path.join(self.dir, 'parts'), exist_ok=True)

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p):
        return self.rng.random() < p

    def build(self):
        rng = self.rng
        self.gen = self.choice(['nca', 'cfa'])
        rank = int(rng.integers(1, 5))
        self.dims = DIMNAMES[:rank] if rank < 4 else DIMNAMES
        self.directions = {d: bool(rng.random() < 0.7) for d in self.dims}
        while True:
            self.shape = [int(rng.integers(1, 9)) for _ in range(rank)]
            if np.prod(self.shape) <= 2500:
                break
        self.mtype = self.choice(list(NAMES))
        floating = self.mtype[0] == 'f'
        n = int(np.prod(self.shape))
        if floating:
            vals = rng.integers(-200, 201, n) / 4.0
        else:
            vals = rng.integers(0, 101, n)
        self.expected = vals.astype(self.mtype).reshape(self.shape)
        self.mfill_set = self.coin(0.5)
        self.mfill = np.array(-999.5 if floating else 111, self.mtype) if self.mfill_set \
            else np.array(default_fill(self.mtype), self.mtype)
        self.units, self.calendar, self.shift_kind = '', '', None
        if floating:
            k = self.choice(['K', 'time', 'none'])
            if k == 'K':
                self.units = 'K'
            elif k == 'time' and self.mtype == 'f8':
                self.calendar = self.choice(['standard', '360_day', 'noleap'])
                self.units = 'days since 2000-01-01'
        elif self.coin(0.5):
            self.units = 'm'
        self.inclusive = self.coin(0.5)
        self.noshape = self.coin(0.1)
        if self.noshape:
            self.inclusive = True
        self.agg_format = 'NETCDF4' if self.coin(0.4) else 'NETCDF3_64BIT_DATA'
        if self.mtype in CLASSIC and self.coin(0.3):
            self.agg_format = 'NETCDF3_CLASSIC'
        self.strict = self.coin(0.5)
        self.base_mode = self.choice(['relative', 'base', 'absolute', 'uri'])
        self.unlimited = self.coin(0.3)

        # Partition grid: random cuts along a random subset of dims (random order).
        pm = [d for d in range(rank) if self.coin(0.7)]
        rng.shuffle(pm)
        self.pmdims = pm
        cuts = []
        for d in range(rank):
            if d in pm and self.shape[d] > 1:
                k = int(rng.integers(1, min(self.shape[d], 4) + 1))
                inner = sorted(rng.choice(np.arange(1, self.shape[d]), size=k - 1, replace=False).tolist()) if k > 1 else []
                cuts.append([0] + inner + [self.shape[d]])
            else:
                cuts.append([0, self.shape[d]])
        self.pmshape = [len(cuts[d]) - 1 for d in pm]
        self.privates = []  # (name, dims, array, attrs)
        self.partitions = []
        cells = np.ndindex(*[len(c) - 1 for c in cuts])
        j = 0
        for cell in cells:
            box = [(cuts[d][cell[d]], cuts[d][cell[d] + 1]) for d in range(rank)]
            index = [cell[d] for d in pm]
            if self.coin(0.1):
                sl = tuple(slice(a, b) for a, b in box)
                self.expected[sl] = self.mfill  # uncovered
                continue
            self.partitions.append(self.partition(j, box, index))
            j += 1
        self.write()
        return {'nca': self.nca_path, 'oracle': self.oracle_path, 'variables': ['v'], 'root': self.dir,
                'generation': self.gen, 'partitions': len(self.partitions)}

    def partition(self, j, box, index):
        rng = self.rng
        floating = self.mtype[0] == 'f'
        private = self.coin(0.2)
        fmt = self.agg_format if private else self.choice(FORMATS)
        sl = tuple(slice(a, b) for a, b in box)
        block = self.expected[sl].copy()  # master order, master type
        counts = [b - a for a, b in box]

        # Stored representation.
        packed = floating and self.coin(0.2)
        if packed:
            ptype = 'i2'
        elif floating:
            ptype = self.choice([t for t in ['f4', 'f8'] if t in allowed_types(fmt)])
        else:
            ptype = self.choice(allowed_types(fmt))
        stored = block.astype('f8')
        punits = None
        if self.units == 'K' and self.coin(0.4):
            punits = 'K @ 16'
            stored = stored - 16.0
        elif self.units.startswith('days since') and self.coin(0.5):
            punits = 'days since 2000-03-01'
            off = cftime.date2num(cftime.datetime(2000, 3, 1, calendar=self.calendar), self.units, calendar=self.calendar)
            stored = stored - off
        attrs = {}
        if packed:
            stored = np.round((stored - PACK_OFFSET) / PACK_SCALE)
            attrs['scale_factor'] = np.float32(PACK_SCALE) if self.coin(0.5) else PACK_SCALE
            attrs['add_offset'] = np.float32(PACK_OFFSET) if self.coin(0.5) else PACK_OFFSET
        stored = stored.astype(ptype)
        # Missing cells: own _FillValue / missing_value, or the type's default fill.
        mode = self.choice(['none', 'none', 'fill', 'missing_value', 'default'])
        if mode != 'none' and block.size > 1:
            mask = rng.random(block.shape) < 0.3
            if mode == 'fill':
                fv = -32000 if packed else PART_FILL[ptype]
                attrs['_FillValue'] = np.array(fv, ptype)
            elif mode == 'missing_value':
                fv = -32000 if packed else PART_FILL[ptype]
                attrs['missing_value'] = np.array(fv, ptype)
            else:
                fv = default_fill(ptype)
            stored[mask] = np.array(fv, ptype)
            self.expected[sl][mask] = self.mfill
            block = self.expected[sl].copy()

        # Axes: a permutation of the master dims, maybe without some size-1
        # dims, maybe with an extra size-1 axis "one".
        axes = list(range(len(self.dims)))
        if self.coin(0.4):
            rng.shuffle(axes)
        axes = [d for d in axes if not (counts[d] == 1 and self.coin(0.3))]
        if self.coin(0.15):
            axes.insert(int(rng.integers(len(axes) + 1)), -1)
        reverse = {d: self.coin(0.3) for d in range(len(self.dims))}
        data = stored
        for d, r in reverse.items():
            if r:
                data = np.flip(data, axis=d)
        present = [d for d in axes if d >= 0]
        missing_dims = [d for d in range(len(self.dims)) if d not in present]
        data = np.transpose(data, present + missing_dims)
        data = data.reshape([counts[d] for d in present])  # drop the absent (size-1) dims
        shape_axes = [1 if d < 0 else counts[d] for d in axes]
        data = data.reshape(shape_axes)

        # part: embed in a bigger sub-array and select.
        part = None
        if self.coin(0.2) and len(axes) > 0:
            sels, sub_shape = [], []
            for k, nk in enumerate(shape_axes):
                kind = self.choice(['range', 'range2', 'list'])
                first = int(rng.integers(0, 3))
                if kind == 'list':
                    size = first + nk + int(rng.integers(0, 3))
                    idx = rng.choice(np.arange(size), size=nk, replace=False).tolist()
                    sels.append(('list', idx))
                else:
                    step = 1 if kind == 'range' else 2
                    idx = [first + step * i for i in range(nk)]
                    size = idx[-1] + 1 + int(rng.integers(0, 3))
                    if self.coin(0.3) and nk > 1:  # a descending range
                        idx = idx[::-1]
                        sels.append(('range', idx[0], idx[-1], -step))
                    else:
                        sels.append(('range', idx[0], idx[-1], step))
                sub_shape.append(size)
                sels[-1] = (sels[-1], idx)
            sub = np.full(sub_shape, np.array(3, ptype), ptype)  # junk outside the selection
            sub[np.ix_(*[s[1] for s in sels])] = data
            data = sub
            groups = []
            for (sel, _idx) in sels:
                if sel[0] == 'list':
                    inner = ', '.join(str(i) for i in sel[1])
                    groups.append(('[%s]' % inner) if self.gen == 'nca' else ('(%s,)' % inner if len(sel[1]) == 1 else '(%s)' % inner))
                else:
                    t = '%d, %d, %d' % sel[1:]
                    groups.append(('(%s)' % t) if self.gen == 'nca' else ('[%s]' % t))
            part = '[' + ', '.join(groups) + ']'

        ncvar = 'nca_p%d' % j if private else 'var%d' % int(rng.integers(100))
        entry = {}
        if self.coin(0.9):
            entry['index'] = [int(i) for i in index]
        loc = []
        for a, b in box:
            loc.append([a, b - 1] if self.inclusive else [a, b])
        entry['location'] = loc
        axis_names = [('one' if d < 0 else self.dims[d]) for d in axes]
        if axes != list(range(len(self.dims))) or self.coin(0.3):
            entry['pdimensions' if (self.gen == 'cfa' or self.coin(0.5)) else 'dimensions'] = axis_names
        rev_names = [self.dims[d] for d in present if reverse[d] and counts[d] > 1]
        if self.gen == 'nca':
            pd = {}
            for d in present:
                m = self.directions[self.dims[d]] if hasattr(self, 'directions') else True
                if reverse[d] or self.coin(0.3):
                    pd[self.dims[d]] = (not m) if reverse[d] else m
            if pd:
                entry['pdirections' if self.coin(0.5) else 'directions'] = pd
        elif rev_names or any(reverse[d] for d in present):
            entry['reverse' if self.coin(0.5) else 'flip'] = [self.dims[d] for d in present if reverse[d]]
        if punits:
            entry['punits' if self.gen == 'cfa' else 'units'] = punits
        if part:
            entry['part'] = part
        sub = {}
        if private:
            pass  # no file: the aggregation file itself
        else:
            fname = 'p%d.nc' % j
            full = os.path.join(self.dir, 'parts', fname)
            if self.base_mode == 'relative':
                sub['file'] = 'parts/' + fname
            elif self.base_mode == 'base':
                sub['file'] = fname
            elif self.base_mode == 'absolute':
                sub['file'] = full
            else:
                sub['file'] = 'file://' + full
        if self.gen == 'cfa' and not private and self.coin(0.15):
            sub['varid'] = 0
        else:
            sub['ncvar'] = ncvar
            if self.gen == 'cfa':
                sub['varid'] = None
        if not self.noshape:
            sub['shape' if self.coin(0.7) else 'pshape'] = list(data.shape)
        sub['dtype' if self.coin(0.5) else 'pdtype'] = NAMES[ptype]
        if self.gen == 'cfa':
            sub['format'] = 'netCDF'
            entry['subarray'] = sub
        else:
            entry['format'] = 'netCDF'
            entry[self.choice(['data', 'subarray', 'sub_array'])] = sub
        if private:
            self.privates.append((ncvar, data, ptype, attrs))
        else:
            self.write_partition(full, fmt, ncvar, data, ptype, attrs)
        return entry

    def write_partition(self, path, fmt, ncvar, data, ptype, attrs):
        with netCDF4.Dataset(path, 'w', format=fmt) as ds:
            names = []
            for k, n in enumerate(data.shape):
                ds.createDimension('x%d' % k, n)
                names.append('x%d' % k)
            fill = attrs.get('_FillValue')
            v = ds.createVariable(ncvar, ptype, names, fill_value=fill if fill is not None else False)
            v.set_auto_maskandscale(False)
            for k, val in attrs.items():
                if k != '_FillValue':
                    v.setncattr(k, val)
            v.units = 'ignored: the JSON units win'
            v[...] = data

    def write(self):
        self.nca_path = os.path.join(self.dir, 'agg.nca')
        self.oracle_path = os.path.join(self.dir, 'oracle.nc')
        g = self.gen
        doc = {}
        if g == 'nca':
            doc['directions'] = self.directions
        if self.pmdims:
            doc['pmshape'] = self.pmshape
            doc['pmdimensions'] = [self.dims[d] for d in self.pmdims]
        if self.base_mode == 'base':
            doc['base'] = 'parts'
        doc['Partitions'] = self.partitions
        text = json.dumps(doc) if self.strict else pseudo_json(doc)
        with netCDF4.Dataset(self.nca_path, 'w', format=self.agg_format) as ds:
            for k, d in enumerate(self.dims):
                ds.createDimension(d, None if (k == 0 and self.unlimited) else self.shape[k])
            ds.createDimension('one', 1)
            for k, d in enumerate(self.dims):
                c = ds.createVariable(d, 'f8', (d,))
                c.units = 'index'
                c[:] = np.arange(self.shape[k], dtype='f8') * 1.5
            v = ds.createVariable('v', self.mtype, (), fill_value=self.mfill if self.mfill_set else False)
            v.long_name = 'master array'
            if self.units:
                v.units = self.units
            if self.calendar:
                v.calendar = self.calendar
            v.cf_role = g + '_variable'
            v.setncattr(g + '_dimensions', ' '.join(self.dims))
            v.setncattr(g + '_array', text)
            for (name, data, ptype, attrs) in self.privates:
                names = []
                for k, n in enumerate(data.shape):
                    dn = '%s_d%d' % (name, k)
                    ds.createDimension(dn, n)
                    names.append(dn)
                fill = attrs.get('_FillValue')
                pv = ds.createVariable(name, ptype, names, fill_value=fill if fill is not None else False)
                pv.set_auto_maskandscale(False)
                for k, val in attrs.items():
                    if k != '_FillValue':
                        pv.setncattr(k, val)
                if self.coin(0.5):
                    pv.cf_role = g + '_private'
                else:
                    pv.setncattr(g + '_private', np.int32(1))
                pv[...] = data
            ds.Conventions = 'CF-1.5 NCA' if g == 'nca' else 'CF-1.7 CFA-0.4'
            ds.title = 'random aggregation %d' % self.idx
        with netCDF4.Dataset(self.oracle_path, 'w', format='NETCDF4') as ds:
            for k, d in enumerate(self.dims):
                ds.createDimension(d, self.shape[k])
            v = ds.createVariable('v', self.mtype, self.dims, fill_value=False)
            v.set_auto_maskandscale(False)
            v[...] = self.expected


def random_cases(outdir, seed, count):
    rng = np.random.default_rng(seed)
    return [Case(rng, outdir, i).build() for i in range(count)]


EXAMPLE3_JSON = """{'directions': {'lat': false,
'time': true,
'lon': true
},
'pmshape': [2],
'pmdimensions': ['time'],
'Partitions': [{'index': [0],
'data': {'file': '/home/david/test1.nc',
'shape': [12, 64, 128],
'ncvar': 'tas'
},
'location': [[0, 12], [0, 64], [0, 128]],
'format': 'netCDF'
},
{'index': [1],
'data': {'file': '/home/david/test2.nc',
'shape': [36, 64, 128],
'ncvar': 'tas2'
},
'location': [[12, 48], [0, 64], [0, 128]],
'format': 'netCDF'
}
]
}"""

# Verbatim from nca.rst 0.2.2 example 4, broken quotes included.
EXAMPLE4_VERBATIM = """{directions': {'lat': false,
'time': true,
'lon': true
},
'pmshape': [2],
'pmdimensions': ['time'],
'Partitions': [{'index': [0],
'units' : 'K @ 273.15',
'dimensions': ['lon', 'time', lat'],
'directions': {'time': false},
'data': {'shape': [128, 12, 64],
'ncvar': 'nca_45sdf83745'
},
'location': [[0, 12], [0, 64], [0, 128]],
'format': 'netCDF'
},
{'index': [1],
'data': {'file': '/home/david/test2.nc',
'shape': [36, 64, 128],
'ncvar': 'tas2'
},
'location': [[12, 48], [0, 64], [0, 128]],
'format': 'netCDF'
}
]
}"""
EXAMPLE4_FIXED = EXAMPLE4_VERBATIM.replace("{directions'", "{'directions'").replace(" lat']", " 'lat']")


def examples(outdir):
    rng = np.random.default_rng(4)
    david = os.path.join(outdir, 'home', 'david')
    os.makedirs(david, exist_ok=True)
    test1 = rng.integers(-4000, 4000, (12, 64, 128)).astype('f4') / 8
    test2 = rng.integers(-4000, 4000, (36, 64, 128)).astype('f4') / 8
    for name, var, data in (('test1.nc', 'tas', test1), ('test2.nc', 'tas2', test2)):
        with netCDF4.Dataset(os.path.join(david, name), 'w', format='NETCDF3_CLASSIC') as ds:
            for d, n in zip(('t', 'y', 'x'), data.shape):
                ds.createDimension(d, n)
            v = ds.createVariable(var, 'f4', ('t', 'y', 'x'))
            v.units = 'K'
            v[...] = data
    priv = rng.integers(-400, 400, (128, 12, 64)).astype('f4') / 8  # degrees Celsius
    for fname, text, with_private in (('temperature.nca', EXAMPLE3_JSON, False),
                                      ('temperature2.nca', EXAMPLE4_FIXED, True),
                                      ('temperature2_verbatim.nca', EXAMPLE4_VERBATIM, True)):
        with netCDF4.Dataset(os.path.join(outdir, fname), 'w', format='NETCDF3_CLASSIC') as ds:
            for d, n in (('time', 48), ('lat', 64), ('lon', 128)):
                ds.createDimension(d, n)
            t = ds.createVariable('time', 'f8', ('time',))
            t.long_name = 'time'
            t.units = 'days since 0000-1-1'
            t[:] = 164569 + 30.5 * np.arange(48)
            la = ds.createVariable('lat', 'f8', ('lat',))
            la.units = 'degrees_north'
            la.standard_name = 'latitude'
            la[:] = np.linspace(-87.86, 87.86, 64)
            lo = ds.createVariable('lon', 'f8', ('lon',))
            lo.units = 'degrees_east'
            lo.standard_name = 'longitude'
            lo[:] = np.arange(128) * 2.8125
            tas = ds.createVariable('tas', 'f4', ())
            tas.standard_name = 'air_temperature'
            tas.units = 'K'
            tas.cf_role = 'nca_variable'
            tas.nca_dimensions = 'time lat lon'
            tas.nca_array = text
            if with_private:
                for d, n in (('nca12', 12), ('nca64', 64), ('nca128', 128)):
                    ds.createDimension(d, n)
                p = ds.createVariable('nca_45sdf83745', 'f4', ('nca128', 'nca12', 'nca64'))
                p.cf_role = 'nca_private'
                p[...] = priv
            ds.Conventions = 'CF-1.5 NCA'
    return [{'example3': os.path.join(outdir, 'temperature.nca'),
             'example4': os.path.join(outdir, 'temperature2.nca'),
             'example4_verbatim': os.path.join(outdir, 'temperature2_verbatim.nca'),
             'david': david}]


def bench(outdir, n):
    """n partitions of 2 time steps each, a 4x4 grid: tas(time=2n, lat=4, lon=4)."""
    parts = os.path.join(outdir, 'parts')
    os.makedirs(parts, exist_ok=True)
    data = np.arange(2 * 16, dtype='f4').reshape(2, 4, 4)
    entries = []
    for j in range(n):
        path = os.path.join(parts, 'p%05d.nc' % j)
        if not os.path.exists(path):
            with netCDF4.Dataset(path, 'w', format='NETCDF3_CLASSIC') as ds:
                ds.createDimension('t', 2)
                ds.createDimension('y', 4)
                ds.createDimension('x', 4)
                v = ds.createVariable('tas', 'f4', ('t', 'y', 'x'))
                v[...] = data + j
        entries.append({'index': [j], 'location': [[2 * j, 2 * j + 1], [0, 3], [0, 3]],
                        'subarray': {'file': 'parts/p%05d.nc' % j, 'shape': [2, 4, 4], 'ncvar': 'tas',
                                     'varid': None, 'format': 'netCDF'}})
    path = os.path.join(outdir, 'bench.nca')
    with netCDF4.Dataset(path, 'w', format='NETCDF3_CLASSIC') as ds:
        ds.createDimension('time', 2 * n)
        ds.createDimension('lat', 4)
        ds.createDimension('lon', 4)
        v = ds.createVariable('tas', 'f4', ())
        v.units = 'K'
        v.cf_role = 'cfa_variable'
        v.cfa_dimensions = 'time lat lon'
        v.cfa_array = json.dumps({'pmshape': [n], 'pmdimensions': ['time'], 'Partitions': entries})
        ds.Conventions = 'CF-1.7 CFA'
    return [{'nca': path, 'partitions': n}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('outdir')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--cases', type=int, default=40)
    ap.add_argument('--examples', action='store_true')
    ap.add_argument('--bench', type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    if a.examples:
        manifest = examples(a.outdir)
    elif a.bench:
        manifest = bench(a.outdir, a.bench)
    else:
        manifest = random_cases(a.outdir, a.seed, a.cases)
    with open(os.path.join(a.outdir, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)


if __name__ == '__main__':
    main()
