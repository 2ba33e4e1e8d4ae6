#!/usr/bin/python3
"""Reference sets out of aggregations and files (`ncafs export --format
kerchunk`, `ncafs aggregate --format kerchunk`), read by independent
readers: fsspec's ReferenceFileSystem with zarr (chunk by chunk: fsspec
2022.11 raises KeyError for an absent chunk among several) and xarray
(engine="zarr"), compared with netCDF4-python reading the `.nc` view (the
bytes `ncafs export FILE` writes, which the mount serves), the partitions
themselves, or the oracle the generator computed on its own.

Run as: test_kerchunk_export.py CASE
  nca       NCA aggregations (classic record and fixed partitions, tiles,
            CDF-5, netCDF-4 partitions): every value, byte ranges only
  random    random NCA / CFA-0.4 aggregations with conversions: a variable
            written without --inline-converted reads as the oracle, one
            left out is named with its partition and reason; with
            --inline-converted every one is written and reads as the oracle
  netcdf4   deflated, shuffled netCDF-4 partitions with UNLIMITED time:
            `aggregate --format kerchunk`, the CF-1.13 file `aggregate`
            writes exported, a single netCDF-4 file and a single classic file
  convert   a partition of another type, a packed netCDF-4 one: left out and
            reported, then stored inline (shuffle + zlib where the others are)
            with --inline-converted; rewrite= applied to the referenced paths
  cf        CFA-0.6.2, the 2024 CF draft and CF-1.13 files of tests/aggregation_cf:
            fragments without the master's size-1 dimensions referenced, a
            permuted one left out, then inline
  remote    classic partitions on nginx (rewrite= to their URLs): referenced
            by URL and read over HTTP; SKIPPED without nginx
  hostile   a partition outside the allowed roots (by name or through a
            symbolic link) is never referenced; an
            HDF5 chunk grid of 10^12 chunks is refused at once
Environment: NCAFS_BIN.
"""
import collections.abc
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import fsspec
import netCDF4
import numpy as np
import xarray as xr
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "aggregation"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
import make_aggregations  # noqa: E402
import generate_aggregation  # noqa: E402
import servers  # noqa: E402

