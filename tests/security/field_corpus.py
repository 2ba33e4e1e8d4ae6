"""A field corpus of netCDF-4 and HDF5 files, written at test time by
netCDF4-python, h5py, h5netcdf and ncgen, with what real archives carry.

write_corpus(folder) writes one file per kind (KINDS) and returns {file name:
what the view must leave out}: the root variables of a type without a
classic equivalent (string, vlen, enum, compound, opaque) and the root
group's subgroups, as the writer made them (netCDF4-python, the oracle,
does not even list opaque variables). write_partition(path, kind, index)
writes one partition of the aggregated corpus (PARTITION_KINDS): the same
variables (tas(time, lat, lon) with fills, CF attributes, a scalar string
`expver`) stored in different ways; partition_values(index) are its tas
and time as written.
"""
import os
import subprocess
import warnings

import h5py
import h5netcdf
import netCDF4
import numpy as np

# The eleven classic types of the classic views, with a fill value of each.
CLASSIC_FILLS = {"i1": -99, "u1": 201, "i2": -999, "u2": 65000, "i4": -99999, "u4": 4000000000,
                 "i8": -(2 ** 62) - 7, "u8": 2 ** 63 + 11, "f4": 1.0e20, "f8": -9.87e300}
NT, NLAT, NLON = 6, 30, 40  # one partition of the aggregated corpus: 6 time steps of a 30 x 40 grid (compact: < 64 KiB)
TAS_FILL = np.float32(1.0e20)
warnings.filterwarnings("ignore", "endian-ness of dtype and endian kwarg do not match")  # endian="big" on purpose


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def strings(path):
    """String variables (scalar, 1-D, with a fill value, partly written) and
    string attributes, single- and multi-valued, beside numbers."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("station", 5)
        ds.setncattr_string("Conventions", "CF-1.8")
        ds.setncattr_string("institutions", ["one", "two", "three"])
        ds.title = "strings: char attribute"
        expver = ds.createVariable("expver", str, ())
        expver[...] = "0001"
        names = ds.createVariable("station_name", str, ("station",))
        names[:] = np.array(["Ny-\u00c5lesund", "Lindenberg", "", "Boulder", "x" * 300], dtype=object)
        label = ds.createVariable("label", str, ("station",), fill_value="missing")
        label[1] = "only the second"
        height = ds.createVariable("height", "f4", ("station",), fill_value=np.float32(-1))
        height[:3] = [1.5, 2.5, 3.5]
        height.setncattr_string("units", "m")
        height.setncattr_string("flag_meanings", ["low", "high"])
        code = ds.createVariable("code", "S1", ("station",))
        code[:] = np.array(list("abcde"), dtype="S1")
    return {"expver", "station_name", "label"}


def vlen(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("obs", 4)
        ragged_t = ds.createVLType(np.int32, "ragged_t")
        ragged = ds.createVariable("ragged", ragged_t, ("obs",))
        for i in range(4):
            ragged[i] = np.arange(i * 3, dtype="i4")
        ds.createVariable("count", "i4", ("obs",))[:] = [0, 3, 6, 9]
    return {"ragged"}


def enum(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("t", 6)
        cloud_t = ds.createEnumType(np.uint8, "cloud_t", {"clear": 0, "cumulus": 1, "stratus": 2, "missing": 255})
        cloud = ds.createVariable("cloud", cloud_t, ("t",), fill_value=255)
        cloud[:4] = [0, 1, 2, 1]
        ds.createVariable("cover", "u1", ("t",))[:] = [0, 10, 90, 50, 255, 7]
    return {"cloud"}


def compound(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("obs", 3)
        obs_t = ds.createCompoundType(np.dtype([("lat", "f4"), ("lon", "f4"), ("q", "i2")]), "obs_t")
        obs = ds.createVariable("obs", obs_t, ("obs",))
        obs[:] = np.array([(1.5, 2.5, 3), (4.5, 5.5, 6), (7.5, 8.5, 9)], dtype=obs_t.dtype)
        ds.createVariable("q", "i2", ("obs",))[:] = [3, 6, 9]
    return {"obs"}


OPAQUE_CDL = """netcdf opaque {
types:
  opaque(4) blob_t ;
dimensions:
  n = 3 ;
variables:
  blob_t blob(n) ;
  blob_t scalar_blob ;
  double x(n) ;
    x:units = "m" ;
    blob_t x:odd = 0XDEADBEEF ;
  :title = "opaque, written by ncgen" ;
data:
  blob = 0X01020304, 0X05060708, 0X090A0B0C ;
  x = 1.25, -2.5, 1e300 ;
}
"""


def opaque(path):
    """NC_OPAQUE variables and an opaque attribute (ncgen: netCDF4-python
    cannot write opaque types)."""
    cdl = path + ".cdl"
    with open(cdl, "w") as f:
        f.write(OPAQUE_CDL)
    subprocess.run(["ncgen", "-4", "-o", path, cdl], check=True)
    os.unlink(cdl)
    return {"blob", "scalar_blob"}


def groups(path):
    """Nested groups, a subgroup variable on a root dimension, a root
    variable beside them."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("root_var", "i2", ("x",))[:] = [1, 2, 3, 4]
        a = ds.createGroup("a")
        a.createDimension("y", 2)
        a.createVariable("on_root_dim", "f8", ("x",))[:] = [0.5, 1.5, 2.5, 3.5]
        b = a.createGroup("b").createGroup("c")
        b.createVariable("deep", "i4", ("y",))[:] = [7, 8]
        ds.createGroup("empty")
    return {"group a", "group empty"}


