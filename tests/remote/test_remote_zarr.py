#!/usr/bin/python3
"""Zarr stores on HTTP (nginx) and S3 (s3rver behind a SigV4-checking proxy),
and local ones, named as CF-1.13 fragments (uris: the store's URL or path,
identifiers: the array), read through real ncafs mounts.

Run as: test_remote_zarr.py CASE  (CASES below). Environment: NCAFS_BIN,
NCAFS_NPM_DIR (where s3rver is installed).

The stores are written by zarr-python (python3-zarr 2.13) with several codecs
and chunks never written; the expected values are zarr-python's reading of the
same store; never our own output. A case whose server cannot run prints
SKIPPED and why, and exits 77.
"""
import errno
import json
import os
import shutil
import subprocess
import sys

import netCDF4
import numcodecs
import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "zarr_store"))
import servers  # noqa: E402
from test_mount import NCAFS, Mount, check, ncdump_variable, read_netcdf4, run_cases  # noqa: E402
from test_remote_mount import BUCKET, KEY_ID, SECRET, need_servers, read_all, roots, use_s3_credentials  # noqa: E402
from test_zarr_stores import write_v2_group, write_v2_single, write_v3_shards  # noqa: E402

ERA_ARRAYS = ("time", "lat", "lon", "tas", "pr", "code", "big")


def write_stores(www):
    """era.zarr (a consolidated group: zstd, lz4, bz2, blosc, zlib+shuffle,
    lzma; tas time 6..7 never written) and solo.zarr (one gzip array)."""
    os.makedirs(www, exist_ok=True)
    write_v2_group(os.path.join(www, "era.zarr"))
    write_v2_single(os.path.join(www, "solo.zarr"))
    group = zarr.open_group(os.path.join(www, "era.zarr"), mode="r")
    want = {name: group[name][...] for name in ERA_ARRAYS}
    want["solo"] = zarr.open_array(os.path.join(www, "solo.zarr"), mode="r")[...]
    fills = {name: group[name].fill_value for name in ERA_ARRAYS}
    fills["solo"] = zarr.open_array(os.path.join(www, "solo.zarr"), mode="r").fill_value
    return want, fills


def write_view(path, store_urls, shapes, fills=None):
    """A CF-1.13 aggregation of one fragment per variable: uris the store's
    URL, identifiers the array's name. store_urls: {variable: (url, identifier)};
    fills: the aggregation's _FillValue of each variable (its missing value,
    which the fragment's fill value becomes)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.13"
        for var, (url, identifier) in store_urls.items():
            shape, dtype, dims = shapes[var]
            for d, n in zip(dims, shape):
                if d not in ds.dimensions:
                    ds.createDimension(d, n)
            for k in range(len(shape)):
                if "f%d" % k not in ds.dimensions:
                    ds.createDimension("f%d" % k, 1)
            ds.createDimension("j_" + var, len(shape))
            ds.createDimension("i_" + var, 1)
            fill = (fills or {}).get(var)
            v = ds.createVariable(var, dtype, (), fill_value=np.array(fill, dtype) if fill is not None else None)
            v.aggregated_dimensions = " ".join(dims)
            v.aggregated_data = "map: map_%s uris: uris_%s identifiers: ids_%s" % (var, var, var)
            m = ds.createVariable("map_" + var, "i8", ("j_" + var, "i_" + var))
            m[:] = np.array(shape, "i8").reshape(len(shape), 1)
            u = ds.createVariable("uris_" + var, str, tuple("f%d" % k for k in range(len(shape))))
            u[(0,) * len(shape)] = url
            i = ds.createVariable("ids_" + var, str, ())
            i[...] = identifier


def era_shapes(want):
    dims = {"time": ["time"], "lat": ["lat"], "lon": ["lon"], "tas": ["time", "lat", "lon"], "pr": ["time", "lat"],
            "code": ["lat", "lon"], "big": ["time"], "solo": ["row", "col"]}
    return {k: (want[k].shape, want[k].dtype.newbyteorder("=").str.lstrip("<>=|"), dims[k]) for k in want}


def expect_values(path, want, what):
    """netCDF4-python and ncdump of the view equal zarr-python's values (tas and big among them)."""
    for name, values in want.items():
        got = read_netcdf4(path, name)
        check(np.array_equal(np.asarray(got, values.dtype.newbyteorder("=")), values,
                             equal_nan=values.dtype.kind == "f"), "%s %s: %s\nwant %s" % (what, name, got, values))
    # tas time 6..7 lie in chunks never written (404): the fill value, as zarr-python reads them.
    block = ncdump_variable(path, "tas")
    check("_, _" in block, what + ": ncdump shows the unwritten chunks as fill:\n" + block[-400:])
    if "big" in want:
        check(ncdump_variable(path, "big").count("1099511627776") == 1, what + ": ncdump big")


