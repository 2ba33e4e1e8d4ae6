#!/usr/bin/python3
"""Builds the G3/G4/G5 aggregation test cases under OUTDIR.

Aggregation files come from our own CDL (cfa06_examples.py for CFA-0.6.2,
the texts below for the CF drafts and CF-1.13) through ncgen; fragment files
are written with netCDF4-python. The values a correct reader must produce are
computed here, independently of ncafs (numpy, netCDF4-python's own masking and
unpacking), and stored in OUTDIR/expected.nc, one variable per case.

Usage: make_cf_cases.py OUTDIR
"""
import os
import subprocess
import sys

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cfa06_examples as ex  # noqa: E402

OUT = sys.argv[1]
DFILL = netCDF4.default_fillvals["f8"]
rng = np.random.default_rng(20251217)
expected = {}


def ncgen(cdl_text, path, fmt="-4"):
    cdl = path + ".cdl"
    with open(cdl, "w") as f:
        f.write(cdl_text)
    subprocess.run(["ncgen", fmt, "-o", path, cdl], check=True)


def case_dir(name):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    return d


def write_fragment(path, name, dims, data, units=None, dtype="f8", fmt="NETCDF4", attrs=None, coords=None):
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        for d, n in zip(dims, data.shape):
            ds.createDimension(d, n)
        fill = (attrs or {}).pop("_FillValue", None)
        v = ds.createVariable(name, dtype, dims, fill_value=fill)
        v.set_auto_maskandscale(False)
        for k, val in (attrs or {}).items():
            setattr(v, k, val)
        if units:
            v.units = units
        v[...] = data
        for cname, (cvals, cunits) in (coords or {}).items():
            c = ds.createVariable(cname, "f8", (cname,))
            c.units = cunits
            c[:] = cvals


# ---------------------------------------------------------------- G3 (CFA-0.6.2)
def g3_examples():
    d = case_dir("g3")
    src = {"example1a": ex.two_halves(), "example1b": ex.two_halves(tracking=True),
           "example1c": ex.two_halves(substitution="file://data1/"), "example2": ex.in_file_second_half(),
           "example3": ex.grouped_shape_defect(), "example4": ex.versions_and_defects(),
           "example5": ex.missing_term_variables(), "example6": ex.stations_repeated_attributes(),
           "example7": ex.packed_grouped()}
    for n, text in src.items():
        ncgen(text, os.path.join(d, n + ".nca"))
    # Fragments of 1a/1b/2: January-June is a byte-copy double K fragment with
    # the level dimension; July-December omits the size-1 level dimension, is packed
    # into shorts with a _FillValue, and is in degC (unpack, mask, units, type).
    jj = rng.uniform(250, 300, (6, 1, 73, 144))
    write_fragment(os.path.join(d, "January-June.nc"), "temp", ("time", "level", "latitude", "longitude"), jj, "K")
    phys = rng.uniform(-30, 30, (6, 73, 144))
    packed = np.round((phys - 0.0) / 0.01).astype("i2")
    packed[0, 0, :5] = -32767  # masked
    write_fragment(os.path.join(d, "July-December.nc"), "temp", ("t", "lat", "lon"), packed, "degC", "i2",
                   attrs={"_FillValue": np.int16(-32767), "scale_factor": 0.01, "add_offset": 0.0})
    jd = packed.astype("f8") * 0.01 + 273.15
    jd[packed == -32767] = DFILL
    expected["g3_example1a"] = np.concatenate([jj, jd[:, None, :, :]], axis=0)
    # Example 2: the second half is the in-file temp2 (degreesC), mostly fill.
    with netCDF4.Dataset(os.path.join(d, "example2.nca")) as ds:
        t2 = ds["temp2"][...]  # netCDF4-python masks the fill values itself
    e2 = np.ma.filled(t2.astype("f8") + 273.15, DFILL)
    expected["g3_example2"] = np.concatenate([jj, e2[:, None, :, :]], axis=0)
    # Example 1a with the second fragment wholly missing (no file, no address).
    ncgen(ex.two_halves(files=("January-June.nc", None), addresses=("temp", None)),
          os.path.join(d, "example1a_missing.nca"))
    expected["g3_example1a_missing"] = np.concatenate([jj, np.full((6, 1, 73, 144), DFILL)], axis=0)
    # Example 1c made local: the substitution points at this folder by a file URI.
    ncgen(ex.two_halves(substitution="file://" + d + "/"), os.path.join(d, "example1c_local.nca"))
    # Example 1a whose first fragment's first version lies behind a symlink
    # leading out of the allowed roots (the folder's tree): not picked, although
    # a file is there (zeros, never the expected values).
    outside = case_dir("g3_outside")
    write_fragment(os.path.join(outside, "January-June.nc"), "temp", ("time", "level", "latitude", "longitude"),
                   np.zeros_like(jj), "K")
    if not os.path.islink(os.path.join(d, "swapped")):
        os.symlink(outside, os.path.join(d, "swapped"))
    ncgen(ex.swapped_versions(), os.path.join(d, "example1a_swapped.nca"))
    # Example 7 with its fragments in the root group (packed aggregation variable, A7).
    ncgen(ex.packed_grouped(in_group=False), os.path.join(d, "example7_root.nca"))
    with netCDF4.Dataset(os.path.join(d, "example7_root.nca")) as ds:
        ds.set_auto_maskandscale(False)
        raw = np.concatenate([ds["temp1"][:], ds["temp2"][:]]).astype("i2")
    expected["g3_example7_root"] = raw  # raw packed values: the client unpacks (A7)


