#!/usr/bin/python3
"""Benchmark (a program, not a test): an NCA aggregation of 120 partitions
behind nginx, with 20 ms added to every request by a FaultProxy, read
through an ncafs mount and by other clients of the same URLs.

usage: remote_bench.py [NCAFS_BINARY]   (default: ncafs on PATH)

Prints, each cold (a new mount, so no cache of ours is warm):
  point   the time series of one grid point through the mount (netCDF4-python),
          against curl fetching the same byte ranges one after another, and
          against xarray.open_mfdataset over the URLs with fsspec (HTTP);
  cat     the whole virtual file through the mount, against curl fetching
          every object whole (one curl process, one connection);
and the ratios. Needs nginx, curl and the python3 modules netCDF4, numpy,
xarray, fsspec and aiohttp (python3-xarray, python3-fsspec, python3-aiohttp).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "remote"))
sys.path.insert(0, os.path.join(TESTS, "e2e"))
import make_aggregations  # noqa: E402
import servers  # noqa: E402
import test_mount  # noqa: E402

PARTS, PER_PART, LAT, LON = 120, 2, 90, 180
DELAY = 0.020
POINT = (45, 90)


def generate(gen):
    """120 partitions of PER_PART time steps; returns the master array."""
    info = make_aggregations.write_aggregation(
        gen, "bench", ["time", "lat", "lon"], {"time": PARTS * PER_PART, "lat": LAT, "lon": LON},
        {"time": [PER_PART] * PARTS, "lat": [LAT], "lon": [LON]}, record_dim="time", coordinate="time")
    parts = [n for n in os.listdir(gen) if n.startswith("part_")]
    return info["master"], sorted(parts, key=lambda n: int(n.split("_")[1]))  # part_100 after part_99


def point_offsets(path, master_part):
    """Byte offsets of tas[t, POINT] in one partition, found by searching the
    file for the big-endian records (record variables interleave with time)."""
    with open(path, "rb") as f:
        data = f.read()
    records = [master_part[t].astype(">f4").tobytes() for t in range(PER_PART)]
    starts = [data.find(r) for r in records]
    assert all(s >= 0 for s in starts), "records not found in " + path
    j, i = POINT
    return [s + (j * LON + i) * 4 for s in starts]


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def write_nca(gen, source, base_url):
    import json
    import netCDF4
    shutil.copy(os.path.join(gen, "bench.nca"), os.path.join(source, "bench.nca"))
    with netCDF4.Dataset(os.path.join(source, "bench.nca"), "a") as ds:
        spec = json.loads(ds.variables["tas"].nca_array)
        for p in spec["Partitions"]:
            p["subarray"]["file"] = base_url + "/" + p["subarray"]["file"]
        ds.variables["tas"].nca_array = json.dumps(spec)


def mount_point_series(ncafs, source, options):
    import netCDF4
    test_mount.NCAFS = ncafs
    with test_mount.Mount(source, options) as m:
        def run():
            with netCDF4.Dataset(m.path("bench.nc")) as ds:
                return np.array(ds.variables["tas"][:, POINT[0], POINT[1]])
        return timed(run)


def mount_cat(ncafs, source, options):
    test_mount.NCAFS = ncafs
    with test_mount.Mount(source, options) as m:
        return timed(lambda: subprocess.run(["cat", m.path("bench.nc")], stdout=subprocess.PIPE, check=True).stdout)


def curl_ranges(url_offsets):
    """One curl per range, one after another (a naive client)."""
    def run():
        out = []
        for url, offset in url_offsets:
            b = subprocess.run(["curl", "-sf", "-r", "%d-%d" % (offset, offset + 3), url], stdout=subprocess.PIPE,
                               check=True).stdout
            out.append(np.frombuffer(b, ">f4")[0])
        return np.array(out)
    return timed(run)


def curl_whole(urls):
    return timed(lambda: subprocess.run(["curl", "-sf"] + [a for u in urls for a in (u, "-o", "/dev/null")],
                                        check=True))


def xarray_point(urls, sizes):
    import fsspec
    import xarray as xr
    def run():
        # size given: the FaultProxy answers GET only (no HEAD), and without a
        # size fsspec falls back to an unseekable stream.
        http = fsspec.filesystem("http")
        files = [http.open(u, mode="rb", size=n) for u, n in zip(urls, sizes)]
        with xr.open_mfdataset(files, engine="scipy", combine="nested", concat_dim="time",
                               decode_times=False, parallel=False) as ds:
            return ds["tas"][:, POINT[0], POINT[1]].values
    return timed(run)


def main():
    ncafs = sys.argv[1] if len(sys.argv) > 1 else shutil.which("ncafs") or "ncafs"
    work = tempfile.mkdtemp(prefix="ncafs-remote-bench-")
    try:
        gen, source = os.path.join(work, "gen"), os.path.join(work, "src")
        os.makedirs(source)
        master, parts = generate(gen)
        expected_point = master[:, POINT[0], POINT[1]]
        total = sum(os.path.getsize(os.path.join(gen, p)) for p in parts)
        with servers.Nginx(gen) as web, servers.FaultProxy(web.url, [("delay", DELAY)] * 10_000_000) as slow:
            write_nca(gen, source, slow.url)
            urls = [slow.url + "/" + p for p in parts]
            offsets = [(u, o) for k, (u, p) in enumerate(zip(urls, parts))
                       for o in point_offsets(os.path.join(gen, p), part_master(master, k))]
            allowed = "allow_root=%s/" % slow.url  # 127.0.0.1 is reached only when a root names it
            t_mount_point, got = mount_point_series(ncafs, source, allowed)
            assert np.array_equal(got, expected_point), "mount: wrong point series"
            t_curl_point, got = curl_ranges(offsets)
            assert np.array_equal(got, expected_point), "curl: wrong point series"
            try:
                t_xr_point, got = xarray_point(urls, [os.path.getsize(os.path.join(gen, p)) for p in parts])
                assert np.array_equal(got, expected_point), "xarray: wrong point series"
            except ImportError as e:
                t_xr_point = None
                print("xarray/fsspec not available: %s" % e)
            t_mount_cat, cat_bytes = mount_cat(ncafs, source, allowed)
            t_curl_cat, _ = curl_whole(urls)
        print("%d partitions, %.1f MB, %d ms added per request" % (PARTS, total / 1e6, DELAY * 1000))
        print("point series (%d values): mount %.2f s, curl ranges one by one %.2f s (%.1fx)%s" % (
            len(expected_point), t_mount_point, t_curl_point, t_curl_point / t_mount_point,
            "" if t_xr_point is None else ", xarray+fsspec %.2f s (%.1fx)" % (t_xr_point, t_xr_point / t_mount_point)))
        print("cold cat: mount %.2f s (%.1f MB/s, %d bytes), curl of the objects %.2f s (%.1f MB/s): ratio %.2f" % (
            t_mount_cat, len(cat_bytes) / 1e6 / t_mount_cat, len(cat_bytes), t_curl_cat, total / 1e6 / t_curl_cat,
            (len(cat_bytes) / t_mount_cat) / (total / t_curl_cat)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def part_master(master, k):
    return master[k * PER_PART:(k + 1) * PER_PART]


if __name__ == "__main__":
    sys.exit(main())
