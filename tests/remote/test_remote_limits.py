#!/usr/bin/python3
"""Remote partitions bounded in time and failing at the right granularity,
through real ncafs mounts: slow servers never take the mount, a stat sends
no request, a failing object fails only the bytes that need it (and is not
asked again for a while), a replaced object is read whole in its new
version, and the log stays short.

Run as: test_remote_limits.py CASE  (CASES below). Environment: NCAFS_BIN,
NCAFS_NPM_DIR (where s3rver is installed).

Expected values come from netCDF4-python and ncdump of the partition files
themselves; request counts from the servers' own logs.
"""
import errno
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import make_aggregations  # noqa: E402
import servers  # noqa: E402
from test_mount import NCAFS, Mount, check, read_netcdf4, run_cases  # noqa: E402
from test_remote_mount import (BUCKET, KEY_ID, SECRET, Layout, need_servers, read_all, roots, s3_options,  # noqa: E402
                               use_s3_credentials)


class TrickleServer(servers._Proxy):
    """Serves the files of `root` by byte range at about `rate` bytes a
    second per request (just above libcurl's 1 KiB/s low-speed abort);
    stop() ends every answer under way at once (connections closed)."""

    def __init__(self, root, rate=1500):
        super().__init__("http://127.0.0.1:9")  # nothing upstream: handle() answers
        self.root, self.rate = root, rate
        self.stopping = threading.Event()

    def handle(self, handler):
        with open(os.path.join(self.root, os.path.basename(handler.path)), "rb") as f:
            data = f.read()
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", handler.headers.get("Range", ""))
        first, last = (int(m.group(1)), min(int(m.group(2)), len(data) - 1)) if m else (0, len(data) - 1)
        handler.send_response(206)
        handler.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(data)))
        handler.send_header("Content-Length", str(last - first + 1))
        handler.send_header("ETag", '"trickle"')
        handler.end_headers()
        step = max(1, self.rate // 10)
        try:
            for at in range(first, last + 1, step):
                if self.stopping.wait(0.1):
                    break
                handler.wfile.write(data[at:min(at + step, last + 1)])
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline)
        handler.close_connection = True

    def stop(self):
        self.stopping.set()
        super().__exit__(None, None, None)

    def __exit__(self, *exc):
        if not self.stopping.is_set():
            self.stop()
        return False


def timed(what, action, bound):
    """Runs action(); fails when it takes longer than bound seconds."""
    start = time.monotonic()
    result = action()
    took = time.monotonic() - start
    check(took < bound, "%s took %.1f s (bound %.1f s)" % (what, took, bound))
    return result


def nginx_requests(web):
    with open(os.path.join(web.work, "access.log")) as f:
        return [line for line in f if line.strip()]