def all_urls(base, want):
    return {name: (base + ("/solo.zarr" if name == "solo" else "/era.zarr"), name) for name in want}


def era_stores(work):
    """work/www holding the stores, an empty work/src; zarr-python's values and fill values."""
    www, src = os.path.join(work, "www"), os.path.join(work, "src")
    want, fills = write_stores(www)
    os.makedirs(src)
    return www, src, want, fills


def write_era_view(src, base, want, fills):
    """src/era_view.nc: every array of the stores under `base` as a variable."""
    write_view(os.path.join(src, "era_view.nc"), all_urls(base, want), era_shapes(want), fills)


def case_http(work):
    """nginx: values equal zarr-python's; a stat sends no request; ncks reads it."""
    need_servers(s3=False)
    www, src, want, fills = era_stores(work)
    with servers.Nginx(www) as web:
        write_era_view(src, web.url, want, fills)
        with Mount(src, roots(web)) as m:
            for name in os.listdir(m.mnt):
                os.stat(m.path(name))
            check(web.requests() == [], "a listing and stat send no request: %s" % web.requests())
            expect_values(m.path("era_view.nc"), want, "http")
            r = subprocess.run(["ncks", "-H", "-C", "-v", "code", m.path("era_view.nc")], capture_output=True,
                               text=True, timeout=60)
            check(r.returncode == 0 and "code" in r.stdout, "ncks: %s %s" % (r.stdout[-300:], r.stderr))
            check(any("/era.zarr/tas/2.0.0" in line and " 404 " in line for line in web.requests()),
                  "an unwritten chunk was asked and answered 404")
            asked = [line.split(" ")[3] for line in web.requests()]
            check(asked.count("/era.zarr/.zmetadata") == 1 and asked.count("/era.zarr/tas/0.0.0") == 1,
                  "the variables' fragments share one open of the store: %s" % asked)
        r = subprocess.run([NCAFS, "check", "-o", roots(web), os.path.join(src, "era_view.nc")], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0, "ncafs check of the view is clean: %s %s" % (r.stdout, r.stderr))
        # /GROUP/ARRAY: an array of a sub-group, listed by the root's consolidated metadata.
        write_view(os.path.join(src, "group_view.nc"), {"x": (web.url + "/era.zarr", "/sub/x")}, {"x": ((3,), "i8", ["x"])})
        with Mount(src, roots(web)) as m:
            got = read_netcdf4(m.path("group_view.nc"), "x")
            check(np.array_equal(got, [1, 2, 3]), "era.zarr/sub/x over http: %s" % got)
        exported = os.path.join(work, "exported.nc")  # `ncafs export` reads the same stores
        subprocess.run([NCAFS, "export", os.path.join(src, "era_view.nc"), "-o", exported, "-o", roots(web)],
                       check=True, timeout=120)
        expect_values(exported, want, "ncafs export")
        # A relative name mapped to the server by rewrite=, as for partitions.
        write_view(os.path.join(src, "rel_view.nc"), {"tas": ("stores/era.zarr", "tas")}, era_shapes(want), fills)
        with Mount(src, "rewrite=%s/stores=%s,%s" % (src, web.url, roots(web))) as m:
            expect_values(m.path("rel_view.nc"), {"tas": want["tas"]}, "rewrite=")