def unlimited(path):
    """Several UNLIMITED dimensions: time (first), station, and one that a
    variable uses second only (not a record dimension of the view)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("station", None)
        ds.createDimension("level", 3)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(5) * 0.5
        ds.createVariable("station_id", "i4", ("station",))[:] = [10, 20, 30]
        ds.createVariable("obs", "f4", ("time", "station"), fill_value=np.float32(-1))[:4, :2] = _values((4, 2), "f4", 1)
        ds.createVariable("short", "i4", ("time",), fill_value=-5)[:3] = [1, 2, 3]
        ds.createVariable("by_station", "i2", ("station", "time"))[:] = _values((3, 5), "i2", 2)
        ds.createVariable("profile", "f8", ("level", "time"))[:] = _values((3, 5), "f8", 3)
    return set()


def unlimited_second_first(path):
    """UNLIMITED dimensions where the first one is never first in a variable:
    the view's record dimension is the second one, or none."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("a", None)
        ds.createDimension("b", None)
        ds.createVariable("ab", "i4", ("b", "a"))[:] = np.arange(12, dtype="i4").reshape(3, 4)
        ds.createVariable("b_only", "f4", ("b",))[:] = [1, 2, 3]
    return set()


def unlimited_empty(path):
    """A second UNLIMITED dimension with no record yet, used by a variable
    (cdf.md: a fixed dimension of length 0 cannot be stored in a classic file)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("spare", None)
        ds.createVariable("time", "f8", ("time",))[:] = [0.0, 1.0, 2.0]
        ds.createVariable("late", "i4", ("spare",))
    return set()


def non_coordinate(path):
    """A variable named like a dimension it is not the coordinate of (netcdf-c
    stores it as _nc4_non_coord_x), chunked and deflated, beside the dimension's user."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 1500)
        ds.createDimension("y", 2000)
        ds.createVariable("x", "f4", ("y",), zlib=True, chunksizes=(1200,))[:] = _values(2000, "f4", 80)
        ds.createVariable("field", "f4", ("x",), zlib=True, chunksizes=(1024,))[:] = _values(1500, "f4", 81)
    return set()


