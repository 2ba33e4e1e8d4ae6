#!/usr/bin/python3
"""One cache_dir shared by two mounts, `ncafs export` and `ncafs check` at
once, filled concurrently from nginx, many times over.

Run as: test_shared_cache.py CASE  (fills | small). Environment: NCAFS_BIN;
NCAFS_SHARED_CACHE_ROUNDS (rounds, default 12).

Each round starts from an empty cache_dir: two daemons (two mounts of one
SOURCE), one `ncafs export` and two `ncafs check` run together, all reading
the same objects on nginx: classic partitions (read by range: blocks in the
cache) and chunked netCDF-4 partitions of one size (whole local copies in
the cache; their decoded chunks kept by identity). Two readers per mount
(netCDF4-python, in processes of their own that serve every round) read
both aggregations; their values, and the exported file's, must equal the
generator's master arrays, element for element, and each check must say "ok". Then each daemon must
exit within 10 s of `fusermount3 -u`.
  fills: cache_size=64M: every read succeeds, nothing differs.
  small: cache_size=1M (local copies of 518 KB, so each fill evicts the
         other processes' files), and this test holds the cache's eviction
         lock (an flock on DIR/lock, as a stopped `ncafs export` would) for
         the whole round: no read may fail or wait on it, no daemon's exit
         either, and no value may differ.
Without nginx: SKIPPED (exit 77).
"""
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import make_aggregations  # noqa: E402
import servers  # noqa: E402
from test_mount import NCAFS, SKIP, check, fail, run_cases  # noqa: E402

EXIT_LIMIT = 10  # seconds from fusermount3 -u to the daemon's exit
READ_LIMIT = 120  # seconds a reader may take (a few, unless it waits on something)
PARTS = 8

# A reader process, started once for all the rounds (each start costs a
# Python with numpy and netCDF4 imported, about a second of CPU under load):
# for each request line (JSON: the file and [variable, .npy] pairs) it reads
# every variable of that file with a fresh netCDF4.Dataset and answers one
# line: per variable, the number of elements that differ from the .npy, or
# the error.
READER = r"""
import json, sys
import netCDF4, numpy as np
for line in sys.stdin:
    request, out = json.loads(line), {}
    for var, expected in request["variables"]:
        try:
            with netCDF4.Dataset(request["path"]) as ds:
                v = ds.variables[var]
                v.set_auto_maskandscale(False)
                got = np.asarray(v[...])
            want = np.load(expected)
            wrong = int(np.sum(got != want)) if got.shape == want.shape else -1
            first = [int(i) for i in np.argwhere(got != want)[0]] if wrong > 0 else None
            out[var] = {"wrong": wrong, "first": first}
        except Exception as e:
            out[var] = {"error": str(e)}
    print(json.dumps(out), flush=True)
"""


class Reader:
    """One READER process: read() asks it for a file, answer() waits for its reply."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", READER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def read(self, path, var, expected):
        self.process.stdin.write(json.dumps({"path": path, "variables": [[var, expected]]}) + "\n")
        self.process.stdin.flush()

    def answer(self, timeout):
        """The reply as a dict, or None when none came within timeout seconds."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            return None
        return json.loads(line)

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def aggregation(gen, name, fmt, chunked, url):
    """An NCA aggregation of PARTS partitions (2 x 180 x 360 float each,
    518 KB: three fetch blocks) under gen/name, its NCA naming them by URL."""
    folder = os.path.join(gen, name)
    info = make_aggregations.write_aggregation(
        folder, name, ["time", "lat", "lon"], {"time": 2 * PARTS, "lat": 180, "lon": 360},
        {"time": [2] * PARTS, "lat": [180], "lon": [360]}, partition_format=fmt, chunked=chunked)
    nca = os.path.join(folder, name + ".nca")
    with netCDF4.Dataset(nca, "a") as ds:
        carrier = ds.variables["tas"]
        spec = json.loads(carrier.nca_array)
        for p in spec["Partitions"]:
            p["subarray"]["file"] = "%s/%s/%s" % (url, name, p["subarray"]["file"])
        carrier.nca_array = json.dumps(spec)
    return nca, info["master"]


def start_mount(source, options, log):
    mnt = tempfile.mkdtemp(prefix="ncafs-mnt-")
    process = subprocess.Popen([NCAFS, source, mnt, "-f", "-o", options], stdout=log, stderr=log)
    deadline = time.time() + 30
    while not os.path.ismount(mnt):
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            fail("ncafs did not mount (exit %s)" % process.poll())
        time.sleep(0.02)
    return mnt, process


def thread_states(pid):
    """Each thread of pid: its name, state and where the kernel has it waiting."""
    lines = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
        def field(name):
            try:
                with open("/proc/%d/task/%s/%s" % (pid, tid, name)) as f:
                    return f.read().strip()
            except OSError as e:
                return "(%s)" % e.strerror
        stat = field("stat")
        state = stat[stat.rfind(")") + 2:].split()[0] if ")" in stat else "?"
        lines.append("  %s %-16s %s %s" % (tid, field("comm"), state, field("wchan")))
    return "\n".join(lines)


def stop_mount(mnt, process, what, log):
    """fusermount3 -u, then the daemon must exit within EXIT_LIMIT seconds;
    when it does not, its threads and log are shown."""
    r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, text=True)
    try:
        code = process.wait(timeout=EXIT_LIMIT)
    except subprocess.TimeoutExpired:
        threads = thread_states(process.pid)
        process.kill()
        process.wait()
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])
        log.seek(0)
        fail("%s: the daemon did not exit within %d s of fusermount3 -u (%s); its threads:\n%s\nits log:\n%s"
             % (what, EXIT_LIMIT, r.stderr, threads, log.read()[-4000:]))
    os.rmdir(mnt)
    check(code == 0, "%s: ncafs exited with %d" % (what, code))


