#!/usr/bin/env python3
"""Reads of a view over deflated netCDF-4 partitions, served from decoded
chunks kept by the daemon (cache_mem=) and computed with a readahead per
open file.

  cached   12 monthly partitions (time UNLIMITED, two variables chunked
           differently, zlib) aggregated by `ncafs aggregate`; mounted with
           cache_mem=0 (decode on every read), 256K (far smaller than the
           data: chunks evicted all the time) and the default. Four reader
           processes at once (netCDF4-python on the view: random points,
           sequential steps, slabs across partitions and chunks), the
           view's page cache dropped between them; every value equals the
           partitions' own as netCDF4-python reads them from the files.
  corrupt  the same partitions, one with a chunk's stored bytes flipped and
           one with a chunk replaced by a zlib stream that inflates to 64 MiB
           (h5py's write_direct_chunk): reading those steps fails (EIO) with
           a log line naming the partition, the daemon stays small and alive,
           every other step reads as in the files.
  whole    readers going forward, whose next bytes the daemon computes
           ahead on other threads: netCDF4-python reading each variable
           whole, and `cat`, give the values netCDF4-python reads from the
           partitions and the bytes of `ncafs export` (which reads each
           range once, in order, on one thread); then with partitions
           damaged (flipped bytes, an inflate bomb, one truncated in its
           last chunk) the whole reads fail (EIO, the partition named in the
           log), never zeros, and the steps around them read right.
"""
import os
import sys
import multiprocessing

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mount import Mount, check, fail, NCAFS, run_cases  # noqa: E402
from test_read_scale import status_bytes  # noqa: E402

MONTHS, STEPS, LAT, LON = 12, 10, 40, 64


def write_partitions(folder):
    import netCDF4
    os.makedirs(folder)
    rng = np.random.default_rng(24)
    names = []
    for m in range(MONTHS):
        path = os.path.join(folder, "tas_%02d.nc" % m)
        with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", LAT)
            ds.createDimension("lon", LON)
            t = ds.createVariable("time", "f8", ("time",))
            t.units, t.calendar = "days since 2000-01-01", "standard"
            t[:] = np.arange(m * STEPS, (m + 1) * STEPS)
            ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-60, 60, LAT)
            ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 354, LON)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, chunksizes=(1, LAT, LON))
            v[:] = rng.normal(280, 10, (STEPS, LAT, LON)).astype("f4")
            w = ds.createVariable("pr", "f8", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                  chunksizes=(4, 16, 24))
            w[:] = rng.random((STEPS, LAT, LON))
        names.append(path)
    return names


def expected_values(names):
    """{variable: [MONTHS*STEPS, LAT, LON]} as netCDF4-python reads the partitions."""
    import netCDF4
    out = {}
    for name in ("tas", "pr"):
        parts = []
        for path in names:
            with netCDF4.Dataset(path) as ds:
                v = ds.variables[name]
                v.set_auto_maskandscale(False)
                parts.append(np.array(v[:]))
        out[name] = np.concatenate(parts)
    return out


def drop_page_cache(path):
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def reader(args):
    """One reader process: (what, [(index, values)]) read with netCDF4-python."""
    import netCDF4
    path, kind, seed = args
    rng = np.random.default_rng(seed)
    got = []
    with netCDF4.Dataset(path) as ds:
        for name in ("tas", "pr"):
            v = ds.variables[name]
            v.set_auto_maskandscale(False)
            n = v.shape[0]
            if kind == "points":
                for _ in range(300):
                    at = (int(rng.integers(n)), int(rng.integers(LAT)), int(rng.integers(LON)))
                    got.append((name, at, np.array(v[at])))
            elif kind == "steps":
                for t in range(n):
                    got.append((name, (t,), np.array(v[t])))
            else:  # slabs across partitions and chunks
                for _ in range(40):
                    t0, y0, x0 = int(rng.integers(n - 25)), int(rng.integers(LAT - 20)), int(rng.integers(LON - 30))
                    box = (slice(t0, t0 + 25), slice(y0, y0 + 20), slice(x0, x0 + 30))
                    got.append((name, (t0, y0, x0), np.array(v[box])))
    return kind, got


def compare(expected, kind, got):
    for name, at, values in got:
        if kind == "slabs":
            t0, y0, x0 = at
            want = expected[name][t0:t0 + 25, y0:y0 + 20, x0:x0 + 30]
        else:
            want = expected[name][at]
        check(np.array_equal(values, want), "%s %s %s at %s: %s, want %s" % (kind, name, "read", at, values, want))


def case_cached(work):
    source = os.path.join(work, "src")
    names = write_partitions(source)
    import subprocess
    subprocess.run([NCAFS, "aggregate", "-o", os.path.join(source, "monthly.nc")] + names, check=True,
                   stdout=subprocess.DEVNULL)
    expected = expected_values(names)
    context = multiprocessing.get_context("fork")
    for options in ("cache_mem=0", "cache_mem=256K", None):
        with Mount(source, options) as m:
            view = m.path("monthly.nc")
            jobs = [(view, kind, seed) for seed, kind in enumerate(("points", "steps", "slabs", "points"))]
            for _ in range(2):  # the second round with the daemon's caches warm, the kernel's dropped
                drop_page_cache(view)
                with context.Pool(len(jobs)) as pool:
                    for kind, got in pool.map(reader, jobs):
                        compare(expected, kind, got)
            check(m.alive(), "%s: the daemon died" % options)


