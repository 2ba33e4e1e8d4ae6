#!/usr/bin/python3
"""netCDF clients on the virtual file vs on a local copy of its bytes, cold
against cold and warm against warm, for views backed by classic (CDF) and by
deflated netCDF-4 partitions (a script, not a test).

Generates in WORK (default /tmp/ncafs-clients-bench, reused when present):
  src/   CDF backing: 48 classic partitions of 1 day x 24 steps x 180x360
         float (298 MiB), aggregated by `ncafs aggregate` (CF-1.13)
  nc4/   netCDF-4 backing: 36 deflated netCDF-4 monthly partitions of 30
         steps x 96x128 float (default chunks, zlib level 4; a 53 MB view)
The local copy of each view is `ncafs export` of it (the same bytes the
mount serves). Clients: random point reads (4,000 nc_get_var1 with netcdf-c;
1,000 with netCDF4-python), a C reader (nc_get_var1 points + nc_get_vars
strided slabs), netCDF4-python slabs, `cat`, and (with --all) cdo infon.

  warm   the daemon and the kernel's page cache warm (one untimed run first),
         against the local copy in the page cache
  cold   a fresh mount (empty daemon caches) and the page cache dropped
         (echo 3 > /proc/sys/vm/drop_caches as root; else posix_fadvise
         DONTNEED of the view, the local copy and the partitions, said so),
         against the local copy with the page cache dropped

ratio = time through the mount / time on the local copy (1: as fast as a
local file; lower is better). Each timing is repeated (REPEATS, default 3)
and local and mount alternate; best and median are printed, with the
daemon's CPU time (median; it does not depend on how loaded the machine is). The mount runs
in the variants: "after" (this binary, defaults), "cache_mem=0" (decoded
chunks not kept; netCDF-4 backing only) and, with --before OLD_NCAFS, "before" (another build, e.g.
of the previous commit), all in this one run. The machine may be shared:
trust the medians only within the same run.

usage: netcdf_clients_bench.py NCAFS_BINARY [WORK] [REPEATS] [--before OLD_NCAFS]
                               [--backing cdf|netcdf4] [--all]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

import bench_cli

NFILES, STEPS, NY, NX = 48, 24, 180, 360
MONTHS, MONTH_STEPS, NY4, NX4 = 36, 30, 96, 128
POINTS_C, POINTS_PY = 4000, 1000

C_READER = r"""
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#define CHECK(x) do { int s_ = (x); if (s_) { fprintf(stderr, "%s\n", nc_strerror(s_)); exit(1); } } while (0)
int main(int argc, char** argv) {
    int nc, v; size_t nt, ny, nx; int d[3];
    CHECK(nc_open(argv[1], NC_NOWRITE, &nc));
    CHECK(nc_inq_varid(nc, "tas", &v));
    CHECK(nc_inq_vardimid(nc, v, d));
    CHECK(nc_inq_dimlen(nc, d[0], &nt)); CHECK(nc_inq_dimlen(nc, d[1], &ny)); CHECK(nc_inq_dimlen(nc, d[2], &nx));
    double sum = 0; float x;
    for (size_t t = 0; t < nt; ++t)               /* scattered points */
        for (size_t k = 0; k < 8; ++k) {
            size_t at[3] = {t, (k * 37) % ny, (k * 101) % nx};
            CHECK(nc_get_var1_float(nc, v, at, &x)); sum += x;
        }
    float* slab = malloc(sizeof(float) * ny * nx);
    for (size_t t = 0; t < nt; t += 6) {          /* every 4th point, 4 steps a day */
        size_t start[3] = {t, 0, 0}, count[3] = {1, ny / 4, nx / 4};
        ptrdiff_t stride[3] = {1, 4, 4};
        CHECK(nc_get_vars_float(nc, v, start, count, stride, slab)); sum += slab[0];
    }
    printf("%g\n", sum);
    free(slab);
    return nc_close(nc);
}
"""


C_POINTS = r"""
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#define CHECK(x) do { int s_ = (x); if (s_) { fprintf(stderr, "%s\n", nc_strerror(s_)); exit(1); } } while (0)
int main(int argc, char** argv) {   /* argv[2] random points of tas, one nc_get_var1 each */
    int nc, v; size_t nt, ny, nx; int d[3];
    CHECK(nc_open(argv[1], NC_NOWRITE, &nc));
    CHECK(nc_inq_varid(nc, "tas", &v));
    CHECK(nc_inq_vardimid(nc, v, d));
    CHECK(nc_inq_dimlen(nc, d[0], &nt)); CHECK(nc_inq_dimlen(nc, d[1], &ny)); CHECK(nc_inq_dimlen(nc, d[2], &nx));
    unsigned s = 24; double sum = 0; float x;
    for (int i = 0, n = atoi(argv[2]); i < n; ++i) {
        s = s * 1103515245u + 12345u; size_t t = (s >> 8) % nt;
        s = s * 1103515245u + 12345u; size_t y = (s >> 8) % ny;
        s = s * 1103515245u + 12345u; size_t xx = (s >> 8) % nx;
        size_t at[3] = {t, y, xx};
        CHECK(nc_get_var1_float(nc, v, at, &x)); sum += x;
    }
    printf("%g\n", sum);
    return nc_close(nc);
}
"""


def log(msg):
    print(msg, flush=True)


def write_partitions(source, pattern, count, steps, ny, nx, netcdf4, values):
    """count files of `steps` steps of tas[time, lat, lon] (float), written
    once (kept when present); values(rng, k) gives file k's array."""
    rng = np.random.default_rng(14 if not netcdf4 else 24)
    names = []
    for k in range(count):
        path = os.path.join(source, pattern % k)
        names.append(path)
        if os.path.exists(path):
            continue
        with netCDF4.Dataset(path + ".tmp", "w", format="NETCDF4" if netcdf4 else "NETCDF3_64BIT_OFFSET") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", ny)
            ds.createDimension("lon", nx)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "hours since 2000-01-01"
            t[:] = np.arange(k * steps, (k + 1) * steps)
            ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-89.5, 89.5, ny)
            ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0.5, 359.5, nx)
            compression = {"zlib": True, "complevel": 4} if netcdf4 else {}
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), **compression)
            v.units = "K"
            v[:] = values(rng, k)
        os.rename(path + ".tmp", path)
    return names


