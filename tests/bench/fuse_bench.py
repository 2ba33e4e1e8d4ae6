#!/usr/bin/python3
"""Benchmark of the ncafs mount (a script, not a test). Generates, in WORK
(default /tmp/ncafs-bench, reused when present):
  big/    >= 100 classic partitions, >= 1 GiB in total, and big.nca
  big-ncrcat.nc   the same data materialised by NCO ncrcat
  many/   a 10,000-partition aggregation of tiny partitions
mounts WORK with the given ncafs (Release build), warms the page cache and
prints, measured in this one run:
  (a) cat of the virtual file vs cat of the partition files (splice and
      nosplice mounts), kernel cache of the virtual file dropped before each run
  (b) ncks point time series and 2-D slab: virtual file vs ncrcat file
  (c) ncdump -h of the 10,000-partition aggregation (first access and
      repeated) vs ncdump -h of a small single-file dataset
  (d) the daemon's peak RSS (VmHWM)

usage: fuse_bench.py NCAFS_BINARY [WORK]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

import bench_cli

NPART = 120
PER_PART = 35          # time steps per partition
NY, NX = 180, 360      # 259,200 bytes per float time step -> ~1.06 GiB in all
MANY = 10000


def log(msg):
    print(msg, flush=True)


def nca(path, dims, sizes, var, dtype, partitions, pmdims, pmshape, record_dim):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        for d in dims:
            ds.createDimension(d, None if d == record_dim else sizes[d])
        c = ds.createVariable(var, dtype, (), fill_value=False)
        c.cf_role = "nca_variable"
        c.nca_dimensions = " ".join(dims)
        c.nca_array = json.dumps({"directions": {d: True for d in dims}, "pmdimensions": pmdims,
                                  "pmshape": pmshape, "Partitions": partitions})


def generate_big(folder):
    os.makedirs(folder, exist_ok=True)
    parts = []
    for p in range(NPART):
        name = "part_%03d.nc" % p
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            with netCDF4.Dataset(path + ".tmp", "w", format="NETCDF3_CLASSIC") as ds:
                ds.createDimension("time", None)
                ds.createDimension("lat", NY)
                ds.createDimension("lon", NX)
                v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=False)
                base = np.arange(NY * NX, dtype="f4").reshape(NY, NX)
                for t in range(PER_PART):
                    v[t] = base + (p * PER_PART + t)
            os.rename(path + ".tmp", path)
        parts.append({"index": [p], "location": [[p * PER_PART, (p + 1) * PER_PART - 1], [0, NY - 1], [0, NX - 1]],
                      "subarray": {"file": name, "ncvar": "tas", "shape": [PER_PART, NY, NX]}})
    nca(os.path.join(folder, "big.nca"), ["time", "lat", "lon"], {"time": NPART * PER_PART, "lat": NY, "lon": NX},
        "tas", "f4", parts, ["time"], [NPART], None)  # fixed: an unlimited dim without variables has 0 records
    return sorted(os.path.join(folder, "part_%03d.nc" % p) for p in range(NPART))


def generate_many(folder):
    os.makedirs(folder, exist_ok=True)
    first = os.path.join(folder, "p00000.nc")
    if not os.path.exists(first):
        with netCDF4.Dataset(first, "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("time", 1)
            ds.createDimension("x", 4)
            ds.createVariable("v", "f4", ("time", "x"), fill_value=False)[:] = np.arange(4, dtype="f4")
    parts = []
    for p in range(MANY):
        name = "p%05d.nc" % p
        if p and not os.path.exists(os.path.join(folder, name)):
            shutil.copyfile(first, os.path.join(folder, name))
        parts.append({"index": [p], "location": [[p, p], [0, 3]],
                      "subarray": {"file": name, "ncvar": "v", "shape": [1, 4]}})
    nca(os.path.join(folder, "many.nca"), ["time", "x"], {"time": MANY, "x": 4}, "v", "f4", parts, ["time"], [MANY],
        None)
    return first


def timed(cmd, repeat=3, before=None):
    best = None
    for _ in range(repeat):
        if before:
            before()
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, shell=isinstance(cmd, str))
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best


def drop_cache(path):
    def f():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return f


class Mount:
    def __init__(self, ncafs, source, options):
        self.mnt = tempfile.mkdtemp(prefix="ncafs-bench-mnt-")
        cmd = [ncafs, source, self.mnt, "-f"] + (["-o", options] if options else [])
        self.proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                raise SystemExit("ncafs failed to mount")
            time.sleep(0.05)

    def peak_rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        self.proc.wait(timeout=60)
        os.rmdir(self.mnt)


def main():
    args = bench_cli.positional(__doc__, "/tmp/ncafs-bench")
    if args is None:
        return 2
    ncafs, work = args
    os.makedirs(work, exist_ok=True)
    log("generating in %s (reused when present) ..." % work)
    parts = generate_big(os.path.join(work, "big"))
    small = generate_many(os.path.join(work, "many"))
    materialised = os.path.join(work, "big-ncrcat.nc")
    if not os.path.exists(materialised):
        subprocess.run(["ncrcat", "-O", "-h"] + parts + [materialised + ".tmp"], check=True)
        os.rename(materialised + ".tmp", materialised)
    total = sum(os.path.getsize(p) for p in parts)
    log("big: %d partitions, %.2f GiB; many: %d partitions" % (len(parts), total / 2**30, MANY))
    subprocess.run("cat %s/big/* %s > /dev/null" % (work, materialised), shell=True, check=True)  # warm

    results = {}
    for options in ("", "nosplice"):
        m = Mount(ncafs, work, options)
        try:
            virtual = os.path.join(m.mnt, "big", "big.nc")
            label = options or "splice"
            if options == "":
                # (c) first: the first ncdump -h pays classification and parsing.
                many = os.path.join(m.mnt, "many", "many.nc")
                t = time.perf_counter()
                subprocess.run(["ncdump", "-h", many], check=True, stdout=subprocess.DEVNULL)
                results["c_first"] = time.perf_counter() - t
                results["c_repeat"] = timed(["ncdump", "-h", many], 5)
                results["c_single"] = timed(["ncdump", "-h", small], 5)
            subprocess.run(["cat", virtual], check=True, stdout=subprocess.DEVNULL)
            results["a_virtual_" + label] = timed(["cat", virtual], 3, drop_cache(virtual))
            # keep_cache: an unchanged virtual file read again comes from the kernel page cache.
            subprocess.run(["cat", virtual], check=True, stdout=subprocess.DEVNULL)
            results["a_warm_" + label] = timed(["cat", virtual], 3)
            results["a_parts"] = timed(["cat"] + parts, 3)
            if options == "":
                for what, args in (("point", ["-d", "lat,90", "-d", "lon,180"]),
                                   ("slab", ["-d", "time,2000"])):
                    out = os.path.join(work, "ncks-out.nc")
                    results["b_%s_virtual" % what] = timed(["ncks", "-O", "-h", "-v", "tas"] + args + [virtual, out],
                                                           3, drop_cache(virtual))
                    results["b_%s_ncrcat" % what] = timed(["ncks", "-O", "-h", "-v", "tas"] + args +
                                                          [materialised, out], 3)
                results["d_rss_kib"] = m.peak_rss_kib()
        finally:
            m.close()

    size = os.path.getsize(materialised)
    gib = size / 2**30
    log("")
    log("(a) cat, %.2f GiB (virtual file's kernel cache dropped before each run; best of 3)" % gib)
    for label in ("splice", "nosplice"):
        v = results["a_virtual_" + label]
        log("    virtual (%-8s) %6.2f s  %7.0f MiB/s   partitions %6.2f s   ratio partitions/virtual = %.2f"
            % (label, v, size / 2**20 / v, results["a_parts"], results["a_parts"] / v))
    for label in ("splice", "nosplice"):
        v = results["a_warm_" + label]
        log("    virtual (%-8s) %6.2f s  read again, kernel page cache kept: ratio partitions/virtual = %.2f"
            % (label, v, results["a_parts"] / v))
    for what in ("point", "slab"):
        v, r = results["b_%s_virtual" % what], results["b_%s_ncrcat" % what]
        log("(b) ncks %-5s virtual %.3f s   ncrcat file %.3f s   ratio ncrcat/virtual = %.2f" % (what, v, r, r / v))
    log("(c) ncdump -h of %d-partition aggregation: first %.3f s, repeated %.3f s; small single-file dataset %.3f s"
        % (MANY, results["c_first"], results["c_repeat"], results["c_single"]))
    log("(d) daemon peak RSS %.1f MiB" % (results["d_rss_kib"] / 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