def damage_partitions(names):
    """Flips stored bytes of tas chunk 3 of partition 5; partition 7's tas
    chunk 2 becomes an inflate bomb. Returns the view's steps they hold."""
    import h5py
    import zlib
    with h5py.File(names[5], "r") as f:
        info = f["tas"].id.get_chunk_info(3)
    with open(names[5], "r+b") as out:
        out.seek(info.byte_offset + info.size // 2)
        flipped = bytes(b ^ 0x5A for b in out.read(16))
        out.seek(info.byte_offset + info.size // 2)
        out.write(flipped)
    with h5py.File(names[7], "r+") as f:
        f["tas"].id.write_direct_chunk((2, 0, 0), zlib.compress(bytes(64 << 20), 9))
    return {5 * STEPS + 3: names[5], 7 * STEPS + 2: names[7]}


def case_corrupt(work):
    import netCDF4
    import subprocess
    source = os.path.join(work, "src")
    names = write_partitions(source)
    expected = expected_values(names)
    damaged = damage_partitions(names)
    subprocess.run([NCAFS, "aggregate", "-o", os.path.join(source, "monthly.nc")] + names, check=True,
                   stdout=subprocess.DEVNULL)
    with Mount(source) as m:
        view = m.path("monthly.nc")
        for step, partition in damaged.items():
            with netCDF4.Dataset(view) as ds:
                v = ds.variables["tas"]
                v.set_auto_maskandscale(False)
                try:
                    values = np.array(v[step])
                    fail("step %d of a damaged partition read: %s" % (step, values[:2, :2]))
                except (RuntimeError, OSError):
                    pass
            check(os.path.basename(partition) in m.log_text(),
                  "the failure must be logged naming %s:\n%s" % (partition, m.log_text()))
        rss = status_bytes(m.process.pid, "VmRSS")
        check(rss < 400 << 20, "the bomb must not cost its 64 MiB: RSS %d bytes" % rss)
        with netCDF4.Dataset(view) as ds:
            v = ds.variables["tas"]
            v.set_auto_maskandscale(False)
            for step in (0, 5 * STEPS + 9, 7 * STEPS + 5, MONTHS * STEPS - 1):
                check(np.array_equal(np.array(v[step]), expected["tas"][step]), "step %d of tas" % step)
        check(m.alive(), "the daemon died")


def whole_reads(view, expected):
    import netCDF4
    drop_page_cache(view)
    with netCDF4.Dataset(view) as ds:
        for name in ("tas", "pr"):
            v = ds.variables[name]
            v.set_auto_maskandscale(False)
            check(np.array_equal(np.array(v[:]), expected[name]), "%s read whole differs from the partitions" % name)


def view_bytes(view):
    drop_page_cache(view)
    with open(view, "rb") as f:
        return f.read()


def truncate_last_chunk(path):
    """Cuts the file in the middle of its last tas chunk (and all after)."""
    import h5py
    with h5py.File(path, "r") as f:
        info = f["tas"].id.get_chunk_info(STEPS - 1)
    os.truncate(path, info.byte_offset + info.size // 2)


def case_whole(work):
    import netCDF4
    import subprocess
    source = os.path.join(work, "src")
    names = write_partitions(source)
    aggregation = os.path.join(source, "monthly.nc")
    subprocess.run([NCAFS, "aggregate", "-o", aggregation] + names, check=True, stdout=subprocess.DEVNULL)
    expected = expected_values(names)
    exported = os.path.join(work, "exported.nc")
    subprocess.run([NCAFS, "export", aggregation, "-o", exported], check=True)
    with open(exported, "rb") as f:
        serial = f.read()
    for options in ("cache_mem=0", None):
        with Mount(source, options) as m:
            view = m.path("monthly.nc")
            for _ in range(2):  # the second time with the daemon's caches warm
                whole_reads(view, expected)
                check(view_bytes(view) == serial, "%s: cat of the view differs from ncafs export" % options)
    damaged = damage_partitions(names)
    truncate_last_chunk(names[9])
    damaged[9 * STEPS + STEPS - 1] = names[9]
    with Mount(source) as m:
        view = m.path("monthly.nc")
        drop_page_cache(view)
        with netCDF4.Dataset(view) as ds:
            try:
                ds.variables["tas"][:]
                fail("tas read whole over damaged partitions")
            except (RuntimeError, OSError):
                pass
        ds = None  # after a failed read its open fails every read (EIO): opened again
        for t in range(MONTHS * STEPS):  # forward, step by step: each read computes ahead
            if ds is None:
                ds = netCDF4.Dataset(view)
                ds.variables["tas"].set_auto_maskandscale(False)
            try:
                values = np.array(ds.variables["tas"][t])
            except (RuntimeError, OSError):
                # netcdf-c reads 4 x 64 KiB around a step: 8 records of about 30 KB
                near = any(abs(t - d) <= 9 for d in damaged) or t // STEPS == 9
                check(near, "step %d failed, far from any damaged chunk" % t)
                ds.close()
                ds = None
                continue
            check(t not in damaged, "step %d of a damaged partition read: %s" % (t, values[:2, :2]))
            check(np.array_equal(values, expected["tas"][t]), "step %d of tas" % t)
        ds.close()
        got = subprocess.run(["cat", view], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        check(got.returncode != 0 and "Input/output error" in got.stderr, "cat must fail with EIO: %s" % got.stderr)
        for partition in set(damaged.values()):
            check(os.path.basename(partition) in m.log_text(),
                  "the failure must be logged naming %s:\n%s" % (partition, m.log_text()))
        check(m.alive(), "the daemon died")


CASES = {"cached": case_cached, "corrupt": case_corrupt, "whole": case_whole}


if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-e2e-cold-"))
