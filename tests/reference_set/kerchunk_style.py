"""Reference sets written the way kerchunk writes them, without kerchunk
(not packaged in Debian 12): Zarr v2 metadata per variable, and chunks that
point into the files as they are.

- netCDF-4: each HDF5 chunk's address and stored size from h5py
  (dset.id.get_chunk_info), deflate -> zlib and shuffle -> shuffle filters
  (compressor null, as kerchunk 0.2.2 does); contiguous datasets one chunk.
- netCDF classic: offsets computed from the header (parsed here, not by
  ncafs): a fixed-size variable is one chunk, a record variable one chunk
  per record at begin + r * recsize; big-endian dtypes.
"""
import json
import struct

import h5py
import netCDF4


def zarray(shape, chunks, dtype, fill=None, filters=None, compressor=None):
    return json.dumps({"zarr_format": 2, "shape": list(shape), "chunks": list(chunks), "dtype": dtype,
                       "fill_value": fill, "order": "C", "compressor": compressor, "filters": filters})


def python_value(value):
    return value.tolist() if hasattr(value, "tolist") else value


def attrs_of(var):
    """netCDF attributes as JSON values (numbers stay numbers), minus _FillValue."""
    out = {}
    for name in var.ncattrs():
        if name == "_FillValue":
            continue
        out[name] = python_value(var.getncattr(name))
    return out


def netcdf4_refs(path, url):
    """Keys (version-0 form) of every variable of a netCDF-4 file, URL `url`."""
    refs = {}
    with netCDF4.Dataset(path) as nc, h5py.File(path, "r") as h5:
        refs[".zattrs"] = json.dumps({a: python_value(nc.getncattr(a)) for a in nc.ncattrs()})
        for name, var in nc.variables.items():
            d = h5[name]
            chunks = list(d.chunks) if d.chunks else list(d.shape)
            filters = []
            if d.shuffle:
                filters.append({"id": "shuffle", "elementsize": d.dtype.itemsize})
            if d.compression == "gzip":
                filters.append({"id": "zlib", "level": d.compression_opts})
            fill = var.getncattr("_FillValue").item() if "_FillValue" in var.ncattrs() else None
            refs[name + "/.zarray"] = zarray(d.shape, chunks, d.dtype.str, fill, filters or None)
            attrs = attrs_of(var)
            attrs["_ARRAY_DIMENSIONS"] = list(var.dimensions)
            refs[name + "/.zattrs"] = json.dumps(attrs)
            if d.chunks:
                for i in range(d.id.get_num_chunks()):
                    info = d.id.get_chunk_info(i)
                    key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, chunks))
                    refs[name + "/" + key] = [url, info.byte_offset, info.size]
            else:
                key = ".".join("0" for _ in d.shape) or "0"
                refs[name + "/" + key] = [url, d.id.get_offset(), d.id.get_storage_size()]
    refs[".zgroup"] = json.dumps({"zarr_format": 2})
    return refs


# CDF-1/2 header parsing (the classic format specification), for offsets.
NC_TYPES = {1: (">i1", 1), 2: ("|S1", 1), 3: (">i2", 2), 4: (">i4", 4), 5: (">f4", 4), 6: (">f8", 8)}


class Header:
    def __init__(self, data):
        self.data, self.at = data, 0
        magic = self.take(4)
        assert magic[:3] == b"CDF" and magic[3] in (1, 2), magic
        self.offset_size = 4 if magic[3] == 1 else 8
        self.numrecs = self.u32()
        self.dims = [(name, length) for name, length in self.list(lambda: (self.name(), self.u32()))]
        self.attributes()
        self.vars = self.list(self.var)

    def take(self, n):
        b = self.data[self.at:self.at + n]
        self.at += n
        return b

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def name(self):
        n = self.u32()
        s = self.take(n).decode()
        self.take((4 - n % 4) % 4)
        return s

    def list(self, item):
        tag, n = self.u32(), self.u32()
        return [item() for _ in range(n)] if tag else []

    def attributes(self):
        def attr():
            self.name()
            t, n = self.u32(), self.u32()
            size = NC_TYPES[t][1] * n
            self.take(size + (4 - size % 4) % 4)
        return self.list(attr)

    def var(self):
        name = self.name()
        dimids = [self.u32() for _ in range(self.u32())]
        self.attributes()
        t, vsize = self.u32(), self.u32()
        begin = struct.unpack(">I" if self.offset_size == 4 else ">Q", self.take(self.offset_size))[0]
        return {"name": name, "dimids": dimids, "dtype": NC_TYPES[t][0], "size": NC_TYPES[t][1], "vsize": vsize,
                "begin": begin}


def classic_refs(path, url):
    """Keys of every variable of a CDF-1/2 file (record variables one chunk per record)."""
    with open(path, "rb") as f:
        header = Header(f.read())
    record_vars = [v for v in header.vars if v["dimids"] and header.dims[v["dimids"][0]][1] == 0]
    recsize = sum(v["vsize"] for v in record_vars)
    if len(record_vars) == 1:  # one record variable: records are not padded
        v = record_vars[0]
        n = 1
        for d in v["dimids"][1:]:
            n *= header.dims[d][1]
        recsize = n * v["size"]
    refs = {".zgroup": json.dumps({"zarr_format": 2})}
    with netCDF4.Dataset(path) as nc:
        refs[".zattrs"] = json.dumps({a: python_value(nc.getncattr(a)) for a in nc.ncattrs()})
        for v in header.vars:
            var = nc.variables[v["name"]]
            shape = [header.numrecs if header.dims[d][1] == 0 else header.dims[d][1] for d in v["dimids"]]
            record = v in record_vars
            chunks = [1] + shape[1:] if record else shape
            fill = var.getncattr("_FillValue").item() if "_FillValue" in var.ncattrs() else None
            name = v["name"]
            refs[name + "/.zarray"] = zarray(shape, chunks or [], v["dtype"], fill)
            attrs = attrs_of(var)
            attrs["_ARRAY_DIMENSIONS"] = list(var.dimensions)
            refs[name + "/.zattrs"] = json.dumps(attrs)
            per_chunk = v["size"]
            for n in chunks[1:] if record else chunks:
                per_chunk *= n
            if record:
                for r in range(header.numrecs):
                    key = ".".join(["%d" % r] + ["0"] * (len(shape) - 1))
                    refs[name + "/" + key] = [url, v["begin"] + r * recsize, per_chunk]
            else:
                key = ".".join("0" for _ in shape) or "0"
                refs[name + "/" + key] = [url, v["begin"], per_chunk]
    return refs


def version1(refs, templates=None):
    out = {"version": 1, "refs": refs}
    if templates:
        out["templates"] = templates
    return out