def write_cdf_partitions(source):
    return write_partitions(source, "tas_day%02d.nc", NFILES, STEPS, NY, NX, False,
                            lambda rng, k: rng.random((STEPS, NY, NX), dtype=np.float32) * 60 + 240)


def write_netcdf4_partitions(source):
    # A smooth field plus noise: deflate has something to do, as with real data.
    base = 250 + 30 * np.cos(np.linspace(-1.5, 1.5, NY4))[:, None] + np.zeros((NY4, NX4))
    return write_partitions(source, "tas_%02d.nc", MONTHS, MONTH_STEPS, NY4, NX4, True,
                            lambda rng, k: (base[None] + rng.normal(0, 2, (MONTH_STEPS, NY4, NX4))).astype("f4"))


class Backing:
    """One set of partitions, its aggregation (NAME.nc) and the local copy."""

    def __init__(self, label, work, folder, name, write, ncafs):
        self.label, self.name = label, name
        self.source = os.path.join(work, folder)
        os.makedirs(self.source, exist_ok=True)
        self.partitions = write(self.source)
        aggregation = os.path.join(self.source, name)
        if not os.path.exists(aggregation):
            subprocess.run([ncafs, "aggregate", "-o", aggregation] + self.partitions, check=True,
                           stdout=subprocess.DEVNULL)
        self.local = os.path.join(work, "local-" + folder + ".nc")
        if not os.path.exists(self.local):
            subprocess.run([ncafs, "export", aggregation, "-o", self.local], check=True)


def compile_c(work, name, text):
    binary = os.path.join(work, name)
    if not os.path.exists(binary):
        src = binary + ".c"
        with open(src, "w") as f:
            f.write(text)
        subprocess.run(["cc", "-O2", "-o", binary, src, "-lnetcdf"], check=True)
    return binary