def case_trickle(work):
    """64 reads waiting on a server that trickles 1.5 KB/s: `ls`, `cat` of a
    local file and the cached bytes of a view on nginx answer at once; when the server stops, every
    read ends (EIO) in bounded time and the mount unmounts; `ncafs check`
    ends within remote_timeout and says how long it took."""
    need_servers(s3=False)
    layout = Layout(work, lat=180, lon=360)  # partitions of 518 KB: minutes each at 1.5 KB/s
    with open(os.path.join(layout.source, "notes.txt"), "w") as f:
        f.write("local bytes\n")
    results = []
    with TrickleServer(layout.gen) as slow, servers.Nginx(layout.gen) as web:
        name = layout.write_nca("slow", slow.url, {i: "%s/%s" % (slow.url, layout.parts[i]) for i in range(4, 12)})
        fast = layout.write_nca("fast", web.url, {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(4, 12)})
        with Mount(layout.source, "remote_timeout=60," + roots(slow, web)) as m:
            cached_fd = os.open(m.path(fast), os.O_RDONLY)
            size = os.fstat(cached_fd).st_size
            warm = os.pread(cached_fd, size, 0)  # every object fetched once: in the memory cache now
            def reader():
                results.append(read_all(m.path(name)))
            readers = [threading.Thread(target=reader) for _ in range(64)]
            for t in readers:
                t.start()
            deadline = time.monotonic() + 30
            while len(slow.requests) < 8 and time.monotonic() < deadline:  # the reads are waiting on the server
                time.sleep(0.1)
            check(len(slow.requests) >= 8, "the reads reached the trickling server (%d requests)" % len(slow.requests))
            for _ in range(3):
                listed = timed("ls of the mount", lambda: subprocess.run(["ls", "-l", m.mnt], capture_output=True,
                                                                        text=True, timeout=30), 3.0)
                check("notes.txt" in listed.stdout and name in listed.stdout, "ls lists the files:\n" + listed.stdout)
                text = timed("cat of a local file", lambda: subprocess.run(["cat", m.path("notes.txt")],
                                                                           capture_output=True, text=True,
                                                                           timeout=30), 3.0)
                check(text.stdout == "local bytes\n", "cat of the local file: %r" % text.stdout)
                again = timed("a cached view read", lambda: os.pread(cached_fd, size, 0), 3.0)
                check(again == warm and len(warm) == size, "the cached view reads the same bytes")
                time.sleep(0.5)
            os.close(cached_fd)
            check(all(t.is_alive() for t in readers), "the remote reads are still waiting")
            slow.stop()
            stopped = time.monotonic()
            for t in readers:
                t.join(timeout=max(0.1, stopped + 60 - time.monotonic()))
            check(not any(t.is_alive() for t in readers), "every read ended after the server stopped")
            check(len(results) == 64 and all(r == errno.EIO for r in results),
                  "the reads of the stopped server fail with EIO: %s" % sorted(set(map(str, results))))
    with TrickleServer(layout.gen) as slow:  # 8 slow objects probed side by side: about remote_timeout in all
        layout.write_nca("slow", slow.url, {i: "%s/%s" % (slow.url, layout.parts[i]) for i in range(4, 12)})
        done = timed("ncafs check of a trickling server", lambda: subprocess.run(
            [NCAFS, "check", "-o", "remote_timeout=1," + roots(slow), os.path.join(layout.source, "slow.nca")],
            capture_output=True, text=True, timeout=120), 8)
        check(done.returncode == 1 and done.stdout.count("unreachable") == 8,
              "check reports the 8 slow objects:\n" + done.stdout)
        check(re.search(r"checked in [0-9.]+ s", done.stderr), "check says how long it took:\n" + done.stderr)


def cf_layout_on(work, web_url_of):
    """A CF-1.13 aggregation (`ncafs aggregate`) of the monthly partitions
    whose fragment URIs (tas and the aggregated time) all name a server."""
    layout = Layout(work)
    staged = os.path.join(work, "staged")
    os.makedirs(staged)
    inputs = []
    for name in layout.parts:
        shutil.copy(os.path.join(layout.gen, name), os.path.join(staged, name))
        inputs.append(os.path.join(staged, name))
    agg = os.path.join(layout.source, "cf.nc")
    subprocess.run([NCAFS, "aggregate", "--absolute", "--dim", "time", "-o", agg] + inputs, check=True)
    with netCDF4.Dataset(agg, "a") as ds:
        for var in ("fragment_uris_tas", "fragment_uris_time"):
            uris = ds.variables[var]
            flat = np.array(uris[...], dtype=object).reshape(-1)
            for k, uri in enumerate(flat):
                flat[k] = web_url_of(os.path.basename(uri))
            uris[...] = flat.reshape(uris.shape)
    shutil.rmtree(staged)
    for name in layout.parts[:4]:
        os.unlink(os.path.join(layout.source, name))
    return layout


def case_stat(work):
    """stat and ls -l of every view of an aggregation whose partitions (and
    aggregated time coordinate) lie on nginx send no request."""
    need_servers(s3=False)
    with servers.Nginx(os.path.join(work, "gen")) as web:
        layout = cf_layout_on(work, lambda name: "%s/%s" % (web.url, name))
        with Mount(layout.source, roots(web)) as m:
            names = sorted(os.listdir(m.mnt))
            for view in ("cf.nc", "cf.ds", "cf.ncs", "cf.vds"):
                check(view in names, "%s is listed: %s" % (view, names))
                check(os.stat(m.path(view)).st_size > 0, view + " has a size")
            subprocess.run(["ls", "-l", m.mnt], check=True, capture_output=True, timeout=30)
            check(nginx_requests(web) == [], "a stat sends no request:\n" + "".join(nginx_requests(web)))
            # The views still read right (the .vds view with index coordinates for time).
            check(np.array_equal(read_netcdf4(m.path("cf.nc"), "tas"), layout.info["master"]), "cf.nc values")
            check(len(read_all(m.path("cf.vds"))) == os.stat(m.path("cf.vds")).st_size, "cf.vds reads whole")


