#!/usr/bin/python3
"""The `.zarr` views of a mount served over HTTP by nginx (the way out to
many machines), read by clients we did not write, against netCDF4-python
reading the `.nc` views on the mount.

Run as: test_zarr_view_http.py CASE   (CASE: http | dask | www)
Environment: NCAFS_BIN (the ncafs executable, set by CMake); NCAFS_NPM_DIR
(where zarrita is installed, as tests/zarr_store installs it).

The sources of reader_sources.py (a classic file, a deflated netCDF-4 file,
an int64 NCA aggregation along UNLIMITED time with a missing partition),
mounted with missing_partitions=fill; nginx (tests/remote/servers.py)
serves the mount point on 127.0.0.1 only, with folder listings on (for
readers that list), and is stopped before the mount is unmounted, also when
a check fails.

http: for each NAME.zarr at http://127.0.0.1:PORT/NAME.zarr, zarr-python
      2.13 through fsspec's HTTP filesystem (open_consolidated and open, which
      lists the folders) and xarray's open_zarr on the URL read every value,
      dtype, attribute and fill value of the `.nc` view; zarrita (npm,
      FetchStore) reads the numeric arrays of the v2 stores, and every array
      of the v3 stores of a second mount with zarr_format=3 served the same
      way; no request fails on the server. Hostile requests: keys outside
      the grid (an index past the end, leading zeros, wrong rank), paths
      leading out of the mount, are refused (404, 403 or 400); a byte range
      of a chunk is that range of its bytes.
dask: a LocalCluster of two worker processes (one thread each) computes,
      from xarray's open_zarr of each URL, the sum over the first dimension
      of every numeric data variable as stored (integers in int64, floats in
      float64) and its mean of the decoded values (fill values masked, CF
      scaling), equal to numpy's on the `.nc` view's values; every chunk of
      the variable is fetched from nginx during the computation, and the
      workers are processes other than this one.
www (root only, SKIPPED otherwise): the recipe of the README: the mount with
      allow_other, nginx's master as root and its worker as www-data. The
      store of a dataset www-data may read is served with the `.nc` view's
      values; every file of the store of an aggregation with a partition only
      root may read is refused (403: the caller check judged www-data).
The comparisons are of values, not of chunk shapes or compressors. SKIPPED
(exit 77) without nginx; the zarrita sub-check says SKIPPED when npm cannot
install it.
"""
import contextlib
import json
import os
import pwd
import sys
import urllib.error
import urllib.request
import warnings

import fsspec
import numpy as np
import xarray as xr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
import servers  # noqa: E402
from test_mount import SKIP, Mount, check, run_cases  # noqa: E402
from test_zarr_view import check_zarrita, compare_xarray, compare_zarr, raw_values  # noqa: E402
from reader_sources import MOUNT_OPTIONS, decoded_variables, make_sources, raw_variables  # noqa: E402

LISTINGS = "autoindex on;"  # zarr.open without consolidated metadata lists the folders
WORKERS = 2


@contextlib.contextmanager
def served(src, options):
    """SRC mounted with OPTIONS and nginx serving the mount point; nginx stops before the unmount."""
    with Mount(src, options) as m, servers.Nginx(m.mnt, locations=LISTINGS) as web:
        yield m, web


def store_url(web, folder, stem):
    return "/".join([web.url] + ([folder] if folder else []) + [stem + ".zarr"])


def check_no_failed_request(web, what):
    failed = [line for line in web.requests() if int(line.split(" ")[1]) >= 500]
    check(not failed, "%s: requests nginx failed (the mount's errors):\n%s\n%s" % (what, "\n".join(failed[:20]),
                                                                                   web.log_text()[-2000:]))


def require_nginx():
    why = servers.skip_reason_nginx()
    if why:
        print("SKIPPED: " + why)
        sys.exit(SKIP)


def numeric_raw(nc_path):
    """zarrita reads v2 char arrays (|S1) as texts: the numeric arrays alone."""
    return {name: v.values for name, v in raw_variables(nc_path).items() if v.values.dtype.kind != "S"}


