#!/usr/bin/python3
"""Whole-variable reads of a CMIP-style collection: the `.nc` view of the
aggregation against the same reader over the partitions themselves (a
script, not a test).

Generates in WORK (default /tmp/ncafs-whole-bench, reused when present):
  cmip/  24 monthly netCDF-4 partitions, tas[time, lat, lon] 30 x 180 x 360
         float32 each, time UNLIMITED, deflated (netCDF4-python's zlib,
         level 4, shuffle, default chunks), CF attributes; cmip/tas.nc is
         `ncafs aggregate --dim time` of them (the view: mnt/tas.nc)
Workloads, each in its own python process (timed inside it, imports left
out), the page cache dropped (echo 3 > /proc/sys/vm/drop_caches, as root)
and the daemon freshly mounted before every cold run:
  netCDF4   Dataset(view)['tas'][:]  against  Dataset(p)['tas'][:] for each partition
  xarray    open_dataset(view).tas.load()  against  open_mfdataset(partitions).tas.load()
  cat       cold `cat` of the view against a warm one (its pages in the page cache)
ratio = view / partitions (at most 0.7 is the aim; lower is better); for
cat, cold / warm throughput (at least 0.4 is the aim). Each figure is
repeated REPEATS times (default 3), baseline and view alternated; ranges
(min-max, then the median) are printed with the daemon's CPU time and peak RSS. Variants in
the same run: "after" (this binary) and, with --before OLD_NCAFS, "before".

usage: whole_variable_bench.py NCAFS_BINARY [WORK] [REPEATS] [--before OLD_NCAFS] [--warm]
  --warm   also the same reads warm (daemon and page cache warm, one untimed run first)
"""
import os
import statistics
import subprocess
import sys

import netCDF4
import numpy as np

import bench_cli
from bench_cli import take_flag
from netcdf_clients_bench import Mount, drop_caches, log, timed

MONTHS, STEPS, NY, NX = 24, 30, 180, 360

# Each reader runs in a fresh interpreter (netCDF4 is not thread-safe, and a
# cold run must not inherit a warm process): argv = mode, files...; prints
# the seconds of the read alone.
READER = r"""
import sys, time
mode, files = sys.argv[1], sys.argv[2:]
if mode.startswith("xarray"):
    import xarray
else:
    import netCDF4
t0 = time.perf_counter()
if mode == "netcdf4":
    total = 0
    for path in files:
        with netCDF4.Dataset(path) as ds:
            total += ds["tas"][:].size
elif mode == "xarray-one":
    with xarray.open_dataset(files[0]) as ds:
        total = ds.tas.load().size
else:
    with xarray.open_mfdataset(files) as ds:
        total = ds.tas.load().size
print(time.perf_counter() - t0, total)
"""


def write_partitions(source):
    """The 24 monthly files (kept when present), CF-1.8 attributes."""
    rng = np.random.default_rng(2024)
    lat = np.linspace(-89.5, 89.5, NY)
    base = 255 + 35 * np.cos(np.radians(lat))[:, None] + np.zeros((NY, NX))
    names = []
    for k in range(MONTHS):
        path = os.path.join(source, "tas_Amon_model_%04d%02d.nc" % (2000 + k // 12, k % 12 + 1))
        names.append(path)
        if os.path.exists(path):
            continue
        with netCDF4.Dataset(path + ".tmp", "w", format="NETCDF4") as ds:
            ds.Conventions = "CF-1.8"
            ds.createDimension("time", None)
            ds.createDimension("lat", NY)
            ds.createDimension("lon", NX)
            t = ds.createVariable("time", "f8", ("time",))
            t.units, t.calendar, t.standard_name = "days since 2000-01-01", "standard", "time"
            t[:] = np.arange(k * STEPS, (k + 1) * STEPS)
            y = ds.createVariable("lat", "f8", ("lat",))
            y.units, y.standard_name = "degrees_north", "latitude"
            y[:] = lat
            x = ds.createVariable("lon", "f8", ("lon",))
            x.units, x.standard_name = "degrees_east", "longitude"
            x[:] = np.linspace(0.5, 359.5, NX)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4)
            v.units, v.standard_name = "K", "air_temperature"
            v.long_name = "Near-Surface Air Temperature"
            v[:] = (base[None] + rng.normal(0, 2, (STEPS, NY, NX))).astype("f4")
        os.rename(path + ".tmp", path)
    return names


def prepare(ncafs, work):
    source = os.path.join(work, "cmip")
    os.makedirs(source, exist_ok=True)
    partitions = write_partitions(source)
    aggregation = os.path.join(source, "tas.nc")
    if not os.path.exists(aggregation):
        subprocess.run([ncafs, "aggregate", "--dim", "time", "-o", aggregation] + partitions, check=True,
                       stdout=subprocess.DEVNULL)
    return source, partitions


def prepared(doc):
    """(binary, repeats, source, partitions) from the command line
    (NCAFS_BINARY [WORK] [REPEATS]), the data made; or the exit status."""
    args = bench_cli.positional(doc, "/tmp/ncafs-whole-bench", 3)
    if args is None:
        return 2
    ncafs, work, repeats = args
    if os.geteuid() != 0:
        print("SKIPPED: needs root (drop_caches, FUSE mounts)")
        return 77
    return (ncafs, repeats) + prepare(ncafs, work)


def read_seconds(mode, files):
    out = subprocess.run([sys.executable, "-c", READER, mode] + files, check=True, capture_output=True, text=True)
    return float(out.stdout.split()[0])


def cat_seconds(path):
    return timed(lambda: subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL))