def count_for(proxy, part):
    return sum(1 for _, path, _ in proxy.requests if path.endswith("/" + part))


def partition_tas(layout, i):
    with netCDF4.Dataset(os.path.join(layout.gen, layout.parts[i])) as part:
        return np.asarray(part.variables["tas"][...])


def tas_bytes(view, layout, i):
    """The bytes of partition i's two records of tas in the classic view,
    read by exact preads: the records (time and tas, in the header's order)
    fill the end of the file."""
    with netCDF4.Dataset(view) as ds:
        order = [n for n, v in ds.variables.items() if v.dimensions[:1] == ("time",)]
        shape = ds.variables["tas"].shape
    slab = shape[1] * shape[2] * 4
    record = slab + 8
    begin = os.stat(view).st_size - shape[0] * record + (8 if order.index("time") < order.index("tas") else 0)
    fd = os.open(view, os.O_RDONLY)
    try:
        return b"".join(os.pread(fd, slab, begin + r * record) for r in (2 * i, 2 * i + 1))
    finally:
        os.close(fd)


def case_failing(work):
    """One partition behind a proxy that fails every request (503, then a
    dropped connection): the header reads with no request to it, a good
    partition's bytes read right, its own bytes fail at once after the first
    failure (remembered), and the log keeps a few lines for it. A missing
    local partition: `ncdump -v time` (time in the aggregation file) works."""
    need_servers(s3=False)
    layout = Layout(work, lat=180, lon=360)  # partitions of 518 KB
    bad = 5  # months 5: records 10 and 11
    with servers.Nginx(os.path.join(work, "gen")) as web:
        for fault in (503, "drop"):
            with servers.FaultProxy(web.url, [fault] * 100000) as proxy:
                urls = {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(4, 12)}
                urls[bad] = "%s/%s" % (proxy.url, layout.parts[bad])
                name = layout.write_nca("failing", web.url, urls)
                with Mount(layout.source, roots(web, proxy)) as m:
                    fd = os.open(m.path(name), os.O_RDONLY)
                    try:
                        header = timed("header read", lambda: os.pread(fd, 4, 0), 2.0)
                    finally:
                        os.close(fd)
                    check(header[:3] == b"CDF", "the header reads: %r" % header)
                    check(count_for(proxy, layout.parts[bad]) == 0, "%s: a header read sends no request to the "
                          "failing partition (%d sent)" % (fault, count_for(proxy, layout.parts[bad])))
                    # Far from the failing partition, netcdf-c's reads (8 KiB windows, a record
                    # at a time) need none of its bytes; beside it they do: read exactly.
                    with netCDF4.Dataset(m.path(name)) as ds:
                        for good in (1, 11):
                            got = np.asarray(ds.variables["tas"][2 * good:2 * good + 2])
                            check(np.array_equal(got, partition_tas(layout, good)),
                                  "%s: partition %d reads right (netCDF4-python)" % (fault, good))
                    for good in (4, 6):
                        want = partition_tas(layout, good).astype(">f4").tobytes()
                        check(tas_bytes(m.path(name), layout, good) == want,
                              "%s: partition %d beside the failing one reads right (exact ranges)" % (fault, good))
                    failures = 0
                    first_sent = None
                    for k in range(20):
                        with netCDF4.Dataset(m.path(name)) as ds:
                            try:
                                ds.variables["tas"][2 * bad + k % 2]
                            except (RuntimeError, OSError):
                                failures += 1
                        if k == 0:
                            first_sent = count_for(proxy, layout.parts[bad])
                    check(failures == 20, "%s: the failing partition's bytes fail (%d of 20)" % (fault, failures))
                    sent = count_for(proxy, layout.parts[bad])
                    check(sent == first_sent, "%s: after the first failure no request within 10 s (%d, then %d)"
                          % (fault, first_sent, sent))
                    lines = [l for l in m.log_text().splitlines() if layout.parts[bad] in l]
                    check(0 < len(lines) <= 3,
                          "%s: a few log lines for the failing URL:\n%s" % (fault, "\n".join(lines)))
    # A missing local partition, time a non-aggregated variable of the aggregation file
    # (a fixed dimension: its values lie before the partitions' bytes).
    fixed = os.path.join(work, "fixed")
    make_aggregations.write_aggregation(fixed, "fixed", ["time", "lat", "lon"], {"time": 24, "lat": 180, "lon": 360},
                                        {"time": [2] * 12, "lat": [180], "lon": [360]}, coordinate="time")
    os.unlink(os.path.join(fixed, "part_01_00_00.nc"))
    with Mount(fixed) as m:
        done = subprocess.run(["ncdump", "-v", "time", m.path("fixed.nc")], capture_output=True, text=True, timeout=60)
        want = subprocess.run(["ncdump", "-v", "time", os.path.join(fixed, "fixed.nca")], capture_output=True,
                              text=True, timeout=60)
        check(done.returncode == 0, "ncdump -v time with a missing local partition works:\n" + done.stderr)
        data = lambda text: text[text.index("data:"):]  # noqa: E731
        check(data(done.stdout) == data(want.stdout),
              "the time values equal the aggregation file's:\n" + done.stdout[-500:])
        got = read_all(m.path("fixed.nc"))
        check(got == errno.EIO, "the whole file does not read (a partition is missing)")