def case_s3(work):
    """s3rver behind the SigV4 proxy: s3://BUCKET/era.zarr reads as zarr-python does."""
    need_servers()
    www, src, want, fills = era_stores(work)
    use_s3_credentials(work, SECRET)
    with servers.S3rver(os.path.join(work, "s3")) as store, servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed:
        for folder, _, files in os.walk(www):
            for f in files:
                full = os.path.join(folder, f)
                with open(full, "rb") as h:
                    store.put(BUCKET, "zarr/" + os.path.relpath(full, www), h.read())
        write_era_view(src, "s3://%s/zarr" % BUCKET, want, fills)
        options = "s3_endpoint=%s,allow_root=s3://%s/zarr" % (signed.url, BUCKET)
        with Mount(src, options) as m:
            expect_values(m.path("era_view.nc"), want, "s3")
            check(signed.rejected == 0, "every S3 request was signed right")


def case_policy(work):
    """A store outside allow_root: EIO, one log line naming the URL and the option, no request."""
    need_servers(s3=False)
    www, src, want, fills = era_stores(work)
    with servers.Nginx(www) as web:
        write_era_view(src, web.url, want, fills)
        with Mount(src, "allow_root=%s/elsewhere" % web.url) as m:
            got = read_all(m.path("era_view.nc"))
            check(got == errno.EIO, "outside allow_root: EIO expected, got %r" % (got if isinstance(got, int) else "bytes"))
            log = m.log_text()
            check(web.url + "/era.zarr" in log and "allow_root" in log, "the log names the URL and the option:\n" + log)
            check(web.requests() == [], "no request reached the server: %s" % web.requests())


def write_large(www):
    """big.zarr: one uncompressed chunk of 1 MiB (more than the 256 KiB read at open)."""
    a = zarr.open_array(os.path.join(www, "big.zarr"), mode="w", shape=(262144,), chunks=(262144,), dtype="<f4",
                        compressor=None, fill_value=None)
    a[:] = np.arange(262144, dtype="f4")
    a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    return a[...]


def case_replaced(work):
    """A chunk replaced between its open and the rest of its bytes: EIO, never bytes of two versions."""
    need_servers(s3=False)
    www, src = os.path.join(work, "www"), os.path.join(work, "src")
    os.makedirs(www)
    os.makedirs(src)
    values = write_large(www)
    shapes = {"big": (values.shape, "f4", ["n"])}
    with servers.Nginx(www) as web:
        write_view(os.path.join(src, "over_zarr.nc"), {"big": (web.url + "/big.zarr", "big")}, shapes)
        with Mount(src, roots(web)) as m:
            check(np.array_equal(read_netcdf4(m.path("over_zarr.nc"), "big"), values), "big.zarr through nginx")
        # Requests: zarr.json (404), .zmetadata (404), .zarray, .zattrs, the chunk's first block; then the change.
        with servers.FaultProxy(web.url, ["ok"] * 5 + ["change_etag"]) as proxy:
            write_view(os.path.join(src, "over_zarr.nc"), {"big": (proxy.url + "/big.zarr", "big")}, shapes)
            with Mount(src, roots(proxy)) as m:
                got = read_all(m.path("over_zarr.nc"))
                check(got == errno.EIO, "replaced chunk: EIO expected, got %r; requests %s" % (
                    got if isinstance(got, int) else "bytes", proxy.requests))
                check("changed" in m.log_text(), "the change is logged:\n" + m.log_text())