NCAFS = os.environ.get("NCAFS_BIN", "ncafs")
warnings.filterwarnings("ignore")  # xarray: no consolidated metadata (on purpose)


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def ncafs(*args, ok=True):
    r = subprocess.run([NCAFS, *args], capture_output=True, text=True)
    if ok and r.returncode != 0:
        fail("ncafs %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def export_refs(path, out, *extra):
    r = ncafs("export", path, "--format", "kerchunk", "-o", out, *extra)
    with open(out) as f:
        refs = json.load(f)
    check(refs.get("version") == 1 and ".zgroup" in refs["refs"], "%s: not a version 1 reference set" % out)
    return refs, r.stderr


class ChunkStore(collections.abc.Mapping):
    """One key at a time through ReferenceFileSystem: an absent chunk is a
    KeyError zarr reads as fill (fsspec 2022.11's mapper fails on it)."""

    def __init__(self, refs_path):
        # A new instance each time: fsspec caches them by arguments, and a
        # reference file rewritten under the same name must be read again.
        self.fs = fsspec.filesystem("reference", fo=refs_path, skip_instance_cache=True)
        self.keys = set(json.load(open(refs_path))["refs"])

    def __getitem__(self, key):
        if key not in self.keys:
            raise KeyError(key)
        return self.fs.cat_file(key)

    def __iter__(self):
        return iter(self.keys)

    def __len__(self):
        return len(self.keys)


def zarr_arrays(refs_path):
    store = ChunkStore(refs_path)
    names = sorted({k.split("/")[0] for k in store.keys if k.endswith("/.zarray")})
    return {n: zarr.open_array(zarr.storage.KVStore(store), path=n, mode="r")[...] for n in names}


def view_values(path, tmp):
    """The .nc view's raw values, as netCDF4-python reads the exported view."""
    out = os.path.join(tmp, "view-%d.nc" % time.monotonic_ns())
    ncafs("export", path, "-o", out)
    values = {}
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_maskandscale(False)
        for name, v in ds.variables.items():
            values[name] = v[...]
    os.unlink(out)
    return values


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


def xarray_reads(refs_path, expected):
    """xarray's zarr engine over the references (raw values) gives `expected`."""
    ds = xr.open_dataset("reference://", engine="zarr", mask_and_scale=False, decode_times=False,
                         backend_kwargs={"consolidated": False,
                                         "storage_options": {"fo": refs_path, "skip_instance_cache": True}})
    for name, want in expected.items():
        check(name in ds.variables, "%s: xarray lacks %s" % (refs_path, name))
        check(same(ds[name].values, want), "%s: xarray reads other values of %s" % (refs_path, name))
    ds.close()


def compare_with_view(path, refs_path, tmp, names=None):
    got = zarr_arrays(refs_path)
    want = view_values(path, tmp)
    for name in names or want:
        check(name in got, "%s: variable %s missing from the reference set" % (refs_path, name))
        check(same(got[name], want[name]), "%s: %s differs from the .nc view" % (refs_path, name))
    return got


def referenced_files(refs):
    return {v[0] for v in refs["refs"].values() if isinstance(v, list)}


def inline_chunks(refs, name):
    return [k for k, v in refs["refs"].items() if k.startswith(name + "/") and not k.split("/")[1].startswith(".")
            and isinstance(v, str)]


# ---- cases -------------------------------------------------------------------

def case_nca(tmp):
    for name, make in make_aggregations.ALL.items():
        folder = os.path.join(tmp, name)
        made = make(folder)
        nca = os.path.join(folder, name + ".nca")
        out = os.path.join(tmp, name + ".json")
        refs, err = export_refs(nca, out)
        check("left out" not in err, "%s: %s" % (name, err))
        var = made["var"]
        got = compare_with_view(nca, out, tmp)
        check(same(got[var], made["master"]), "%s: %s differs from the generator's master" % (name, var))
        check(not inline_chunks(refs, var), "%s: %s has inline chunks, expected byte ranges only" % (name, var))
        parts = {os.path.join(folder, f) for f in os.listdir(folder) if f.startswith("part_")}
        check(referenced_files(refs) == parts, "%s: references %s, partitions %s" % (name, referenced_files(refs), parts))
        xarray_reads(out, {var: made["master"]})
        print("ok: %s: %s %s from %d partitions" % (name, var, made["master"].shape, len(parts)))


def oracle_values(path):
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        return ds["v"][...]


def case_random(tmp):
    cases = generate_aggregation.random_cases(tmp, 2026, 3)
    kinds = collections.Counter()
    for c in cases:
        want = oracle_values(c["oracle"])
        default_out = os.path.join(c["root"], "default.json")
        refs, err = export_refs(c["nca"], default_out)
        if "v/.zarray" in refs["refs"]:
            check(same(zarr_arrays(default_out)["v"], want), "%s: v differs from the oracle" % c["nca"])
            kinds["referenced"] += 1
        else:
            check("v: partition " in err and "v: left out" in err,
                  "%s: v left out without naming partition and reason: %s" % (c["nca"], err))
            kinds["left out"] += 1
        full_out = os.path.join(c["root"], "inline.json")
        refs, err = export_refs(c["nca"], full_out, "--inline-converted")
        check("v/.zarray" in refs["refs"], "%s: v left out with --inline-converted: %s" % (c["nca"], err))
        check(same(zarr_arrays(full_out)["v"], want), "%s: v (--inline-converted) differs from the oracle" % c["nca"])
        compare_with_view(c["nca"], full_out, tmp)
    check(kinds["left out"] > 0, "no random case needed a conversion: %s" % kinds)
    print("ok: %d random NCA/CFA-0.4 aggregations: %s" % (len(cases), dict(kinds)))


def write_nc4_partitions(folder, n=3, steps=4):
    rng = np.random.default_rng(7)
    paths, data, times = [], [], []
    for i in range(n):
        path = os.path.join(folder, "p%d.nc" % i)
        with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 6)
            ds.createDimension("lon", 8)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01"
            lat = ds.createVariable("lat", "f4", ("lat",))
            lat[:] = np.linspace(-50, 50, 6)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=5, shuffle=True,
                                  chunksizes=(2, 3, 8), fill_value=np.float32(-999))
            v.units = "K"
            values = rng.random((steps, 6, 8)).astype("f4") * 50 + 250
            values[1, 2, 3] = -999  # masked by netCDF4-python: raw here
            t[:] = np.arange(steps) + steps * i
            v[:] = values
            times.append(np.arange(steps) + steps * i)
            data.append(values)
        paths.append(path)
    return paths, np.concatenate(data), np.concatenate(times).astype("f8")