def fills(path):
    """Every classic type with its own _FillValue and with the default fill,
    partly written (chunks never written read as the fill), and a char
    variable with a fill."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 20)
        for i, (code, fill) in enumerate(CLASSIC_FILLS.items()):
            v = ds.createVariable("own_" + code, code, ("n",), fill_value=np.array(fill, dtype=code),
                                  chunksizes=(4,), zlib=i % 2 == 0)
            v[4:8] = _values(4, code, i)
            d = ds.createVariable("default_" + code, code, ("n",), chunksizes=(5,))
            d[0:3] = _values(3, code, 100 + i)
            s = ds.createVariable("scalar_" + code, code, (), fill_value=np.array(fill, dtype=code))
            s.note = "never written"
        c = ds.createVariable("text", "S1", ("n",), fill_value=b"#")
        c[2:5] = np.array(list("abc"), dtype="S1")
    return set()


def fletcher32(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 60)
        ds.createDimension("x", 80)
        ds.createVariable("sum_only", "i4", ("y", "x"), fletcher32=True, chunksizes=(7, 9))[:] = _values((60, 80), "i4", 4)
        ds.createVariable("sum_deflate", "f8", ("y", "x"), fletcher32=True, zlib=True, shuffle=True,
                          chunksizes=(16, 40))[:] = _values((60, 80), "f8", 5)
        ds.createVariable("sum_noshuffle", "u2", ("y", "x"), fletcher32=True, zlib=True, shuffle=False,
                          chunksizes=(60, 80))[:] = _values((60, 80), "u2", 6)
        ds.createVariable("sum_big", "f4", ("y", "x"), fletcher32=True, chunksizes=(32, 64))[:] = _values((60, 80), "f4", 7)
    return set()


def flip_chunk_byte(path, variable, at=100):
    """Flips a bit of byte `at` of the first stored chunk of `variable`."""
    with h5py.File(path, "r") as f:
        info = f[variable].id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + min(at, info.size - 1))
        byte = f.read(1)
        f.seek(info.byte_offset + min(at, info.size - 1))
        f.write(bytes([byte[0] ^ 0x40]))


def fletcher32_corrupt(path):
    """One stored chunk of a fletcher32 variable with a byte flipped: netcdf-c
    fails to read that variable, the others read."""
    fletcher32(path)
    flip_chunk_byte(path, "sum_big")
    return set()


def classic_model(path):
    """The netCDF-4 classic model (NETCDF4_CLASSIC), as many archives hold it."""
    with netCDF4.Dataset(path, "w", format="NETCDF4_CLASSIC") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 300)
        ds.Conventions = "CF-1.6"
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 1850-01-01"
        t[:] = [0.5, 1.5, 2.5, 3.5]
        v = ds.createVariable("pr", "i2", ("time", "x"), zlib=True, fill_value=np.int16(-32767))
        v.scale_factor, v.add_offset = np.float32(0.01), np.float32(0)
        v[:] = _values((4, 300), "i2", 90)
    return set()


def many_names(path):
    """Long attributes (a 200 KB history, a 100 KB string attribute), names
    with spaces and non-ASCII letters, 300 variables."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 3)
        ds.createDimension("Zeitpunkt \u00e4", 2)
        ds.history = "\n".join("step %d: regridded" % i for i in range(12000))
        ds.setncattr_string("long_string", "s" * 100000)
        ds.createVariable("air temperature", "f4", ("n",))[:] = [1, 2, 3]
        ds.createVariable("Temp\u00e9rature", "f8", ("Zeitpunkt \u00e4", "n"))[:] = _values((2, 3), "f8", 91)
        for i in range(300):
            v = ds.createVariable("v%03d" % i, "i4", ("n",))
            v[:] = [i, i + 1, i + 2]
            v.long_name = "variable number %d" % i
    return set()


def h5netcdf_invalid(path):
    """h5netcdf's invalid_netcdf=True: booleans (an HDF5 enum) and complex
    numbers (a compound) beside an int64 variable. netcdf-c does not present
    the first two at all, so nothing can say they are left out."""
    with h5netcdf.File(path, "w", invalid_netcdf=True) as f:
        f.dimensions = {"x": 4}
        f.create_variable("flag", ("x",), bool, data=np.array([True, False, True, True]))
        f.create_variable("z", ("x",), "c16", data=np.arange(4) * (1 + 2j))
        f.create_variable("int64", ("x",), "i8", data=np.array([-(2 ** 62), 0, 5, 2 ** 62]))
    return set()


def big_endian(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 1000)
        for i, code in enumerate(("i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8")):
            kwargs = {"zlib": True, "chunksizes": (2, 700)} if i % 2 else {"chunksizes": (3, 33)}
            v = ds.createVariable("be_" + code, np.dtype(code).newbyteorder(">"), ("time", "x"), endian="big",
                                  fill_value=np.array(CLASSIC_FILLS[code], dtype=code), **kwargs)
            v[:5] = _values((5, 1000), code, 10 + i)
        ds.createVariable("be_fixed", ">f8", ("x",), endian="big", contiguous=True)[:] = _values(1000, "f8", 20)
    return set()


