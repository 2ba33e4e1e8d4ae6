#!/usr/bin/python3
"""The read route as a maintainer follows it: the call stacks of the daemon
from op_read down to each system call that reads a partition's bytes.

usage: read_route_stacks.py NCAFS [WORK_DIR]

Writes two aggregations of four classic partitions each (make_aggregations.py):
`big` (float partitions under a float master, 512 KiB each: reads inside a
partition are spliced, reads across two are computed) and `conv` (short
partitions under a double master: every value converted, computed through
the block cache). Mounts them with NCAFS (the ASan build of CI: -O1 -g1)
under gdb, which prints a backtrace at every pread64 and splice system call,
cats each view, and prints every distinct stack that passes op_read,
outermost first, with the number of functions on it from op_read to the
one making the system call (or handing the reply to libfuse). Counted: named functions (a template once);
left out: lambdas (`operator()`, part of the function that wrote them),
the standard library's std::function and invoke plumbing, libfuse and libc
(the spliced route's last function calls fuse_reply_data, which splices).
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import make_aggregations  # noqa: E402

GDB_SCRIPT = """set pagination off
set confirm off
set print frame-arguments none
set print address off
handle SIGUSR1 SIGUSR2 SIGPIPE nostop noprint pass
catch syscall pread64 splice
commands
silent
bt
continue
end
run
"""


def write_sources(src):
    dims = ["time", "lat", "lon"]
    make_aggregations.write_aggregation(os.path.join(src, "big"), "big", dims, {"time": 8, "lat": 256, "lon": 256},
                                        {"time": [2] * 4, "lat": [256], "lon": [256]})
    conv = os.path.join(src, "conv")
    make_aggregations.write_aggregation(conv, "conv", dims, {"time": 8, "lat": 64, "lon": 64},
                                        {"time": [2] * 4, "lat": [64], "lon": [64]}, dtype="i2")
    import netCDF4
    with netCDF4.Dataset(os.path.join(conv, "conv.nca")) as ds:  # the master as double: a converted view
        attrs = {k: ds["tas"].getncattr(k) for k in ds["tas"].ncattrs()}
        sizes = {k: len(v) for k, v in ds.dimensions.items()}
    with netCDF4.Dataset(os.path.join(conv, "conv.nca"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        for k, n in sizes.items():
            ds.createDimension(k, n)
        carrier = ds.createVariable("tas", "f8", (), fill_value=False)
        for k, v in attrs.items():
            carrier.setncattr(k, v)


def backtraces(ncafs, work, view):
    """gdb's output while `cat` reads view from a fresh mount."""
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    script = os.path.join(work, "trace.gdb")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    log_path = os.path.join(work, "gdb.log")
    with open(log_path, "w") as log:  # a file, not a pipe: gdb must never wait for its reader
        daemon = subprocess.Popen(["gdb", "-batch", "-x", script, "--args", ncafs, os.path.join(work, "src"), mnt,
                                   "-f"], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            for _ in range(120):
                if os.path.ismount(mnt):
                    break
                time.sleep(0.5)
            subprocess.run(["cat", os.path.join(mnt, view)], stdout=subprocess.DEVNULL, check=True)
        finally:
            subprocess.run(["fusermount", "-u", mnt])
            daemon.wait(timeout=120)
    with open(log_path) as log:
        return log.read()


def stacks(out):
    """Distinct op_read stacks, outermost first, each frame (function, file:line)."""
    traces, cur = [], []
    for line in out.splitlines():
        m = re.match(r"#(\d+)\s+(.*)", line)
        if not m:
            continue
        if m.group(1) == "0" and cur:
            traces.append(cur)
            cur = []
        cur.append(m.group(2))
    if cur:
        traces.append(cur)
    seen = {}
    for t in traces:
        top = [i for i, f in enumerate(t) if re.match(r"op_read\b", f)]
        if not top:
            continue
        frames = []
        for f in reversed(t[:top[0] + 1]):
            fn, _, where = re.sub(r"\s*\(.*?\)\s*(at|from)", " at", f, count=1).partition(" at ")
            frames.append((re.sub(r"<.*| \(.*", "", fn.strip()), re.sub(r".*/", "", where.strip())))
        seen.setdefault(tuple(frames), 0)
        seen[tuple(frames)] += 1
    return seen


def counted(frames):
    """The functions counted, from op_read to the one making the system call."""
    names = []
    for fn, where in frames:
        if fn == "operator" or fn.startswith(("std::", "__", "_M_")) or "invoke.h" in where or "std_function" in where:
            continue
        if not where.split(":")[0].endswith((".cpp", ".hpp")):  # libfuse, libc: the system call's side
            continue
        fn = fn.rpartition("::")[2]  # gdb names a lambda's frame by its enclosing function, qualified
        if names and names[-1] == (fn, where.split(":")[0]):  # a recursion or a lambda: counted once
            continue
        names.append((fn, where.split(":")[0]))
    return names


def main():
    ncafs = os.path.abspath(sys.argv[1])
    work = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "/tmp/read_route_stacks")
    shutil.rmtree(work, ignore_errors=True)
    write_sources(os.path.join(work, "src"))
    for view in ("big/big.nc", "conv/conv.nc"):
        print("=== cat %s" % view)
        routes = {}
        for frames, n in stacks(backtraces(ncafs, work, view)).items():
            key = (tuple(counted(frames)), frames[-1][0])
            routes[key] = routes.get(key, 0) + n
        for (names, call), n in routes.items():
            print("--- %d functions, %d %s calls:" % (len(names), n, call))
            print("    " + " -> ".join("%s (%s)" % name for name in names))


if __name__ == "__main__":
    main()