def case_netcdf4(tmp):
    paths, tas, times = write_nc4_partitions(tmp)
    out = os.path.join(tmp, "direct.json")
    r = ncafs("aggregate", "--dim", "time", "--format", "kerchunk", "-o", out, *paths)
    refs = json.load(open(out))
    zarray = json.loads(refs["refs"]["tas/.zarray"])
    check([f["id"] for f in zarray["filters"]] == ["shuffle", "zlib"], "filters %s" % zarray["filters"])
    check(zarray["chunks"] == [2, 3, 8] and zarray["fill_value"] == -999.0, "zarray %s" % zarray)
    check(not inline_chunks(refs, "tas"), "tas chunks inline: expected HDF5 chunk references")
    check(not [f for f in os.listdir(tmp) if f.startswith(".")], "aggregate left a hidden file behind")
    got = zarr_arrays(out)
    check(same(got["tas"], tas) and same(got["time"], times), "aggregate --format kerchunk: values differ")
    xarray_reads(out, {"tas": tas, "time": times})
    # The CF-1.13 file aggregate writes, exported: the same references.
    cf = os.path.join(tmp, "tas.nc")
    ncafs("aggregate", "--dim", "time", "-o", cf, *paths)
    out2 = os.path.join(tmp, "cf.json")
    refs2, err = export_refs(cf, out2)
    check("left out" not in err, err)
    compare_with_view(cf, out2, tmp)
    check({k: v for k, v in refs2["refs"].items() if k.startswith("tas/")} ==
          {k: v for k, v in refs["refs"].items() if k.startswith("tas/")}, "CF-1.13 export differs from aggregate's")
    # Single-file datasets: a netCDF-4 file and a classic file with a record variable.
    out3 = os.path.join(tmp, "p0.json")
    export_refs(paths[0], out3)
    compare_with_view(paths[0], out3, tmp)
    check(referenced_files(json.load(open(out3))) == {paths[0]}, "p0.json references other files")
    classic = os.path.join(tmp, "classic.nc")
    with netCDF4.Dataset(classic, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 5)
        a = ds.createVariable("a", "i2", ("time", "x"))  # 10 bytes a record, padded to 12
        b = ds.createVariable("b", "f8", ("x",))
        c = ds.createVariable("c", "f4", ("time",))  # a second record variable: records interleave
        a[:] = np.arange(35, dtype="i2").reshape(7, 5)
        b[:] = np.arange(5) * 0.5
        c[:] = np.arange(7) * 1.5
    out4 = os.path.join(tmp, "classic.json")
    refs4, _ = export_refs(classic, out4)
    check(json.loads(refs4["refs"]["a/.zarray"])["chunks"] == [1, 5], "record variable: not one chunk per record")
    compare_with_view(classic, out4, tmp)
    print("ok: netCDF-4 deflate+shuffle partitions (aggregate --format kerchunk, CF-1.13 export), single-file datasets")


