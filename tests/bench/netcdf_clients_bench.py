#!/usr/bin/python3
"""netCDF clients on the virtual file vs on a local copy of its bytes (a
script, not a test; issue 14 item 5).

Generates in WORK (default /tmp/ncafs-clients-bench, reused when present) a
daily aggregation: 48 classic partitions of 1 day x 24 steps x 180x360 float
(298 MiB), aggregated by `ncafs aggregate` (CF-1.13); the local copy is
`ncafs export` of it (the same bytes the mount serves). Mounts WORK and
times, in this one run, each client on the mount and on the local copy:
  cdo infon, a C reader (nc_get_var1 points + nc_get_vars strided slabs,
  compiled here with cc -lnetcdf), netCDF4-python slabs, `ncdump -h` right
  after mounting (first access), and `cat` throughput.
Each timing is repeated (REPEATS, default 3); best and median are printed,
with ratio = local time / mount time (1: as fast as a local file). The
local copy is read from the page cache; on the mount the partitions and the
daemon's caches are warm, and each client runs twice: with the virtual
file's kernel page cache kept ("mount") and dropped before each run
("mount, cold kernel cache", posix_fadvise DONTNEED: every read reaches the
daemon). The machine may be shared: trust the medians only within the same run.

usage: netcdf_clients_bench.py NCAFS_BINARY [WORK] [REPEATS]
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


def log(msg):
    print(msg, flush=True)


def generate(work, ncafs):
    source = os.path.join(work, "src")
    os.makedirs(source, exist_ok=True)
    rng = np.random.default_rng(14)
    names = []
    for day in range(NFILES):
        path = os.path.join(source, "tas_day%02d.nc" % day)
        names.append(path)
        if os.path.exists(path):
            continue
        with netCDF4.Dataset(path + ".tmp", "w", format="NETCDF3_64BIT_OFFSET") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", NY)
            ds.createDimension("lon", NX)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "hours since 2000-01-01"
            t[:] = np.arange(day * STEPS, (day + 1) * STEPS)
            ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-89.5, 89.5, NY)
            ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0.5, 359.5, NX)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"))
            v.units = "K"
            v[:] = (rng.random((STEPS, NY, NX), dtype=np.float32) * 60 + 240)
        os.rename(path + ".tmp", path)
    aggregation = os.path.join(source, "daily.nc")
    if not os.path.exists(aggregation):
        subprocess.run([ncafs, "aggregate", "-o", aggregation] + names, check=True, stdout=subprocess.DEVNULL)
    local = os.path.join(work, "local.nc")
    if not os.path.exists(local):
        subprocess.run([ncafs, "export", aggregation, "-o", local], check=True)
    reader = os.path.join(work, "c_reader")
    if not os.path.exists(reader):
        src = os.path.join(work, "c_reader.c")
        with open(src, "w") as f:
            f.write(C_READER)
        subprocess.run(["cc", "-O2", "-o", reader, src, "-lnetcdf"], check=True)
    return source, local, reader


class Mount:
    def __init__(self, ncafs, source):
        self.ncafs, self.source = ncafs, source
        self.mnt = tempfile.mkdtemp(prefix="ncafs-clients-mnt-")

    def __enter__(self):
        self.process = subprocess.Popen([self.ncafs, self.source, self.mnt, "-f"], stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not os.path.ismount(self.mnt):
            if self.process.poll() is not None or time.time() > deadline:
                raise SystemExit("the mount did not appear")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL)
        self.process.wait(timeout=30)
        os.rmdir(self.mnt)


def drop_cache(path):
    """The virtual file's pages out of the kernel cache: the next reads reach the daemon."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


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
            for t in range(0, v.shape[0], 24):
                v[t, 40:120, 100:300]
            v[:, 90, 180]
    return read


def workloads(path, reader):
    return [("cdo infon", run(["cdo", "-s", "infon", path])),
            ("C nc_get_var1/vars", run([reader, path])),
            ("netCDF4-python slabs", python_slabs(path)),
            ("cat", run(["cat", path]))]


def report(name, local, mount, extra=""):
    lb, mb = min(local), min(mount)
    lm, mm = statistics.median(local), statistics.median(mount)
    log("%-30s local best %7.3f s median %7.3f | mount best %7.3f s median %7.3f | ratio best %.2f median %.2f%s"
        % (name, lb, lm, mb, mm, lb / mb, lm / mm, extra))


def main():
    args = bench_cli.positional(__doc__, "/tmp/ncafs-clients-bench", 3)
    if args is None:
        return 2
    ncafs, work, repeats = args
    source, local, reader = generate(work, ncafs)
    size = os.path.getsize(local)
    first_header = []
    for _ in range(repeats):  # ncdump -h right after mounting: nothing cached in the daemon
        with Mount(ncafs, source) as m:
            first_header.append(timed(run(["ncdump", "-h", os.path.join(m.mnt, "daily.nc")])))
    local_header = [timed(run(["ncdump", "-h", local])) for _ in range(repeats)]
    with Mount(ncafs, source) as m:
        virtual = os.path.join(m.mnt, "daily.nc")
        log("st_blksize: mount %d, local %d; %d MiB" % (os.stat(virtual).st_blksize, os.stat(local).st_blksize,
                                                          size >> 20))
        subprocess.run(["cat", virtual], stdout=subprocess.DEVNULL, check=True)  # warm the daemon and caches
        subprocess.run(["cat", local], stdout=subprocess.DEVNULL, check=True)
        report("ncdump -h (first)", local_header, first_header)
        for (name, on_local), (_, on_mount) in zip(workloads(local, reader), workloads(virtual, reader)):
            lt, mt, ct = [], [], []
            for _ in range(repeats):
                lt.append(timed(on_local))
                mt.append(timed(on_mount))
                drop_cache(virtual)
                ct.append(timed(on_mount))
            for label, times in ((name, mt), (name + ", cold", ct)):
                extra = "  (%.0f / %.0f MiB/s)" % (size / min(lt) / 2**20, size / min(times) / 2**20) if name == "cat" else ""
                report(label, lt, times, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