def case_hostile(work):
    """Hostile remote metadata: an overflowing shape leaves the array out (a log
    line, EIO for the fragment); consolidated names with '..' or URL syntax stay
    inside the store; other arrays read."""
    need_servers(s3=False)
    www, src, want, fills = era_stores(work)
    evil = os.path.join(www, "evil.zarr")
    shutil.copytree(os.path.join(www, "era.zarr"), evil)
    with open(os.path.join(evil, "tas", ".zarray")) as f:
        zarray = json.load(f)
    zarray["shape"] = [2 ** 62, 2 ** 62, 5]
    with open(os.path.join(evil, "tas", ".zarray"), "w") as f:
        json.dump(zarray, f)
    with open(os.path.join(evil, ".zmetadata")) as f:
        meta = json.load(f)
    meta["metadata"]["tas/.zarray"] = zarray
    meta["metadata"]["../era.zarr/lat/.zarray"] = meta["metadata"]["lat/.zarray"]
    meta["metadata"]["https:/127.0.0.1:1/.zarray"] = meta["metadata"]["lat/.zarray"]
    with open(os.path.join(evil, ".zmetadata"), "w") as f:
        json.dump(meta, f)
    with servers.Nginx(www) as web:
        urls = {"tas": (web.url + "/evil.zarr", "tas"), "lat": (web.url + "/evil.zarr", "lat")}
        shapes = era_shapes(want)
        write_view(os.path.join(src, "evil_tas.nc"), {"tas": urls["tas"]}, shapes, fills)
        write_view(os.path.join(src, "evil_lat.nc"), {"lat": urls["lat"]}, shapes, fills)
        with Mount(src, roots(web)) as m:
            got = read_all(m.path("evil_tas.nc"))
            check(got == errno.EIO, "overflowing shape: EIO expected, got %r" % (got if isinstance(got, int) else "bytes"))
            check(np.array_equal(read_netcdf4(m.path("evil_lat.nc"), "lat"), want["lat"]), "lat of evil.zarr reads")
            log = m.log_text()
            check("evil.zarr" in log and "tas: left out: shape" in log, "the log names the store, the array and why:\n" + log)
            asked = [line.split(" ")[3] for line in web.requests()]
            check(all(p.startswith("/evil.zarr/") for p in asked), "every request stays inside the store: %s" % asked)
        r = subprocess.run([NCAFS, "check", "-o", roots(web), os.path.join(src, "evil_tas.nc")], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode != 0 and "tas: left out: shape" in r.stdout + r.stderr,
              "ncafs check names the hostile array: %s %s" % (r.stdout, r.stderr))


def write_v3_group(store, values):
    """A v3 group of two sharded arrays (index at the end / at the start, big
    endian with crc32c, one inner chunk each never written) whose root
    zarr.json holds their consolidated metadata, as zarr-python 3 writes it."""
    write_v3_shards(store, values)
    nodes = {}
    for name in ("s_end", "s_start"):
        with open(os.path.join(store, name, "zarr.json")) as f:
            nodes[name] = json.load(f)
    with open(os.path.join(store, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {"title": "v3"},
                   "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": nodes}}, f)
    s_end, s_start = values.copy(), values.copy()
    s_end[2:4, 3:6] = -1  # the inner chunks left unwritten read as fill_value
    s_start[4:6, 0:2] = -1
    return {"s_end": s_end, "s_start": s_start}