def case_convert(tmp):
    folder = os.path.join(tmp, "conv")
    made = make_aggregations.write_aggregation(folder, "conv", ["time", "x"], {"time": 6, "x": 4},
                                               {"time": [3, 3], "x": [4]}, var="v", dtype="f4")
    victim = os.path.join(folder, "part_01_00.nc")
    with netCDF4.Dataset(victim, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", 3)
        ds.createDimension("x", 4)
        v = ds.createVariable("v", "i2", ("time", "x"))
        v[:] = np.arange(12, dtype="i2").reshape(3, 4)
    nca = os.path.join(folder, "conv.nca")
    out = os.path.join(tmp, "conv.json")
    refs, err = export_refs(nca, out)
    check("v/.zarray" not in refs["refs"], "v written although a partition needs conversion")
    check("v: partition %s" % victim in err and "short" in err and "left out" in err,
          "the report does not name variable, partition and reason: %s" % err)
    refs, err = export_refs(nca, out, "--inline-converted")
    check("v/.zarray" in refs["refs"], "v left out with --inline-converted: " + err)
    check(inline_chunks(refs, "v") and referenced_files(refs) == {os.path.join(folder, "part_00_00.nc")},
          "expected partition 0 referenced and partition 1 inline: %s" % referenced_files(refs))
    got = compare_with_view(nca, out, tmp)
    check(same(got["v"][3:], np.arange(12, dtype="f4").reshape(3, 4)), "converted values differ")
    check(same(got["v"][:3], made["master"][:3]), "referenced values differ")
    print("ok: a partition of another type: left out and reported, then inline with --inline-converted")
    # Deflated netCDF-4 partitions, one packed (scale_factor): its chunks
    # inline, encoded with the same shuffle + zlib as the referenced ones.
    folder = os.path.join(tmp, "packed")
    os.makedirs(folder)
    paths, tas, _ = write_nc4_partitions(folder, n=2)
    cf = os.path.join(folder, "tas.nc")
    ncafs("aggregate", "--dim", "time", "-o", cf, *paths)
    with netCDF4.Dataset(paths[1], "a") as ds:  # packed after the aggregation was written
        ds["tas"].scale_factor = np.float32(2.0)
    out = os.path.join(tmp, "packed.json")
    refs, err = export_refs(cf, out)
    check("tas/.zarray" not in refs["refs"] and "scale_factor" in err, "packed partition not refused: " + err)
    refs, err = export_refs(cf, out, "--inline-converted")
    zarray = json.loads(refs["refs"]["tas/.zarray"])
    check([f["id"] for f in zarray["filters"]] == ["shuffle", "zlib"] and inline_chunks(refs, "tas"),
          "expected shuffle+zlib with inline chunks: %s" % zarray)
    got = compare_with_view(cf, out, tmp)
    check(same(got["tas"][4:], np.where(tas[4:] == -999, -999, tas[4:] * 2)), "unpacked inline values differ")
    print("ok: a packed netCDF-4 partition: refused, then inline with shuffle + zlib")
    # rewrite=: the references name the files the rewritten paths name.
    folder = os.path.join(tmp, "moved")
    made = make_aggregations.write_aggregation(folder, "m", ["t", "x"], {"t": 4, "x": 3}, {"t": [2, 2], "x": [3]},
                                               var="v", dtype="f8")
    nca = os.path.join(folder, "m.nca")
    with netCDF4.Dataset(nca, "a") as ds:
        doc = json.loads(ds["v"].nca_array)
        for p in doc["Partitions"]:
            p["subarray"]["file"] = "/archive/gone/" + p["subarray"]["file"]
        ds["v"].nca_array = json.dumps(doc)
    out = os.path.join(tmp, "moved.json")
    refs, err = export_refs(nca, out, "-o", "rewrite=/archive/gone=" + folder)
    check(referenced_files(refs) == {os.path.join(folder, f) for f in ("part_00_00.nc", "part_01_00.nc")},
          "rewrite= not applied: %s" % referenced_files(refs))
    check(same(zarr_arrays(out)["v"], made["master"]), "rewritten references read other values")
    print("ok: rewrite= applies to the referenced paths")


def case_hostile(tmp):
    inside = os.path.join(tmp, "inside")
    outside = os.path.join(tmp, "outside")
    make_aggregations.write_aggregation(outside, "x", ["t"], {"t": 4}, {"t": [2, 2]}, var="v", dtype="f4")
    with netCDF4.Dataset(os.path.join(outside, "x.nca")) as src:
        doc = json.loads(src["v"].nca_array)
    os.makedirs(inside)
    # By name (refused when the aggregation is read) and through a symbolic
    # link inside the folder (refused when the partition is opened).
    os.symlink(os.path.join(outside, "part_01.nc"), os.path.join(inside, "link.nc"))
    for kind, names in (("name", ["../outside/part_00.nc", "../outside/part_01.nc"]),
                        ("symlink", ["link.nc", "link.nc"])):
        for p, name in zip(doc["Partitions"], names):
            p["subarray"]["file"] = name
        nca = os.path.join(inside, "evil.nca")
        with netCDF4.Dataset(nca, "w", format="NETCDF3_CLASSIC") as ds:
            ds.Conventions = "CF-1.5 NCA"
            ds.createDimension("t", 4)
            v = ds.createVariable("v", "f4", ())
            v.cf_role = "nca_variable"
            v.nca_dimensions = "t"
            v.nca_array = json.dumps(doc)
        out = os.path.join(tmp, "evil.json")
        for extra in ([], ["--inline-converted"]):
            r = ncafs("export", nca, "--format", "kerchunk", "-o", out, *extra, ok=False)
            if r.returncode != 0:
                check(not os.path.exists(out) and "outside the allowed roots" in r.stderr, r.stderr)
                continue
            refs = json.load(open(out))
            check("v/.zarray" not in refs["refs"] and "outside" not in json.dumps(refs),
                  "%s: a partition outside the allowed roots was referenced" % kind)
            check("v: left out" in r.stderr, "no reason given: " + r.stderr)
    # 10^12 chunks of one element: refused from the grid's size, at once.
    big = os.path.join(inside, "big.nc")
    with netCDF4.Dataset(big, "w", format="NETCDF4") as ds:
        ds.createDimension("n", None)
        v = ds.createVariable("v", "i1", ("n",), chunksizes=(1,))
        v[10 ** 12 - 1] = 1
    start = time.monotonic()
    refs, err = export_refs(big, os.path.join(tmp, "big.json"))
    check("v/.zarray" not in refs["refs"] and "more than" in err, "10^12 chunks not refused: " + err)
    check(time.monotonic() - start < 20, "refusing 10^12 chunks took %.1f s" % (time.monotonic() - start))
    print("ok: partition outside the roots not referenced; 10^12 HDF5 chunks refused")


def peak_rss_mib(args):
    """Peak resident memory (MiB) of a command and every process it waited for (the confined child)."""
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True);"
             " print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    env = dict(os.environ)
    if env.get("ASAN_OPTIONS"):  # AddressSanitizer's quarantine would hold every freed block: memory not ours
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=0"
    code, kib = subprocess.run([sys.executable, "-c", probe] + args, capture_output=True, text=True, env=env,
                               check=True).stdout.split()
    return int(code), int(kib) / 1024.0


