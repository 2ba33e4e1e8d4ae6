#!/usr/bin/python3
"""Regenerates the seed corpora under tests/fuzz/corpus/ (committed; rerun
only to refresh them). Seeds come from the project's own test data through
independent writers: ncgen (CDF files, CF aggregation files), the Python ds
writer of tests/ds/expected_ds.py, and for ncstream our ncstream_tool (no
independent ncstream writer exists here; its output is checked against a
protoc-generated decoder by tests/ncstream). NCA/CFA JSON seeds are written
here, shaped for nca_json_fuzz's carrier dimensions time(6) lat(4) lon(3)
and its private variable private_tas(lon, time, lat).

Usage: make_corpus.py NCSTREAM_TOOL   (e.g. build/fuzz/tests/ncstream/ncstream_tool)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
CORPUS = os.path.join(HERE, "corpus")
sys.path.insert(0, os.path.join(HERE, "..", "ds"))
sys.path.insert(0, os.path.join(HERE, "..", "vds"))
import expected_ds  # noqa: E402  (the independent ds writer of the ds tests)
import make_vds  # noqa: E402  (the independent OpenVDS container writer of the vds tests)

CDF_SEEDS = ["scalars", "attribute_types", "char_variables", "fill_values", "multidim",
             "several_record_vars", "record_zero", "special_names", "cf_timeseries"]
CDF5_SEEDS = ["cdf5_all_types", "cdf5_one_record_ushort"]


def ncgen(cdl_path, out, kind):
    subprocess.run(["ncgen", "-k", kind, "-o", out, cdl_path], check=True)


def target_dir(name):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    return d


def cdf_seeds(tmp):
    """CDF-1/2/5 files of the CDL fixtures (also inputs for the ds/ncs writers)."""
    out = target_dir("cdf_header_fuzz")
    made = []
    for name in CDF_SEEDS:
        for kind, tag in (("nc3", "cdf1"), ("nc6", "cdf2")):
            path = os.path.join(out, f"{name}.{tag}.nc")
            ncgen(os.path.join(DATA, "cdl", name + ".cdl"), path, kind)
            made.append(path)
    for name in CDF5_SEEDS:
        path = os.path.join(out, f"{name}.cdf5.nc")
        ncgen(os.path.join(DATA, "cdl", name + ".cdl"), path, "cdf5")
        made.append(path)
    return made


def ds_seeds(tmp):
    out = target_dir("ds_reader_fuzz")
    for name in ("types", "chars", "packed", "unsigned", "empty_record"):
        nc = os.path.join(tmp, name + ".nc")
        ncgen(os.path.join(DATA, "ds", name + ".cdl"), nc, "nc4")
        expected_ds.main(nc, os.path.join(out, name + ".ds"))
    # The experimental (ds-format 2.0.x) layout: no version line, .type/.dsize.
    header = {"x": {".dims": ["n"], ".size": [3], ".type": "float", ".dsize": 8, ".offset": 0, ".len": 24,
                    "units": "m"}, ".": {"title": "experimental"}}
    with open(os.path.join(out, "experimental.ds"), "wb") as f:
        f.write(json.dumps(header).encode() + b"\n" + bytes(range(24)))


def ncstream_seeds(tmp, tool):
    out = target_dir("ncstream_reader_fuzz")
    for name in ("classic_types", "cdf5_types", "empty_record"):
        nc = os.path.join(tmp, name + ".nc")
        ncgen(os.path.join(DATA, "ncstream", name + ".cdl"), nc, "cdf5" if "cdf5" in name else "nc3")
        subprocess.run([tool, "export", nc, os.path.join(out, name + ".ncs")], check=True)
        subprocess.run([tool, "export", nc, os.path.join(out, name + ".deflate.ncs"), "6"], check=True)


CF_CDL = {
    # G5 CF-1.13, netCDF-3 char feature variables, map padded by missing_value.
    "g5_uris": """netcdf g5 {
dimensions: time = 12 ; lat = 4 ; f_time = 2 ; f_lat = 1 ; j = 2 ; i = 2 ; strlen = 12 ; idlen = 3 ;
variables:
  double tas ; tas:units = "K" ; tas:aggregated_dimensions = "time lat" ;
    tas:aggregated_data = "map: fmap uris: furis identifiers: fid" ;
  int fmap(j, i) ; fmap:missing_value = -2 ;
  char furis(f_time, f_lat, strlen) ;
  char fid(idlen) ;
  :Conventions = "CF-1.13" ;
data:
  fmap = 3, 9, 4, -2 ; furis = "a.nc", "sub/b.nc" ; fid = "tas" ;
}""",
    # G5 CF-1.13 unique_values (constant fragments).
    "g5_unique": """netcdf g5u {
dimensions: time = 8 ; f_time = 2 ; i = 2 ;
variables:
  float c ; c:aggregated_dimensions = "time" ; c:aggregated_data = "map: cmap unique_values: cval" ;
  short cmap(i) ; float cval(f_time) ;
  :Conventions = "CF-1.13" ;
data:
  cmap = 3, 5 ; cval = 1.5, 2.5 ;
}""",
    # G4b cfdm 1.12: map/location/variable.
    "g4b": """netcdf g4b {
dimensions: time = 8 ; y = 4 ; f_time = 2 ; f_y = 1 ; j = 2 ; i = 2 ; strlen = 12 ; vlen = 3 ;
variables:
  double x ; x:aggregated_dimensions = "time y" ; x:aggregated_data = "map: fmap location: floc variable: fvar" ;
  int fmap(j, i) ; fmap:_FillValue = -1 ;
  char floc(f_time, f_y, strlen) ; char fvar(f_time, f_y, vlen) ;
  :Conventions = "CF-1.12" ;
data:
  fmap = 3, 5, 4, _ ; floc = "part a.nc", "part_b.nc" ; fvar = "x", "xb" ;
}""",
    # G3 CFA-0.6.2: location sizes, file, format, address.
    "g3": """netcdf g3 {
dimensions: time = 12 ; lat = 4 ; f_time = 2 ; f_lat = 1 ; j = 2 ; i = 2 ; strlen = 12 ; alen = 3 ; flen = 2 ;
variables:
  float tas ; tas:aggregated_dimensions = "time lat" ;
    tas:aggregated_data = "location: aloc file: afile format: afmt address: aaddr" ;
  int aloc(j, i) ;
  char afile(f_time, f_lat, strlen) ; char aaddr(f_time, f_lat, alen) ; char afmt(flen) ;
  :Conventions = "CF-1.9 CFA-0.6.2" ;
data:
  aloc = 3, 9, 4, _ ; afile = "a.nc", "b.nc" ; aaddr = "tas", "tas" ; afmt = "nc" ;
}""",
}


def cf_seeds(tmp):
    out = target_dir("cf_terms_fuzz")
    for name, text in CF_CDL.items():
        cdl = os.path.join(tmp, name + ".cdl")
        with open(cdl, "w") as f:
            f.write(text)
        ncgen(cdl, os.path.join(out, name + ".cdf1.nc"), "nc3")
    ncgen(os.path.join(tmp, "g5_uris.cdl"), os.path.join(out, "g5_uris.cdf5.nc"), "cdf5")


def nca_seeds():
    out = target_dir("nca_json_fuzz")
    loc = lambda t0, t1: [[t0, t1], [0, 3], [0, 2]]  # noqa: E731  (inclusive ranges)
    cfa04 = {"pmshape": [2], "pmdimensions": ["time"], "Partitions": [
        {"index": [0], "location": loc(0, 2), "subarray": {"file": "a.nc", "ncvar": "tas", "shape": [3, 4, 3],
                                                           "format": "netCDF"}},
        {"index": [1], "location": [[3, 5], [0, 3], [0, 1]], "part": "[[0, 2, 1], [3, 0, -1], (0, 2)]",
         "subarray": {"file": "b.nc", "ncvar": "tas", "shape": [3, 4, 3], "format": "netCDF", "dtype": "float32"}}]}
    nca02 = ("{'directions': {'lat': false, 'time': true, 'lon': true}, 'pmshape': [2], 'pmdimensions': ['time'],"
             " 'base': 'parts', 'Partitions': [{'index': [0], 'units': 'K @ 273.15', 'dimensions': ['lon', 'time', 'lat'],"
             " 'directions': {'time': False}, 'data': {'shape': [3, 3, 4], 'ncvar': 'private_tas'},"
             " 'location': [[0, 2], [0, 3], [0, 2]], 'format': 'netCDF'}, {'index': [1], 'data': {'file': 'b.nc',"
             " 'shape': [3, 4, 3], 'ncvar': 'tas', 'varid': None}, 'location': [[3, 5], [0, 3], [0, 2]],"
             " 'part': '[(0, 2, 1), [0, 1, 2, 3], (2, 0, -1)]', 'format': 'netCDF'}]}")
    seeds = {
        "cfa04.json": json.dumps(cfa04),
        "nca02_pseudo.json": nca02,
        "pmshape_2d.json": json.dumps({"pmshape": [2, 2], "pmdimensions": ["time", "lat"], "Partitions": [
            {"index": [i, j], "location": [[3 * i, 3 * i + 2], [2 * j, 2 * j + 1], [0, 2]],
             "subarray": {"file": f"p{i}{j}.nc", "ncvar": "tas", "shape": [3, 2, 3]}}
            for i in range(2) for j in range(2)]}),
        "part_only.txt": "[[0, 5, 2], (1, 2, 3)]",
        "empty_object.json": "{}",
    }
    for name, text in seeds.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


def vds_layout(shape, fmt, brick, margin, mult, lods, compression_name):
    """A VolumeDataLayout dict (notes section 2.2) for make_vds.write_vds."""
    names = ["Sample", "Crossline", "Inline"][:len(shape)]
    axes = [{"name": n, "numSamples": k, "unit": "ms" if i == 0 else "", "coordinateMin": 0, "coordinateMax": k - 1}
            for i, (n, k) in enumerate(zip(names, reversed(shape)))]
    channel = {"name": "Amplitude", "format": "Format_" + fmt, "components": "Components_1", "unit": "",
               "channelMapping": "Direct", "mappedValues": 1, "useNoValue": fmt == "U8", "noValue": 255.0,
               "integerScale": 0.5 if fmt == "U8" else 1.0, "integerOffset": -3.0 if fmt == "U8" else 0.0,
               "valueRange": [0.0, 1.0], "discrete": False, "renderable": True, "allowLossyCompression": False}
    desc = {"brickSize": "BrickSize_%d" % brick, "negativeMargin": margin, "positiveMargin": margin,
            "brickSize2DMultiplier": mult, "lodLevels": "LODLevels_%s" % (lods if lods else "None"),
            "create2DLODs": False, "forceFullResolutionDimension": False, "fullResolutionDimension": -1}
    return {"layoutDescriptor": desc, "axisDescriptors": axes, "channelDescriptors": [channel],
            "metadata": [{"category": "Test", "name": "Label", "type": "String", "value": "seed"}]}


def vds_seeds():
    """Small containers by make_vds.py (kept small: libFuzzer sizes its inputs
    from the corpus) and their VolumeDataLayout texts (the JSON branch)."""
    out = target_dir("vds_reader_fuzz")
    import numpy as np
    cases = {  # name: (C-order shape, format, brick, margin, multiplier, lods, compression, group)
        "r32_zip_lod1": ((5, 6, 40), "R32", 32, 2, 4, 1, "Zip", [0, 1, 2]),
        "u8_none": ((3, 4, 9), "U8", 32, 0, 4, 0, "None", [0, 1, 2]),
        "r64_2d_zip": ((7, 70), "R64", 32, 0, 2, 1, "Zip", [0, 1]),
        "bits_2d": ((5, 20), "1Bit", 32, 0, 2, 0, "None", [0, 1]),
    }
    for name, (shape, fmt, brick, margin, mult, lods, compression, group) in cases.items():
        values = (np.arange(np.prod(shape)) % 7).reshape(shape)
        if fmt == "1Bit":
            values = (values % 2).astype(np.uint8)
        layout = vds_layout(shape, fmt, brick, margin, mult, lods, compression)
        make_vds.write_vds(os.path.join(out, name + ".vds"), layout,
                           [(layout["channelDescriptors"][0], values, group, compression, lambda b: None)],
                           page_entries=4)
        with open(os.path.join(out, name + ".layout.json"), "w") as f:
            json.dump(layout, f)


def reference_set_seeds():
    """reference_set_fuzz: a reference set's JSON, a NUL, then blob.bin (chunks
    encoded by numcodecs, the independent encoder of the reference set tests)."""
    import numcodecs
    import numpy as np
    d = target_dir("reference_set_fuzz")
    values = np.arange(24, dtype="<i4").reshape(6, 4) - 5
    codecs = {"zlib": (numcodecs.Zlib(1), []), "gzip": (numcodecs.GZip(1), []), "zstd": (numcodecs.Zstd(1), []),
              "lz4": (numcodecs.LZ4(), []), "blosc": (numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE), []),
              "blosc_zstd": (numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE), []),
              "delta": (numcodecs.Zlib(1), [numcodecs.Delta("<i4")]), "shuffle": (None, [numcodecs.Shuffle(4)]),
              "bz2": (numcodecs.BZ2(1), []), "lzma": (numcodecs.LZMA(), []),
              "order_f": (numcodecs.Zlib(1), [])}
    for name, (compressor, filters) in codecs.items():
        order = "F" if name == "order_f" else "C"  # chunks column-major: numcodecs encodes their bytes so
        blob, refs = b"", {".zgroup": '{"zarr_format": 2}'}
        refs["v/.zarray"] = json.dumps({"zarr_format": 2, "shape": [6, 4], "chunks": [3, 4], "dtype": "<i4",
                                        "fill_value": -1, "order": order,
                                        "compressor": compressor.get_config() if compressor else None,
                                        "filters": [f.get_config() for f in filters] or None})
        refs["v/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"})
        data = np.asfortranarray(values[:3]) if order == "F" else values[:3].copy()
        for f in filters:
            data = f.encode(data)
        chunk = bytes(compressor.encode(data)) if compressor else bytes(np.asarray(data).tobytes())
        refs["v/0.0"] = ["{{b}}", 0, len(chunk)]
        blob += chunk
        text = json.dumps({"version": 1, "templates": {"b": "blob.bin"}, "refs": refs}).encode()
        with open(os.path.join(d, name), "wb") as f:
            f.write(text + b"\0" + blob)
    inline = {".zgroup": '{"zarr_format": 2}', ".zattrs": '{"title": "t", "n": [1, 2.5]}',
              "s/.zarray": json.dumps({"zarr_format": 2, "shape": [], "chunks": [], "dtype": ">f8",
                                       "fill_value": "NaN", "order": "C", "compressor": None, "filters": None}),
              "s/.zattrs": '{"_ARRAY_DIMENSIONS": []}', "s/0": "base64:QAQAAAAAAAA=",
              "c/.zarray": json.dumps({"zarr_format": 2, "shape": [5], "chunks": [2], "dtype": "|S1",
                                       "fill_value": None, "order": "C", "compressor": None, "filters": None}),
              "c/.zattrs": '{"_ARRAY_DIMENSIONS": ["n"]}', "c/0": "he", "c/1": "ll", "w/.zarray": ["blob.bin"]}
    with open(os.path.join(d, "inline_v0"), "wb") as f:
        f.write(json.dumps(inline).encode())


def helper_answer_seeds():
    """A netCDF-4 helper's answers in the layout of codecs/netcdf/survey_wire.cpp
    (little-endian 64-bit words; texts and byte strings prefixed by their
    length): a surveyed file with a described root group, an error, values,
    rows of a term alone and the inventory with rows of two terms (version 2)."""
    import struct

    def u64(*values):
        return b"".join(struct.pack("<Q", v) for v in values)

    def text(s):
        b = s.encode() if isinstance(s, str) else s
        return u64(len(b)) + b

    def lst(values):
        return u64(len(values), *values)

    magic = u64(0x4E434832)  # "NCH2"
    storage = lst([0, 1]) + u64(4, 4, 0) + lst([4, 6]) + lst([2, 6]) + u64(2, 96, 40, 0, 0)
    survey = u64(4096, 1, 1) + text("/v") + u64(0) + u64(1) + text("/v") + storage
    survey += u64(1) + text("/c") + u64(8, 1, 512, 48)
    attribute = text("title") + u64(2) + text("abc")
    variable = text("v") + u64(5, 0) + lst([0, 1]) + u64(1) + text("units") + u64(2) + text("K")
    variable += u64(0) + lst([2, 6]) + u64(1) + text(b"\0\0\x80\x3f")
    contiguous = text("c") + u64(6, 1) + lst([0]) + u64(0, 0) + lst([]) + u64(0) + text(b"")
    description = text("") + text("/") + u64(0) + u64(2) + text("time") + u64(4, 1) + text("x") + u64(6, 0)
    description += u64(1) + attribute + u64(2) + variable + contiguous
    description += u64(1) + u64(1, 0) + text("l") + text("an external link") + u64(1) + text("s skipped")
    uris = text("/uris") + lst([]) + lst([]) + u64(1, 0) + text("a.nc") + lst([4]) + text(b"") + lst([])
    uris += text(b"\0") + u64(1) + text("long_name") + text("uris")
    sizes = text("/map") + u64(1) + text("f") + lst([2]) + u64(0, 4) + text(b"") + lst([]) + text(b"\3\0\0\0\4\0\0\0")
    sizes += lst([3, 4]) + text(b"\0\0") + u64(0)
    inventory = u64(2) + text("/uris") + lst([]) + u64(0) + text("/map") + u64(1) + text("f") + u64(0)
    d = target_dir("helper_answer_fuzz")
    seeds = {"term": magic + text("") + u64(5) + uris,
             "inventory_rows": magic + text("") + u64(6) + inventory + u64(2) + sizes + uris,"described": magic + text("") + u64(1) + survey + u64(1) + description,
             "classic": magic + text("") + u64(0) + u64(1) + description,
             "error": magic + text("") + u64(2) + text("netcdf-c cannot open: NetCDF: HDF error"),
             "values": magic + text("") + u64(3) + text(bytes(range(16)))}
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        cdf_seeds(tmp)
        ds_seeds(tmp)
        ncstream_seeds(tmp, tool)
        cf_seeds(tmp)
    nca_seeds()
    vds_seeds()
    reference_set_seeds()
    helper_answer_seeds()


if __name__ == "__main__":
    main()