# ---------------------------------------------------------------- G4a (CF draft 2024)
def g4a_testrain():
    d = case_dir("g4a")
    os.makedirs(os.path.join(d, "rain"), exist_ok=True)
    frames = []
    for n in range(10):
        p = rng.uniform(0, 10, (2, 4, 5))
        write_fragment(os.path.join(d, "rain", f"example{n}.nc"), "p", ("time", "latitude", "longitude"), p,
                       coords={"time": (np.array([2 * n + 1, 2 * n + 2], "f8"), "days since 2018-12-01")})
        frames.append(p)
    for label, order in [("ordered", list(range(10))), ("misordered", [8, 0, 1, 2, 3, 4, 5, 6, 7, 9])]:
        locs = ", ".join(f'"rain/example{n}.nc"' for n in order)
        ncgen(f"""netcdf testrain {{
dimensions: time = 20 ; f_time = 10 ; latitude = 4 ; f_latitude = 1 ; longitude = 5 ; f_longitude = 1 ; shape_0 = 3 ;
variables:
  int64 time(time) ; time:units = "days since 2018-12-01" ;
  string fragment_location_0(f_time, f_latitude, f_longitude) ;
  int64 fragment_shape_0(shape_0, f_time) ;
  string fragment_address_p ;
  double p ; p:standard_name = "rain" ; p:aggregated_dimensions = "time latitude longitude" ;
    p:aggregated_data = "location: fragment_location_0 address: fragment_address_p shape: fragment_shape_0" ;
:Conventions = "CF-1.11" ;
data:
  time = {", ".join(str(i) for i in range(1, 21))} ;
  fragment_location_0 = {locs} ;
  fragment_shape_0 = 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, _, _, _, _, _, _, _, _, _, 5, _, _, _, _, _, _, _, _, _ ;
  fragment_address_p = "p" ;
}}
""", os.path.join(d, f"testrain_{label}.nca"))
        expected[f"g4a_{label}"] = np.concatenate([frames[n] for n in order], axis=0)