def case_bounded(tmp):
    """A 5 KB NCA file whose partitions (lengths 299,999 and 300,001: no
    common divisor) make a grid of 600,000 one-element chunks, for each of 4
    variables: 2.4 million references, written as they are made (the export
    held them all at once and reached 2 GiB for such a file). The peak memory
    stays far below what 2.4 million references would take held at once."""
    n0, n1 = 299999, 300001
    for name, n in (("p0.nc", n0), ("p1.nc", n1)):
        with netCDF4.Dataset(os.path.join(tmp, name), "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("x", n)
            ds.createVariable("p", "f4", ("x",))[:] = np.arange(n, dtype="f4")
    nca = os.path.join(tmp, "many.nca")
    with netCDF4.Dataset(nca, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("x", n0 + n1)
        for k in range(4):
            v = ds.createVariable("v%d" % k, "f4", ())
            v.cf_role = "nca_variable"
            v.nca_dimensions = "x"
            v.nca_array = json.dumps({"pmshape": [2], "pmdimensions": ["x"], "Partitions": [
                {"index": [0], "location": [[0, n0 - 1]], "subarray": {"file": "p0.nc", "ncvar": "p", "shape": [n0]}},
                {"index": [1], "location": [[n0, n0 + n1 - 1]], "subarray": {"file": "p1.nc", "ncvar": "p", "shape": [n1]}}]})
    check(os.path.getsize(nca) < 8192, "the NCA file is not small")
    out = os.path.join(tmp, "many.json")
    code, peak = peak_rss_mib([NCAFS, "export", nca, "--format", "kerchunk", "-o", out])
    check(code == 0, "the export failed")
    with open(out) as f:
        refs = json.load(f)["refs"]
    chunks = sum(1 for k in refs if k.startswith("v3/") and not k.endswith((".zarray", ".zattrs")))
    print("%d references, %.0f MB of JSON, export peak %.0f MiB" % (len(refs), os.path.getsize(out) / 1e6, peak))
    check(chunks == n0 + n1, "v3 has %d chunk references, not %d" % (chunks, n0 + n1))
    first = refs["v3/%d" % n0]
    check(first[0].endswith("p1.nc") and first[2] == 4, "v3's first chunk of p1 is %r, not 4 bytes of p1.nc" % first)
    check(peak < 200, "the export peaked at %.0f MiB: the references are held at once" % peak)


def case_cf(tmp):
    """CFA-0.6, the 2024 CF draft and CF-1.13 files of tests/aggregation_cf."""
    cf = os.path.join(HERE, "..", "aggregation_cf", "make_cf_cases.py")
    subprocess.run(["/usr/bin/python3", cf, tmp], check=True, capture_output=True)
    # CF-1.13 whose fragments omit the size-1 level dimension: referenced as they are.
    path = os.path.join(tmp, "g5", "example_L1.nc")
    out = os.path.join(tmp, "l1.json")
    refs, err = export_refs(path, out)
    check("left out" not in err and referenced_files(refs) and not inline_chunks(refs, "temperature"),
          "example_L1: fragments without the size-1 level dimension not referenced: " + err)
    compare_with_view(path, out, tmp)
    # The 2024 draft (testrain): ten netCDF-4 fragments.
    path = os.path.join(tmp, "g4a", "testrain_ordered.nca")
    out = os.path.join(tmp, "rain.json")
    refs, err = export_refs(path, out)
    check(len(referenced_files(refs)) == 10, "testrain: %d fragments referenced" % len(referenced_files(refs)))
    compare_with_view(path, out, tmp)
    # CFA-0.6.2 with a fragment of permuted axes: left out, then inline.
    path = os.path.join(tmp, "g3", "example1a.nca")
    out = os.path.join(tmp, "e1a.json")
    refs, err = export_refs(path, out)
    check("temp/.zarray" not in refs["refs"] and "permuted" in err, "example1a: permuted fragment not reported: " + err)
    refs, err = export_refs(path, out, "--inline-converted")
    check(referenced_files(refs), "example1a: the fragment in master order is not referenced")
    compare_with_view(path, out, tmp)
    print("ok: CF-1.13 (size-1 axes left out), the 2024 draft, CFA-0.6.2 (a permuted fragment)")


def case_remote(tmp):
    """Partitions on an HTTP server (nginx on 127.0.0.1): referenced by URL."""
    if servers.skip_reason_nginx():
        print("SKIPPED: " + servers.skip_reason_nginx())
        sys.exit(77)
    src = os.path.join(tmp, "src")
    made = make_aggregations.write_aggregation(src, "r", ["time", "x"], {"time": 6, "x": 5},
                                               {"time": [2, 2, 2], "x": [5]}, var="v", dtype="f4", record_dim="time",
                                               coordinate="time")
    with servers.Nginx(src) as web:
        out = os.path.join(tmp, "r.json")
        refs, err = export_refs(os.path.join(src, "r.nca"), out,
                                "-o", "rewrite=%s=%s,allow_root=%s/" % (src, web.url, web.url))
        urls = referenced_files(refs)
        check(urls == {"%s/part_%02d_00.nc" % (web.url, i) for i in range(3)}, "references: %s" % urls)
        check(same(zarr_arrays(out)["v"], made["master"]), "values over HTTP differ from the generator's master")
    print("ok: remote partitions referenced by their URLs, read over HTTP by fsspec")


CASES = {"bounded": case_bounded, "nca": case_nca, "cf": case_cf, "remote": case_remote, "random": case_random, "netcdf4": case_netcdf4, "convert": case_convert,
         "hostile": case_hostile}


def main():
    case = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ncafs-kerchunk-") as tmp:
        CASES[case](tmp)


if __name__ == "__main__":
    main()