def contiguous(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 17)
        ds.createDimension("x", 19)
        for i, code in enumerate(("i1", "u1", "i2", "i4", "u8", "f4", "f8")):
            ds.createVariable("c_" + code, code, ("y", "x"), contiguous=True)[:] = _values((17, 19), code, 30 + i)
        ds.createVariable("never_written", "f4", ("y", "x"), contiguous=True)
    return set()


def compact(path):
    """Compact layout (the values inside the object header), which netCDF4-
    python cannot ask for: h5py with dimension scales, as netCDF-4 stores them."""
    with h5py.File(path, "w") as f:
        x = f.create_dataset("x", data=np.arange(16, dtype="f4"))
        x.make_scale("x")
        for i, code in enumerate(("i2", "f8", "u4")):
            name = "compact_" + code
            data = _values(16, code, 40 + i)
            space = h5py.h5s.create_simple((16,))
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(code)), space, dcpl=dcpl)
            f[name][...] = data
            f[name].dims[0].attach_scale(x)
            f[name].attrs["units"] = "1"
    return set()


def chunked(path):
    """Deflate and shuffle at several levels, chunks that do not divide the
    shape (edge chunks), one chunk for the whole variable, some never written."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("t", 9)
        ds.createDimension("y", 41)
        ds.createDimension("x", 52)
        ds.createVariable("edges", "f4", ("t", "y", "x"), zlib=True, complevel=9,
                          chunksizes=(4, 16, 20))[:] = _values((9, 41, 52), "f4", 50)
        ds.createVariable("big_chunk", "i2", ("y", "x"), zlib=True, complevel=1,
                          chunksizes=(41, 52))[:] = _values((41, 52), "i2", 51)
        holes = ds.createVariable("holes", "f8", ("t", "y", "x"), zlib=True, shuffle=False,
                                  chunksizes=(3, 14, 26), fill_value=-1.0)
        holes[3:6, 14:28, :] = _values((3, 14, 52), "f8", 52)
        ds.createVariable("unfiltered_chunks", "u8", ("t", "x"), chunksizes=(2, 5))[:] = _values((9, 52), "u8", 53)
    return set()


def by_h5netcdf(path):
    """h5netcdf's own writer: dimension scales, an unlimited dimension,
    attributes of numpy types, a string variable."""
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": None, "x": 5}
        t = f.create_variable("time", ("time",), "f8")
        f.resize_dimension("time", 3)
        t[:] = [0.0, 1.0, 2.0]
        t.attrs["units"] = "hours since 2020-01-01"
        f.create_variable("x", ("x",), "i4", data=np.arange(5, dtype="i4"))
        v = f.create_variable("v", ("time", "x"), "f4", data=_values((3, 5), "f4", 60), compression="gzip")
        v.attrs["scale_factor"] = np.float32(0.5)
        v.attrs["valid_range"] = np.array([-1000, 1000], dtype="f4")
        f.attrs["history"] = "written by h5netcdf"
        s = f.create_variable("s", ("x",), h5py.string_dtype())
        s[:] = np.array(["a", "bb", "ccc", "", "e"], dtype=object)
        g = f.create_group("sub")
        g.create_variable("inner", ("x",), "i2", data=np.arange(5, dtype="i2"))
    return {"s", "group sub"}


def non_netcdf_hdf5(path):
    """An HDF5 file that is not netCDF: datasets without dimension scales
    (netcdf-c makes phony dimensions), groups, attributes, an opaque and a
    reference dataset, a dataset of an array type."""
    with h5py.File(path, "w") as f:
        f["matrix"] = _values((3, 4), "f8", 70)
        f["vector"] = _values(7, "i4", 71)
        f["blob"] = np.array([b"abcd", b"efgh"], dtype="V4")
        f["refs"] = np.array([f["matrix"].ref, f["vector"].ref], dtype=h5py.ref_dtype)
        f.create_dataset("arrays", (3,), dtype=np.dtype("(2,)i4"))
        f["half"] = np.arange(5, dtype="f2")
        f["complex"] = np.arange(3, dtype="c8")
        f.create_group("g")["inner"] = np.arange(3, dtype="u2")
        f.attrs["title"] = "HDF5, not netCDF"
        f.attrs["numbers"] = np.arange(3, dtype="i8")
    return {"group g"}


def null_dataspace(path):
    """An HDF5 dataset with a null dataspace: netcdf-c lists a scalar it
    cannot read."""
    with h5py.File(path, "w") as f:
        f["ok"] = np.arange(4, dtype="f4")
        f.create_dataset("empty", data=h5py.Empty("f4"))
    return set()


def committed_type(path):
    """A dataset of a committed (named) datatype: netcdf-c refuses the file."""
    with h5py.File(path, "w") as f:
        f["int_t"] = np.dtype("i4")
        f.create_dataset("x", data=np.arange(3, dtype="i4"), dtype=f["int_t"])
    return set()


def dangling_link(path):
    """A soft link to nothing beside a dataset: netcdf-c refuses the file."""
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3, dtype="i4")
        f["lost"] = h5py.SoftLink("/nowhere")
    return set()


def group_cycle(path):
    """A group holding a hard link to the root: netcdf-c never finishes
    opening it (ncdump loops)."""
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3, dtype="i4")
        f.create_group("loop")["back"] = f["/"]
    return {"group loop"}


# file name -> writer; the name's suffix says how the file is found (.nc4, .h5, .hdf5, .nc).
KINDS = {
    "strings.nc4": strings, "vlen.nc4": vlen, "enum.nc4": enum, "compound.nc4": compound,
    "opaque.nc4": opaque, "groups.nc4": groups, "unlimited.nc4": unlimited,
    "unlimited_second.nc4": unlimited_second_first, "unlimited_empty.nc4": unlimited_empty,
    "non_coordinate.nc4": non_coordinate, "fills.nc4": fills, "fletcher32.nc4": fletcher32,
    "big_endian.nc4": big_endian, "fletcher32_corrupt.nc4": fletcher32_corrupt, "classic_model.nc4": classic_model,
    "many_names.nc4": many_names, "h5netcdf_invalid.h5": h5netcdf_invalid, "contiguous.hdf5": contiguous, "compact.h5": compact,
    "chunked.nc": chunked, "h5netcdf.h5": by_h5netcdf, "non_netcdf.h5": non_netcdf_hdf5,
    "null_dataspace.h5": null_dataspace, "committed_type.h5": committed_type, "dangling_link.h5": dangling_link,
    "cycle.h5": group_cycle,
}


# The files netcdf-c cannot open or cannot read whole (the alone case checks this against netCDF4-python).
DAMAGED = {"null_dataspace.h5", "fletcher32_corrupt.nc4", "committed_type.h5", "dangling_link.h5", "cycle.h5"}


def write_corpus(folder):
    os.makedirs(folder, exist_ok=True)
    return {name: write(os.path.join(folder, name)) for name, write in KINDS.items()}


def partition_values(index):
    """tas (with some fills) and time of partition `index`, as written."""
    tas = _values((NT, NLAT, NLON), "f4", 1000 + index) / np.float32(10) + np.float32(280)
    tas[:, index % NLAT, :] = TAS_FILL
    return tas, np.arange(NT, dtype="f8") + index * NT


def _cf_variables(ds, index, time_dim_length, **storage):
    """time, lat, lon, tas with their CF attributes on a netCDF4-python dataset."""
    tas, time = partition_values(index)
    ds.createDimension("time", time_dim_length)
    ds.createDimension("lat", NLAT)
    ds.createDimension("lon", NLON)
    ds.setncattr_string("Conventions", "CF-1.8")
    t = ds.createVariable("time", "f8", ("time",), **storage)
    t.setncatts({"units": "days since 2000-01-01", "calendar": "standard", "standard_name": "time", "axis": "T"})
    t[:] = time
    ds.createVariable("lat", "f4", ("lat",), **storage)[:] = np.linspace(-85.5, 85.5, NLAT)
    ds.createVariable("lon", "f4", ("lon",), **storage)[:] = np.linspace(0, 330, NLON)
    v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=TAS_FILL, **storage)
    v.setncatts({"units": "K", "standard_name": "air_temperature", "cell_methods": "time: mean"})
    v[:] = tas
    expver = ds.createVariable("expver", str, ())
    expver[...] = "%04d" % index


def _netcdf4_partition(path, index, time_dim_length, **storage):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        _cf_variables(ds, index, time_dim_length, **storage)


def _rich_partition(path, index):
    """Strings beside an UNLIMITED time and CF attributes, and what the
    classic view leaves out: vlen, enum and compound variables over time, a
    string variable with a fill, a group."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        _cf_variables(ds, index, None, zlib=True)
        ragged = ds.createVariable("ragged", ds.createVLType(np.int16, "ragged_t"), ("time",))
        for i in range(NT):
            ragged[i] = np.arange(i, dtype="i2")
        flag_t = ds.createEnumType(np.uint8, "flag_t", {"ok": 0, "suspect": 1, "bad": 2})
        ds.createVariable("quality", flag_t, ("time",), fill_value=2)[:NT - 1] = [0, 1] * ((NT - 1) // 2) + [0] * ((NT - 1) % 2)
        obs_t = ds.createCompoundType(np.dtype([("value", "f4"), ("count", "i4")]), "obs_t")
        ds.createVariable("station", obs_t, ("time",))[:] = np.array([(i * 0.5, i) for i in range(NT)], dtype=obs_t.dtype)
        ds.createVariable("source", str, ("time",), fill_value="unknown")[0] = "reanalysis"
        ds.createGroup("provenance").createVariable("step", "i4", ())[...] = index


def _compact_partition(path, index):
    """h5py: the netCDF-4 layout of dimension scales, tas in compact storage."""
    tas, time = partition_values(index)
    with h5py.File(path, "w") as f:
        f.attrs["Conventions"] = "CF-1.8"
        scales = {}
        for name, data in (("time", time), ("lat", np.linspace(-85.5, 85.5, NLAT).astype("f4")),
                           ("lon", np.linspace(0, 330, NLON).astype("f4"))):
            scales[name] = f.create_dataset(name, data=data)
            scales[name].make_scale(name)
        scales["time"].attrs.update({"units": "days since 2000-01-01", "calendar": "standard",
                                     "standard_name": "time", "axis": "T"})
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        dcpl.set_fill_value(np.array(TAS_FILL, dtype="f4"))
        h5py.h5d.create(f.id, b"tas", h5py.h5t.py_create(np.dtype("f4")), h5py.h5s.create_simple(tas.shape), dcpl=dcpl)
        f["tas"][...] = tas
        for d, name in enumerate(("time", "lat", "lon")):
            f["tas"].dims[d].attach_scale(scales[name])
        f["tas"].attrs.update({"_FillValue": TAS_FILL, "units": "K", "standard_name": "air_temperature",
                               "cell_methods": "time: mean"})
        f["expver"] = "%04d" % index


def _h5netcdf_partition(path, index):
    tas, time = partition_values(index)
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": None, "lat": NLAT, "lon": NLON}
        f.resize_dimension("time", NT)
        f.attrs["Conventions"] = "CF-1.8"
        t = f.create_variable("time", ("time",), "f8", data=time)
        t.attrs.update({"units": "days since 2000-01-01", "calendar": "standard", "standard_name": "time", "axis": "T"})
        f.create_variable("lat", ("lat",), "f4", data=np.linspace(-85.5, 85.5, NLAT).astype("f4"))
        f.create_variable("lon", ("lon",), "f4", data=np.linspace(0, 330, NLON).astype("f4"))
        v = f.create_variable("tas", ("time", "lat", "lon"), "f4", data=tas, compression="gzip", fillvalue=TAS_FILL)
        v.attrs.update({"units": "K", "standard_name": "air_temperature", "cell_methods": "time: mean"})
        f.create_variable("expver", (), h5py.string_dtype(), data=np.array("%04d" % index, dtype=object))


# kind -> writer of one partition (path, index); every one holds the same variables.
PARTITION_KINDS = {
    "strings": _rich_partition,
    "big_endian": lambda p, i: _netcdf4_partition(p, i, None, endian="big", zlib=True),
    "fletcher32": lambda p, i: _netcdf4_partition(p, i, None, fletcher32=True, zlib=True, shuffle=False),
    "contiguous": lambda p, i: _netcdf4_partition(p, i, NT, contiguous=True),
    "compact": _compact_partition,
    "h5netcdf": _h5netcdf_partition,
}


def write_partitions(folder, rounds):
    """rounds partitions of every kind, kinds interleaved: part_000.nc4 ... in time order."""
    os.makedirs(folder, exist_ok=True)
    names = []
    for i in range(rounds * len(PARTITION_KINDS)):
        kind = list(PARTITION_KINDS)[i % len(PARTITION_KINDS)]
        names.append("part_%03d_%s.nc4" % (i, kind))
        PARTITION_KINDS[kind](os.path.join(folder, names[-1]), i)
    return names