def held_lock(cache):
    """cache_dir created as the daemons would (0700, DIR/lock 0600), its
    lock held exclusively by this process: the open file to close."""
    os.mkdir(cache, 0o700)
    fd = os.open(os.path.join(cache, "lock"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return os.fdopen(fd)


def expect_right(round_no, mounts, source, opts, expected, exported, readers):
    """Readers of both mounts, two checks and an export at once: every value right."""
    export = subprocess.Popen([NCAFS, "export", os.path.join(source, "nc4.nca"), "-o", exported, "-o", opts],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checks = [subprocess.Popen([NCAFS, "check", "-o", opts, os.path.join(source, name + ".nca")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("classic", "nc4")]
    reads = []
    for mnt, _ in mounts + mounts:  # two readers per mount
        for name in ("classic", "nc4"):
            reader = readers[len(reads)]
            reader.read(os.path.join(mnt, name + ".nc"), "tas", expected[name])
            reads.append((name, reader))
    try:
        for name, r in reads:
            answer = r.answer(READ_LIMIT)
            if answer is None:
                r.close()
                fail("round %d, %s: the read did not end within %d s, or its reader died: %s" %
                     (round_no, name, READ_LIMIT, r.process.stderr.read()[-2000:]))
            got = answer["tas"]
            check("error" not in got, "round %d, %s: the read failed: %s" % (round_no, name, got.get("error")))
            check(got["wrong"] == 0, "round %d, %s: %d elements differ from the objects (first at %s)" %
                  (round_no, name, got["wrong"], got["first"]))
        for c in checks:
            out, err = c.communicate(timeout=READ_LIMIT)
            check(c.returncode == 0 and out.strip() == "ok", "round %d: ncafs check: %s %s" % (round_no, out, err))
        out, err = export.communicate(timeout=READ_LIMIT)
        check(export.returncode == 0, "round %d: ncafs export failed: %s" % (round_no, err))
    except BaseException:
        for r in readers:  # none may still be reading the mounts when they are stopped
            r.close()
        raise
    finally:
        for p in checks + [export]:
            if p.poll() is None:
                p.kill()
                p.wait()
    with netCDF4.Dataset(exported) as ds:
        v = ds.variables["tas"]
        v.set_auto_maskandscale(False)
        wrong = int(np.sum(np.asarray(v[...]) != np.load(expected["nc4"])))
    check(wrong == 0, "round %d: ncafs export wrote %d wrong elements" % (round_no, wrong))


def one_round(work, source, options, expected, hold_lock, round_no, readers):
    """Two mounts, two checks and an export on one empty cache_dir; the
    mounts are stopped (and must exit in time) whatever happened."""
    cache = os.path.join(work, "cache%d" % round_no)
    lock = held_lock(cache) if hold_lock else None
    opts = "cache_dir=%s,%s" % (cache, options)
    logs = [open(os.path.join(work, "log%d_%d.txt" % (round_no, k)), "w+") for k in range(2)]
    mounts = []
    try:
        for log in logs:
            mounts.append(start_mount(source, opts, log))
        expect_right(round_no, mounts, source, opts, expected, os.path.join(work, "exported%d.nc" % round_no), readers)
    finally:
        stopped = []
        for k, (mnt, process) in enumerate(mounts):
            try:
                stop_mount(mnt, process, "round %d, mount %d" % (round_no, k + 1), logs[k])
            except BaseException as e:  # the other mount is stopped all the same
                stopped.append(e)
        if lock:
            lock.close()
        if stopped:
            raise stopped[0]
    for log in logs:
        log.seek(0)
        text = log.read()
        if os.environ.get("NCAFS_SHARED_CACHE_LOGS"):
            print(text)
        check("AddressSanitizer" not in text and "runtime error" not in text, "sanitizer report:\n" + text)
        log.close()
    shutil.rmtree(cache, ignore_errors=True)


def run_rounds(work, cache_size, hold_lock):
    why = servers.skip_reason_nginx()
    if why:
        print("SKIPPED: " + why)
        sys.exit(SKIP)
    gen, source = os.path.join(work, "www"), os.path.join(work, "src")
    os.makedirs(source)
    with servers.Nginx(gen) as web:
        expected = {}
        for name, fmt, chunked in (("classic", "NETCDF3_CLASSIC", False), ("nc4", "NETCDF4", True)):
            nca, master = aggregation(gen, name, fmt, chunked, web.url)
            shutil.copy(nca, os.path.join(source, name + ".nca"))
            expected[name] = os.path.join(work, name + ".npy")
            np.save(expected[name], master)
        options = "cache_size=%s,allow_root=%s/" % (cache_size, web.url)
        rounds = int(os.environ.get("NCAFS_SHARED_CACHE_ROUNDS", "12"))
        readers = [Reader() for _ in range(8)]  # 2 mounts x 2 readers x 2 aggregations, at once
        try:
            for k in range(rounds):
                one_round(work, source, options, expected, hold_lock, k, readers)
        finally:
            for r in readers:
                r.close()
        print("%d rounds: every read whole and right, every daemon out in time" % rounds)


def case_fills(work):
    run_rounds(work, "64M", hold_lock=False)


def case_small(work):
    run_rounds(work, "1M", hold_lock=True)


CASES = {"fills": case_fills, "small": case_small}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-shared-cache-"))