def replace_object(path, seed):
    """Rewrites the partition at path with new tas values (same shape), its
    mtime later than before (nginx's ETag is mtime and size): the values."""
    before = os.stat(path).st_mtime
    with netCDF4.Dataset(path, "a") as ds:
        tas = ds.variables["tas"]
        values = np.random.default_rng(seed).random(tas.shape).astype(tas.dtype)
        tas[...] = values
    os.utime(path, (before + 10, before + 10))
    return values


def check_new_version(path_in_mount, record, want, what):
    """Within 5 s a fresh open reads the new values of the record, whole."""
    deadline = time.monotonic() + 5.0
    while True:
        try:
            with netCDF4.Dataset(path_in_mount) as ds:
                got = np.asarray(ds.variables["tas"][record:record + 2])
            if np.array_equal(got, want):
                return
        except (RuntimeError, OSError):
            pass
        check(time.monotonic() < deadline, what + ": the new version is not read within 5 s")
        time.sleep(0.2)


def case_versions(work):
    """A partition replaced on nginx and in s3rver (objects larger than the
    first fetch) is planned again: within 5 s fresh opens read the new
    version, whole."""
    need_servers()
    layout = Layout(work, lat=180, lon=360)
    use_s3_credentials(work, SECRET)
    www = os.path.join(work, "www")
    for name in layout.parts[4:8]:
        shutil.copy(os.path.join(layout.gen, name), os.path.join(www, name))
    with servers.Nginx(www) as web, servers.S3rver(os.path.join(work, "s3")) as store, \
            servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed:
        layout.put_s3(store)
        name = layout.write_nca("versions", web.url)
        with Mount(layout.source, s3_options(signed, roots(web))) as m:
            with netCDF4.Dataset(m.path(name)) as ds:
                check(np.array_equal(np.asarray(ds.variables["tas"][...]), layout.info["master"]), "first version")
            new_http = replace_object(os.path.join(www, layout.parts[5]), 5)
            check_new_version(m.path(name), 10, new_http, "HTTP")
            local = os.path.join(work, "s3_copy.nc")
            shutil.copy(os.path.join(layout.gen, layout.parts[9]), local)
            new_s3 = replace_object(local, 9)
            with open(local, "rb") as f:
                store.put(BUCKET, "monthly/" + layout.parts[9], f.read())
            check_new_version(m.path(name), 18, new_s3, "S3")
            with netCDF4.Dataset(m.path(name)) as ds:  # the rest is unchanged
                check(np.array_equal(np.asarray(ds.variables["tas"][0:10]), layout.info["master"][0:10]),
                      "the unchanged partitions read as before")


CASES = {"trickle": case_trickle, "stat": case_stat, "failing": case_failing, "versions": case_versions}


if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-remote-limits-"))