def case_v3(work):
    """A Zarr v3 group with sharded arrays on nginx, listed by its consolidated metadata."""
    need_servers(s3=False)
    www, src = os.path.join(work, "www"), os.path.join(work, "src")
    os.makedirs(src)
    want = write_v3_group(os.path.join(www, "v3.zarr"), np.arange(6 * 7, dtype="f4").reshape(6, 7) * 0.25)
    shapes = {name: (values.shape, "f4", ["time", "y"]) for name, values in want.items()}
    with servers.Nginx(www) as web:
        urls = {name: (web.url + "/v3.zarr", name) for name in want}
        write_view(os.path.join(src, "v3_view.nc"), urls, shapes, {name: -1.0 for name in want})
        with Mount(src, roots(web)) as m:
            for name, values in want.items():
                got = read_netcdf4(m.path("v3_view.nc"), name)
                check(np.array_equal(got, values), "v3 %s: %s\nwant %s" % (name, got, values))
        asked = [line.split(" ")[3] for line in web.requests()]
        check("/v3.zarr/s_end/zarr.json" not in asked and asked.count("/v3.zarr/zarr.json") == 1,
              "the root zarr.json asked once, array metadata from its consolidated metadata: %s" % asked)


def case_local(work):
    """Local stores as fragments (a relative URI): values equal zarr-python's;
    a store outside the allowed roots (a symlink out, or ../) is refused."""
    src, outside = os.path.join(work, "src"), os.path.join(work, "outside")
    want, fills = write_stores(os.path.join(src, "data"))
    write_stores(outside)
    os.symlink(os.path.join(outside, "era.zarr"), os.path.join(src, "data", "link.zarr"))
    urls = {name: ("data/" + ("solo.zarr" if name == "solo" else "era.zarr"), name) for name in want}
    write_view(os.path.join(src, "local_view.nc"), urls, era_shapes(want), fills)
    write_view(os.path.join(src, "out_view.nc"), {"tas": ("../outside/era.zarr", "tas")}, era_shapes(want), fills)
    write_view(os.path.join(src, "link_view.nc"), {"tas": ("data/link.zarr", "tas")}, era_shapes(want), fills)
    # An identifier naming an array of a sub-group: /GROUP/ARRAY.
    write_view(os.path.join(src, "group_view.nc"), {"x": ("data/era.zarr", "/sub/x")}, {"x": ((3,), "i8", ["x"])})
    with Mount(src) as m:
        expect_values(m.path("local_view.nc"), want, "local")
        got = read_netcdf4(m.path("group_view.nc"), "x")
        check(np.array_equal(got, [1, 2, 3]), "era.zarr/sub/x: %s" % got)
        for name in ("out_view.nc", "link_view.nc"):
            got = read_all(m.path(name))
            check(got == errno.EIO, "%s: EIO expected, got %r" % (name, got if isinstance(got, int) else "bytes"))
        check("outside" in m.log_text(), "the refusals are logged:\n" + m.log_text())


def case_requests(work):
    """What reading the view costs in requests (printed): each object once at
    the first read, none again within 4 s, each at most once at a fresh open
    5 s later (its version asked again)."""
    import time
    need_servers(s3=False)
    www, src, want, fills = era_stores(work)
    with servers.Nginx(www) as web:
        write_era_view(src, web.url, want, fills)
        with Mount(src, roots(web)) as m:
            start = time.monotonic()
            read_all(m.path("era_view.nc"))
            first, took = list(web.requests()), time.monotonic() - start
            read_all(m.path("era_view.nc"))
            again = len(web.requests()) - len(first)
            time.sleep(5)
            read_all(m.path("era_view.nc"))
            fresh = [line.split(" ")[3] for line in web.requests()[len(first) + again:]]
        paths = [line.split(" ")[3] for line in first]
        print("first read: %d requests, %.2f s; again at once: %d; a fresh open 5 s later: %d"
              % (len(paths), took, again, len(fresh)))
        check(len(paths) == len(set(paths)), "each object asked once: %s" % paths)
        check(again == 0, "no request within 4 s")
        check(len(fresh) == len(set(fresh)) and set(fresh) <= set(paths), "each object at most once again: %s" % fresh)


CASES = {"requests": case_requests, "local": case_local, "v3": case_v3, "http": case_http, "s3": case_s3, "policy": case_policy, "replaced": case_replaced, "hostile": case_hostile}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-remote-zarr-"))