HOSTILE_KEYS = ("tas/5.0.0", "tas/01.0.0", "tas/0.0", "tas/0.0.0.0", "tas/-1.0.0", "tas/0.0.0/x", "nothing/.zarray",
                "tas/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "..%2f..%2fetc/passwd")


def http_status(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def check_hostile_requests(web, m):
    """Keys outside the grid are absent (404), paths leading out of the mount are not served, and a
    byte range of a chunk is the range of the chunk's bytes."""
    for key in HOSTILE_KEYS:
        status, body = http_status(web.url + "/cls.zarr/" + key)
        check(status in (400, 403, 404), "GET cls.zarr/%s: %d %r" % (key, status, body[:100]))
    with open(m.path("cls.zarr", "tas", "0.0.0"), "rb") as f:
        whole = f.read()
    status, part = http_status(web.url + "/cls.zarr/tas/0.0.0", {"Range": "bytes=5-17"})
    check(status == 206 and part == whole[5:18], "a range of a chunk: %d %r, want %r" % (status, part, whole[5:18]))
    print("keys outside the grid and paths out of the mount are refused; a range of a chunk is its bytes")


def case_http(work):
    require_nginx()
    src = os.path.join(work, "src")
    datasets = make_sources(src)
    with served(src, MOUNT_OPTIONS) as (m, web), served(src, MOUNT_OPTIONS + ",zarr_format=3") as (_, web3):
        nc_of, v3_nc_of = {}, {}
        for stem, folder in datasets:
            url, nc_path = store_url(web, folder, stem), m.path(folder, stem + ".nc")
            compare_zarr(fsspec.get_mapper(url), nc_path, stem + " over HTTP")
            compare_xarray(url, nc_path, stem + " over HTTP (xarray)")
            nc_of[url], v3_nc_of[store_url(web3, folder, stem)] = nc_path, nc_path
            print("%s: zarr (fsspec HTTP, consolidated and listed) and xarray read the .nc view's values" % url)
        check_zarrita(sorted(nc_of), lambda url: numeric_raw(nc_of[url]))
        check_zarrita(sorted(v3_nc_of), lambda url: raw_values(v3_nc_of[url]))
        check_hostile_requests(web, m)
        check_no_failed_request(web, "v2")
        check_no_failed_request(web3, "v3")
        check(m.alive(), "the daemon died")


def chunk_count(url, name):
    meta = json.loads(fsspec.get_mapper(url)[name + "/.zarray"])
    return int(np.prod([-(-s // c) for s, c in zip(meta["shape"], meta["chunks"])]))


def chunks_fetched(web, url, name, since):
    """The distinct chunk keys of array NAME requested from nginx after request number SINCE."""
    prefix = "GET /%s/%s/" % (url.split("/", 3)[3], name)
    keys = set()
    for line in web.requests()[since:]:
        at = line.find(prefix)
        if at >= 0 and line.split(" ")[1] == "200":
            key = line[at + len(prefix):].split(" ")[0]
            if not key.startswith("."):
                keys.add(key)
    return keys


def data_variables(nc_path, ds):
    """The numeric variables of rank >= 1 that xarray reads lazily (not dimension coordinates)."""
    return {name: v for name, v in raw_variables(nc_path).items()
            if v.values.dtype.kind in "iuf" and v.values.ndim >= 1 and name not in ds.dims}


def check_reductions(web, url, nc_path):
    decoded = decoded_variables(nc_path)
    with xr.open_zarr(url, mask_and_scale=False, decode_times=False) as stored, \
            xr.open_zarr(url, decode_times=False) as ds:
        for name, v in data_variables(nc_path, stored).items():
            since = len(web.requests())
            acc = "f8" if v.values.dtype.kind == "f" else "i8"
            got = stored[name].data.sum(axis=0, dtype=acc).compute()
            want = v.values.sum(axis=0, dtype=acc)
            check(np.array_equal(got, want, equal_nan=True), "%s %s: sum over %s by Dask %s, numpy %s" %
                  (url, name, v.dims[0], got, want))
            fetched = chunks_fetched(web, url, name, since)
            check(len(fetched) == chunk_count(url, name), "%s %s: the workers fetched %d chunks of %d" %
                  (url, name, len(fetched), chunk_count(url, name)))
            got = ds[name].astype("f8").mean(v.dims[0], skipna=True).compute().values
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-fill columns: NaN, as xarray says
                want = np.nanmean(decoded[name], axis=0)
            check(np.array_equal(got, want, equal_nan=True), "%s %s: decoded mean over %s by Dask %s, numpy %s" %
                  (url, name, v.dims[0], got, want))
            print("%s %s: sum and decoded mean over %s by the cluster (%d chunks fetched) equal numpy's" %
                  (url, name, v.dims[0], len(fetched)))


def child_uids(pid):
    """The user ids of the processes whose parent is PID (nginx's workers)."""
    uids = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/status" % entry) as f:
                fields = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
        except OSError:
            continue  # ended meanwhile
        if fields.get("PPid") == str(pid):
            uids.add(int(fields["Uid"].split()[0]))
    return uids


def case_www(work):
    """The README's recipe: allow_other, nginx's worker as www-data; a dataset www-data may read is
    served, an aggregation with a partition only root reads answers 403 for every file of its store."""
    require_nginx()
    if os.geteuid() != 0:
        print("SKIPPED: the www case must run as root (nginx's master starts its worker as www-data)")
        sys.exit(SKIP)
    os.chmod(work, 0o755)  # www-data reaches the source through it
    src = os.path.join(work, "src")
    make_sources(src)
    os.chmod(os.path.join(src, "gap", "part_05_00_00.nc"), 0o600)
    with Mount(src, MOUNT_OPTIONS + ",allow_other") as m, \
            servers.Nginx(m.mnt, locations=LISTINGS, user="www-data") as web:
        url = web.url
        www = pwd.getpwnam("www-data").pw_uid
        check(child_uids(web.process.pid) == {www}, "nginx's workers run as %s" % child_uids(web.process.pid))
        compare_zarr(fsspec.get_mapper(url + "/cls.zarr"), m.path("cls.nc"), "cls served by www-data")
        chunks = sorted(k for k in os.listdir(m.path("gap", "gappy.zarr", "n")) if not k.startswith("."))
        for member in [".zmetadata", ".zgroup", "n/.zarray", "n/" + chunks[0], "n/" + chunks[-1]]:
            status, _ = http_status(url + "/gap/gappy.zarr/" + member)
            check(status == 403, "gappy.zarr/%s served to www-data: %d" % (member, status))
        check(m.alive(), "the daemon died")
    print("www-data reads the store of a readable dataset; every file of an unreadable one is 403")


def case_dask(work):
    require_nginx()
    from distributed import Client, LocalCluster
    src = os.path.join(work, "src")
    datasets = make_sources(src)
    with served(src, MOUNT_OPTIONS) as (m, web), \
            LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None, local_directory=os.path.join(work, "dask")) as cluster, \
            Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        check(len(pids) == WORKERS and os.getpid() not in pids, "worker processes %s (this one %d)" %
              (pids, os.getpid()))
        for stem, folder in datasets:
            check_reductions(web, store_url(web, folder, stem), m.path(folder, stem + ".nc"))
        check_no_failed_request(web, "dask")
        check(m.alive(), "the daemon died")


if __name__ == "__main__":
    sys.exit(run_cases({"http": case_http, "dask": case_dask, "www": case_www}, "ncafs-zarr-http-"))