# ---------------------------------------------------------------- G4b (cfdm 1.12.0) in netCDF-3, char arrays
def g4b_classic():
    d = case_dir("g4b")
    a = rng.uniform(0, 1, (3, 4)).astype("f4")
    b = rng.uniform(0, 1, (5, 4)).astype("f4")
    write_fragment(os.path.join(d, "part a.nc"), "x", ("t", "y"), a, dtype="f4", fmt="NETCDF3_CLASSIC")
    write_fragment(os.path.join(d, "part_b.nc"), "xb", ("t", "y"), b, dtype="f4", fmt="NETCDF3_CLASSIC")
    path = os.path.join(d, "cfdm112.nc")
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        for n, s in [("time", 8), ("y", 4), ("f_time", 2), ("f_y", 1), ("j", 2), ("i", 2), ("strlen", 12), ("vlen", 3)]:
            ds.createDimension(n, s)
        v = ds.createVariable("x", "f8", ())
        v.aggregated_dimensions = "time y"
        v.aggregated_data = "map: fmap location: floc variable: fvar"
        m = ds.createVariable("fmap", "i4", ("j", "i"), fill_value=-1)  # padding through _FillValue
        m[:] = np.ma.masked_equal(np.array([[3, 5], [4, -1]], "i4"), -1)
        loc = ds.createVariable("floc", "S1", ("f_time", "f_y", "strlen"))
        loc[:] = netCDF4.stringtochar(np.array(["part a.nc", "part_b.nc"], "S12").reshape(2, 1))
        var = ds.createVariable("fvar", "S1", ("f_time", "f_y", "vlen"))
        var[:] = netCDF4.stringtochar(np.array(["x", "xb"], "S3").reshape(2, 1))
        u = ds.createVariable("c", "f8", ())
        u.aggregated_dimensions = "time"
        u.aggregated_data = "map: cmap unique_value: cval"
        cm = ds.createVariable("cmap", "i2", ("i",))
        cm.missing_value = np.int16(-9)  # no padding needed, but declared
        cm[:] = [3, 5]
        cv = ds.createVariable("cval", "f4", ("f_time",))
        cv[:] = [1.5, 2.5]
        ds.Conventions = "CF-1.12"
    expected["g4b_x"] = np.concatenate([a, b]).astype("f8")
    expected["g4b_c"] = np.array([1.5] * 3 + [2.5] * 5, "f8")