def peak_rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def span(values, fmt="%.3f"):
    """min-max (median)."""
    return (fmt + "-" + fmt + " (" + fmt + ")") % (min(values), max(values), statistics.median(values))


class Figures:
    """Times of the view, of the baseline, the daemon's CPU and peak RSS."""

    def __init__(self):
        self.view, self.base, self.cpu, self.rss = [], [], [], []

    def add_mount(self, m, seconds, cpu_before):
        self.view.append(seconds)
        self.cpu.append(m.cpu() - cpu_before)
        self.rss.append(peak_rss_mib(m.process.pid))

    def line(self, what, variant, ratio_of):
        ratios = [ratio_of(v, b) for v, b in zip(self.view, self.base)]
        return ("%-22s %-7s view %s s | baseline %s s | ratio %s | daemon cpu %s s | peak rss %s MiB"
                % (what, variant, span(self.view), span(self.base), span(ratios, "%.2f"), span(self.cpu, "%.2f"),
                   span(self.rss, "%.0f")))


def measure_reader(mode, ncafs, source, partitions, repeats, cold):
    """The view against the partitions with one reader, cold or warm."""
    figures = Figures()
    view_mode = "xarray-one" if mode == "xarray" else mode
    for _ in range(repeats):
        if cold:
            drop_caches(partitions)
        elif not figures.base:
            read_seconds(mode, partitions)
        figures.base.append(read_seconds(mode, partitions))
        with Mount(ncafs, source) as m:
            view = os.path.join(m.mnt, "tas.nc")
            if not cold:
                read_seconds(view_mode, [view])
            if cold:
                drop_caches(partitions)
            cpu = m.cpu()
            figures.add_mount(m, read_seconds(view_mode, [view]), cpu)
    return figures


def measure_cat(ncafs, source, partitions, repeats):
    """Cold cat of the view (fresh mount, page cache dropped) against a warm
    cat of it (its pages in the kernel's cache); ratio of throughputs."""
    figures = Figures()
    for _ in range(repeats):
        with Mount(ncafs, source) as m:
            view = os.path.join(m.mnt, "tas.nc")
            drop_caches(partitions)
            cpu = m.cpu()
            figures.add_mount(m, cat_seconds(view), cpu)
            cat_seconds(view)
            figures.base.append(min(cat_seconds(view) for _ in range(3)))
    return figures


def main():
    if take_flag("--help", False) or take_flag("-h", False):
        print(__doc__)
        return 0
    before = take_flag("--before", True)
    warm = bool(take_flag("--warm", False))
    setup = prepared(__doc__)
    if isinstance(setup, int):
        return setup
    ncafs, repeats, source, partitions = setup
    stored = sum(os.path.getsize(p) for p in partitions)
    log("%d partitions, %.0f MiB stored, %.0f MiB of tas; ratio = view / partitions (cat: cold / warm throughput)"
        % (len(partitions), stored / 2**20, MONTHS * STEPS * NY * NX * 4 / 2**20))
    variants = [("after", ncafs)] + ([("before", os.path.abspath(before))] if before else [])
    modes = [(True, "cold")] + ([(False, "warm")] if warm else [])
    for label, mode in (("netCDF4 whole variable", "netcdf4"), ("xarray .tas.load()", "xarray")):
        for cold, state in modes:
            for variant, binary in variants:
                figures = measure_reader(mode, binary, source, partitions, repeats, cold)
                log(figures.line("%s %s" % (label.split()[0], state), variant, lambda v, b: v / b))
    for variant, binary in variants:
        figures = measure_cat(binary, source, partitions, repeats)
        log(figures.line("cat cold vs warm", variant, lambda v, b: b / v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
