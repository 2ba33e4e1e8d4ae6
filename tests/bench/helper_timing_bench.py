#!/usr/bin/python3
"""Where the netCDF-4 helpers' time goes in a fresh cold `cat` of an
aggregation of deflated netCDF-4 partitions (a script, not a test).

The data are whole_variable_bench.py's (WORK/cmip: 24 partitions and the
CF-1.13 aggregation tas.nc, generated when absent). Each run mounts SOURCE
afresh with NCAFS_HELPER_TIMING=1 (codecs/netcdf/helper_timing.hpp), drops
the page cache (root), times `cat` of the view and reads the daemon's
helper timing lines: for each phase of a helper (zygote: the request
received; forked; confined; surveyed: HDF5's survey; nc_opened: netcdf-c's
open; worked: described or read; answered: the answer read by the daemon),
the median milliseconds since the phase before, over the run's helpers;
the helpers asked about the aggregation file itself before the first
partition's (their kinds and the milliseconds from the first ask to the
first partition's); and the sum of every helper's time from ask to answer.

usage: helper_timing_bench.py NCAFS_BINARY [WORK] [REPEATS]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from netcdf_clients_bench import drop_caches
from whole_variable_bench import prepared

LINE = re.compile(r"helper timing \(ms since asked at ([\d.]+) s\) (.*) \(([a-z ]+)\):(.*) answered ([\d.]+)$")


def cold_cat(ncafs, source):
    """Seconds of a fresh cold `cat` of the view, and the daemon's timing lines."""
    mnt = tempfile.mkdtemp(prefix="ncafs-timing-mnt-")
    with tempfile.TemporaryFile("w+") as log:
        daemon = subprocess.Popen([ncafs, source, mnt, "-f"], stderr=log, env=dict(os.environ, NCAFS_HELPER_TIMING="1"))
        deadline = time.time() + 30
        while not os.path.ismount(mnt):
            if daemon.poll() is not None or time.time() > deadline:
                raise SystemExit("the mount did not appear")
            time.sleep(0.05)
        try:
            drop_caches([])
            start = time.perf_counter()
            subprocess.run(["cat", os.path.join(mnt, "tas.nc")], check=True, stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - start
        finally:
            subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
            daemon.wait(timeout=30)
            os.rmdir(mnt)
        log.seek(0)
        return seconds, [m.groups() for m in map(LINE.search, log.read().splitlines()) if m]


def summary(seconds, lines):
    phases = {}
    for _, _, _, marks, answered in lines:
        before = 0.0
        for name, at in re.findall(r" (\w+) (-?[\d.]+)", marks) + [("answered", answered)]:
            phases.setdefault(name, []).append(float(at) - before)
            before = float(at)
    asks = sorted((float(at), path, kind) for at, path, kind, _, _ in lines)
    first_partition = next((at for at, path, _ in asks if not path.endswith("/tas.nc")), asks[-1][0] if asks else 0)
    own = [kind for at, path, kind in asks if path.endswith("/tas.nc") and at < first_partition]
    return ("cat %.3f s; %d helpers; median ms per phase: %s; the aggregation file's own %d asks (%s) took %.0f ms "
            "before the first partition's; sum of every helper's ask-to-answer %.0f ms"
            % (seconds, len(lines), ", ".join("%s %.2f" % (k, statistics.median(v)) for k, v in phases.items()),
               len(own), ", ".join(sorted(set(own))), (first_partition - asks[0][0]) * 1000 if asks else 0,
               sum(float(line[4]) for line in lines)))


def main():
    setup = prepared(__doc__)
    if isinstance(setup, int):
        return setup
    ncafs, repeats, source, _ = setup
    for _ in range(repeats):
        print(summary(*cold_cat(ncafs, source)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