# ---------------------------------------------------------------- G5 (CF-1.13)
def g5_examples():
    d = case_dir("g5")
    # Example 2.3: 1 x 3 x 2 fragments of floats (any numeric type); file_D is in degC.
    full = np.zeros((17, 180, 360))
    uris = []
    lat_sizes, lon_sizes = [90, 45, 45], [180, 180]
    names = iter("ABCDEF")
    lat0 = 0
    for la in lat_sizes:
        lon0 = 0
        for lo in lon_sizes:
            n = next(names)
            vals = rng.uniform(200, 300, (17, la, lo)).astype("f4")
            if n == "D":
                write_fragment(os.path.join(d, f"file_{n}.nc"), "tmp", ("z", "y", "x"), vals - 273.15, "degC", "f4")
                full[:, lat0:lat0 + la, lon0:lon0 + lo] = (vals - 273.15).astype("f4").astype("f8") + 273.15
            else:
                write_fragment(os.path.join(d, f"file_{n}.nc"), "tmp", ("z", "y", "x"), vals, "K", "f4")
                full[:, lat0:lat0 + la, lon0:lon0 + lo] = vals.astype("f8")
            uris.append(f'"file_{n}.nc"')
            lon0 += lo
        lat0 += la
    ncgen(f"""netcdf ex23 {{
dimensions: level = 17 ; latitude = 180 ; longitude = 360 ; f_level = 1 ; f_latitude = 3 ; f_longitude = 2 ; j = 3 ; i = 3 ;
variables:
  double temperature ; temperature:standard_name = "air_temperature" ; temperature:units = "K" ;
    temperature:cell_methods = "time: mean" ;
    temperature:aggregated_dimensions = "level latitude longitude" ;
    temperature:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  double level(level) ; level:units = "hPa" ;
  double latitude(latitude) ; latitude:units = "degrees_north" ;
  double longitude(longitude) ; longitude:units = "degrees_east" ;
  int fragment_map(j, i) ;
  string fragment_uris(f_level, f_latitude, f_longitude) ;
  string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 17, _, _, 90, 45, 45, 180, 180, _ ;
  fragment_uris = {", ".join(uris)} ;
  fragment_identifiers = "tmp" ;
}}
""", os.path.join(d, "example_2_3.nc"))
    expected["g5_example_2_3"] = full

    # L.1 / L.2: time split 3 + 9; the March fragment omits level; April-December
    # uses "days since 2002-01-01" (+365 days on reading) and sits in a subfolder.
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    jm = rng.uniform(250, 300, (3, 73, 144))
    ad = rng.uniform(250, 300, (9, 1, 73, 144))
    times = np.array([0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334], "f8")
    with netCDF4.Dataset(os.path.join(d, "January-March.nc"), "w") as ds:
        for n, s in [("time", 3), ("latitude", 73), ("longitude", 144)]:
            ds.createDimension(n, s)
        v = ds.createVariable("temperature", "f8", ("time", "latitude", "longitude"))
        v.units = "K"
        v[:] = jm
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2001-01-01"
        t[:] = times[:3]
    with netCDF4.Dataset(os.path.join(d, "data", "April-December.nc"), "w") as ds:
        for n, s in [("time", 9), ("level", 1), ("latitude", 73), ("longitude", 144)]:
            ds.createDimension(n, s)
        v = ds.createVariable("temperature", "f8", ("time", "level", "latitude", "longitude"))
        v.units = "K"
        v[:] = ad
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2002-01-01"
        t[:] = times[3:] - 365.0
    common = """dimensions: time = 12 ; level = 1 ; latitude = 73 ; longitude = 144 ;
  f_time = 2 ; f_level = 1 ; f_latitude = 1 ; f_longitude = 1 ; j = 4 ; i = 2 ; j_time = 1 ;
variables:
  double temperature ; temperature:units = "K" ;
    temperature:aggregated_dimensions = "time level latitude longitude" ;
    temperature:aggregated_data = "uris: fragment_uris identifiers: fragment_identifiers map: fragment_map" ;
  double time ; time:units = "days since 2001-01-01" ; time:calendar = "standard" ;
    time:aggregated_dimensions = "time" ;
    time:aggregated_data = "uris: fragment_uris_time identifiers: fragment_identifiers_time map: fragment_map_time" ;
  string fragment_uris(f_time, f_level, f_latitude, f_longitude) ;
  string fragment_identifiers ;
  int fragment_map(j, i) ;
  string fragment_uris_time(f_time) ;
  string fragment_identifiers_time ;
  int fragment_map_time(j_time, i) ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 3, 9, 1, _, 73, _, 144, _ ;
  fragment_identifiers = "temperature" ;
  fragment_map_time = 3, 9 ;
  fragment_identifiers_time = "time" ;
"""
    ncgen("netcdf L1 {\n" + common + """  fragment_uris = "January-March.nc", "data/April-December.nc" ;
  fragment_uris_time = "January-March.nc", "data/April-December.nc" ;
}
""", os.path.join(d, "example_L1.nc"))
    ncgen("netcdf L2 {\n" + common + f"""  fragment_uris = "file://{d}/January-March.nc", "https:///remote.host/data/April-December.nc" ;
  fragment_uris_time = "file://{d}/January-March.nc", "data/April-December.nc" ;
}}
""", os.path.join(d, "example_L2.nc"))
    expected["g5_L1"] = np.concatenate([jm[:, None], ad], axis=0)
    expected["g5_L1_time"] = times

    # L.5 (numeric unique values; the string uid of the spec is also present and hidden).
    ncgen("""netcdf L5 {
dimensions: time = 12 ; f_time = 2 ; j_uid = 1 ; i = 2 ;
variables:
  string uid ; uid:missing_value = "" ; uid:aggregated_dimensions = "time" ;
    uid:aggregated_data = "unique_values: fragment_unique_values map: fragment_map_uid" ;
  int fragment_map_uid(j_uid, i) ;
  string fragment_unique_values(f_time) ;
  short quality ; quality:_FillValue = -1s ; quality:aggregated_dimensions = "time" ;
    quality:aggregated_data = "unique_values: fragment_quality map: fragment_map_uid" ;
  int fragment_quality(f_time) ; fragment_quality:_FillValue = -99 ;
:Conventions = "CF-1.13" ;
data:
  fragment_map_uid = 3, 9 ;
  fragment_unique_values = "04b9-7eb5-4046-97b-0bf8", "05ee0-a183-43b3-a67-1eca" ;
  fragment_quality = 7, _ ;
}
""", os.path.join(d, "example_L5.nc"))
    expected["g5_L5_quality"] = np.array([7] * 3 + [-1] * 9, "i2")

    # L.6 (scalar), fragment in a 360_day-calendar time unit against the master's.
    with netCDF4.Dataset(os.path.join(d, "file.nc"), "w") as ds:
        v = ds.createVariable("tas", "f8", ())
        v.units = "days since 2000-02-01"
        v.calendar = "360_day"
        v[...] = 10.0
    ncgen("""netcdf L6 {
variables:
  double temperature ; temperature:units = "days since 2000-01-01" ; temperature:calendar = "360_day" ;
    temperature:aggregated_dimensions = "" ;
    temperature:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  int fragment_map ; string fragment_uris ; string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = 1 ; fragment_uris = "file.nc" ; fragment_identifiers = "tas" ;
}
""", os.path.join(d, "example_L6.nc"))
    expected["g5_L6"] = np.array(40.0)  # 10 days after 2000-02-01 = 30 + 10 days after 2000-01-01 (360_day)

    # CF-1.13 in netCDF-3: char feature variables, map padding through missing_value.
    path = os.path.join(d, "classic_L1.nc")
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        for n, s in [("time", 12), ("level", 1), ("latitude", 73), ("longitude", 144), ("f_time", 2), ("f_level", 1),
                     ("f_latitude", 1), ("f_longitude", 1), ("j", 4), ("i", 2), ("strlen", 40), ("idlen", 11)]:
            ds.createDimension(n, s)
        v = ds.createVariable("temperature", "f8", ())
        v.units = "K"
        v.aggregated_dimensions = "time level latitude longitude"
        v.aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers"
        m = ds.createVariable("fragment_map", "i4", ("j", "i"))
        m.missing_value = np.int32(-2)
        m.set_auto_mask(False)
        m[:] = np.array([[3, 9], [1, -2], [73, -2], [144, -2]], "i4")
        u = ds.createVariable("fragment_uris", "S1", ("f_time", "f_level", "f_latitude", "f_longitude", "strlen"))
        u[:] = netCDF4.stringtochar(np.array(["January-March.nc", "data/April-December.nc"], "S40").reshape(2, 1, 1, 1))
        i = ds.createVariable("fragment_identifiers", "S1", ("idlen",))
        i[:] = netCDF4.stringtochar(np.array(["temperature"], "S11"))[0]
        ds.Conventions = "CF-1.13"


g3_examples()
g4a_testrain()
g4b_classic()
g5_examples()
with netCDF4.Dataset(os.path.join(OUT, "expected.nc"), "w") as ds:
    for name, arr in expected.items():
        arr = np.asarray(arr)
        dims = []
        for k, n in enumerate(arr.shape):
            dn = f"{name}_d{k}"
            ds.createDimension(dn, n)
            dims.append(dn)
        v = ds.createVariable(name, arr.dtype, dims, fill_value=False)
        v[...] = arr
print("ok", len(expected), "cases")