class Mount:
    def __init__(self, ncafs, source, options=None):
        self.ncafs, self.source, self.options = ncafs, source, options
        self.mnt = tempfile.mkdtemp(prefix="ncafs-clients-mnt-")

    def __enter__(self):
        extra = ["-o", self.options] if self.options else []
        self.process = subprocess.Popen([self.ncafs, self.source, self.mnt, "-f"] + extra, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not os.path.ismount(self.mnt):
            if self.process.poll() is not None or time.time() > deadline:
                raise SystemExit("the mount did not appear")
            time.sleep(0.05)
        return self

    def cpu(self):
        """Seconds of CPU the daemon used so far (user + system)."""
        with open("/proc/%d/stat" % self.process.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL)
        self.process.wait(timeout=30)
        os.rmdir(self.mnt)


def drop_caches(files):
    """The page cache dropped: all of it as root, else the given files' pages."""
    subprocess.run(["sync"], check=True)
    if os.geteuid() == 0:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return
    for path in files:
        with open(path, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(cmd):
    return lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def python_slabs(path):
    def read():
        with netCDF4.Dataset(path) as ds:
            v = ds["tas"]
            ny, nx = v.shape[1], v.shape[2]
            for t in range(0, v.shape[0], 24):
                v[t, ny // 4:3 * ny // 4, nx // 4:3 * nx // 4]
            v[:, ny // 2, nx // 2]
    return read


def python_points(path):
    def read():
        rng = np.random.default_rng(24)
        with netCDF4.Dataset(path) as ds:
            v = ds["tas"]
            for t, y, x in zip(rng.integers(v.shape[0], size=POINTS_PY), rng.integers(v.shape[1], size=POINTS_PY),
                               rng.integers(v.shape[2], size=POINTS_PY)):
                v[t, y, x]
    return read


def workloads(path, tools, everything):
    chosen = [("C random points", run([tools["points"], path, str(POINTS_C)])),
              ("netCDF4-python points", python_points(path)),
              ("C nc_get_var1/vars", run([tools["reader"], path])),
              ("netCDF4-python slabs", python_slabs(path)),
              ("cat", run(["cat", path]))]
    if everything:
        chosen.insert(0, ("cdo infon", run(["cdo", "-s", "infon", path])))
    return chosen


def report(backing, mode, variant, name, local, mount, extra="", cpu=None):
    lb, mb = min(local), min(mount)
    lm, mm = statistics.median(local), statistics.median(mount)
    daemon = " | daemon cpu %.2f s" % statistics.median(cpu) if cpu else ""
    log("%-8s %-4s %-11s %-22s local %6.3f s (best %6.3f) | mount %6.3f s (best %6.3f) | ratio %5.2f (best %5.2f)%s%s"
        % (backing, mode, variant, name, lm, lb, mm, mb, mm / lm, mb / lb, daemon, extra))


def throughput(name, size, local, mount):
    return "  (%.0f / %.0f MiB/s)" % (size / min(local) / 2**20, size / min(mount) / 2**20) if name == "cat" else ""


def measure_warm(backing, variant, ncafs, options, tools, repeats, everything):
    with Mount(ncafs, backing.source, options) as m:
        virtual = os.path.join(m.mnt, backing.name)
        size = os.path.getsize(backing.local)
        for (name, on_local), (_, on_mount) in zip(workloads(backing.local, tools, everything),
                                                   workloads(virtual, tools, everything)):
            on_local(), on_mount()  # warm: the daemon's caches and the page cache
            lt, mt, cpu = [], [], []
            for _ in range(repeats):
                lt.append(timed(on_local))
                before = m.cpu()
                mt.append(timed(on_mount))
                cpu.append(m.cpu() - before)
            report(backing.label, "warm", variant, name, lt, mt, throughput(name, size, lt, mt), cpu)


def measure_cold(backing, variant, ncafs, options, tools, repeats, everything):
    size = os.path.getsize(backing.local)
    files = [backing.local] + backing.partitions
    for k, (name, on_local) in enumerate(workloads(backing.local, tools, everything)):
        lt, mt, cpu = [], [], []
        for _ in range(repeats):
            drop_caches(files)
            lt.append(timed(on_local))
            with Mount(ncafs, backing.source, options) as m:  # a fresh daemon: nothing cached
                virtual = os.path.join(m.mnt, backing.name)
                on_mount = workloads(virtual, tools, everything)[k][1]
                drop_caches(files + [virtual])
                before = m.cpu()
                mt.append(timed(on_mount))
                cpu.append(m.cpu() - before)
        report(backing.label, "cold", variant, name, lt, mt, throughput(name, size, lt, mt), cpu)


def main():
    flags = bench_cli.comparison_flags(__doc__)
    if flags is None:
        return 0
    before, only = flags
    everything = bool(bench_cli.take_flag("--all", False))
    args = bench_cli.positional(__doc__, "/tmp/ncafs-clients-bench", 3)
    if args is None:
        return 2
    ncafs, work, repeats = args
    os.makedirs(work, exist_ok=True)
    tools = {"reader": compile_c(work, "c_reader", C_READER), "points": compile_c(work, "c_points", C_POINTS)}
    backings = []
    if only in (None, "cdf"):
        backings.append(Backing("CDF", work, "src", "daily.nc", write_cdf_partitions, ncafs))
    if only in (None, "netcdf4"):
        backings.append(Backing("netCDF-4", work, "nc4", "monthly.nc", write_netcdf4_partitions, ncafs))
    variants = [("after", ncafs, None), ("cache_mem=0", ncafs, "cache_mem=0")]
    if before:
        variants.append(("before", os.path.abspath(before), None))
    log("page cache dropped with %s; ratio = mount / local" %
        ("/proc/sys/vm/drop_caches" if os.geteuid() == 0 else "posix_fadvise DONTNEED (not root)"))
    for backing in backings:
        log("%s: %d partitions, view %d MiB" % (backing.label, len(backing.partitions),
                                               os.path.getsize(backing.local) >> 20))
        for variant, binary, options in variants:
            if options == "cache_mem=0" and backing.label == "CDF":
                continue  # classic partitions have no chunks to keep: the same as "after"
            first = []
            for _ in range(repeats):  # ncdump -h right after mounting: nothing cached in the daemon
                with Mount(binary, backing.source, options) as m:
                    first.append(timed(run(["ncdump", "-h", os.path.join(m.mnt, backing.name)])))
            local_header = [timed(run(["ncdump", "-h", backing.local])) for _ in range(repeats)]
            report(backing.label, "", variant, "ncdump -h (first)", local_header, first)
            measure_cold(backing, variant, binary, options, tools, repeats, everything)
            measure_warm(backing, variant, binary, options, tools, repeats, everything)
    return 0


if __name__ == "__main__":
    sys.exit(main())
