#!/usr/bin/python3
"""Benchmark of LOD views and VDS views of an ncafs mount (a program, not a
test). Every figure is a ratio to a baseline measured in the same run.

Uses WORK (default /tmp/ncafs-bench, shared with fuse_bench.py, reused when
present): big/ (fuse_bench's aggregation big.nca of 120 classic partitions,
~1 GiB, tas(time, lat, lon) float) and vds/ (a 3-D R32 Zip volume written by
tests/vds/make_vds.py). Mounts WORK with the given ncafs (a Release build)
and prints:
  (a) big.lod2.nc (lods=2, lod_keep=time: 1/16 of the elements) read whole
      vs big.nc read whole: time (cat, kernel cache dropped, best of 3) and
      bytes the daemon read from the partitions (its rchar, nosplice mounts)
  (b) cat of vol.nc (the .nc view of vol.vds) vs decoding vol.vds with the
      independent Python decoder tests/vds/vds_decode.py (branch
      s3-vds-writer; SKIPPED when absent)
  (c) cat of NAME.vds (the .vds view) vs cat of NAME.nc, cold (the
      partitions' page cache dropped) and warm (the partitions in the page
      cache; the view's own page cache dropped in both), best of 3, and
      the daemon's CPU seconds per warm cat, for
      mid.nca (the first 12 partitions of big/: tas(time, lat, lon) float,
      classic files, ~110 MB) and nc4/nc4.nca (6 deflated netCDF-4
      partitions of ua(time, level, lat, lon) float, ~62 MB); with
      NCAFS_BEFORE=ANOTHER_BINARY set, that binary is measured too, in the
      same run (before/after a change); then 30 LOD0 bricks of each read at
      random (pread at their offsets) in a fresh mount: time, daemon CPU

usage: [NCAFS_BEFORE=OLD_BINARY] [VDS_BENCH_ONLY_VIEWS=1] vds_bench.py NCAFS_BINARY [WORK]
  VDS_BENCH_ONLY_VIEWS=1 runs (c) alone
"""
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "vds"))
import fuse_bench  # noqa: E402  (generate_big, Mount, timed, drop_cache)
import make_vds  # noqa: E402  (the independent OpenVDS container writer)
import bench_cli  # noqa: E402
import vds_decode  # noqa: E402  (the independent decoder: where the bricks lie)

VDS_SHAPE = (160, 192, 256)  # C order: Inline, Crossline, Sample (30 MiB of float32)


def log(msg):
    print(msg, flush=True)


def rchar(pid):
    with open("/proc/%d/io" % pid) as f:
        return int(re.search(r"rchar: (\d+)", f.read()).group(1))


def cat_seconds(path):
    return fuse_bench.timed(["cat", path], repeat=3, before=fuse_bench.drop_cache(path))


def bytes_read(ncafs, source, name, options):
    """Bytes the daemon of a fresh nosplice mount reads while `name` is read once."""
    m = fuse_bench.Mount(ncafs, source, options + ",nosplice")
    try:
        os.stat(os.path.join(m.mnt, name))
        before = rchar(m.proc.pid)
        subprocess.run(["cat", os.path.join(m.mnt, name)], check=True, stdout=subprocess.DEVNULL)
        return rchar(m.proc.pid) - before
    finally:
        m.close()


def bench_lod(ncafs, big):
    options = "lods=2,lod_keep=time,views=nc"
    m = fuse_bench.Mount(ncafs, big, options)
    try:
        full, lod = os.path.join(m.mnt, "big.nc"), os.path.join(m.mnt, "big.lod2.nc")
        t_full, t_lod = cat_seconds(full), cat_seconds(lod)
        s_full, s_lod = os.path.getsize(full), os.path.getsize(lod)
    finally:
        m.close()
    b_full, b_lod = bytes_read(ncafs, big, "big.nc", options), bytes_read(ncafs, big, "big.lod2.nc", options)
    log("(a) LOD2 view (time kept) vs full view of big.nca:")
    log("    size  %12d vs %12d bytes  ratio %.4f" % (s_lod, s_full, s_lod / s_full))
    log("    time  %12.3f vs %12.3f s      ratio %.4f" % (t_lod, t_full, t_lod / t_full))
    log("    read  %12d vs %12d bytes  ratio %.4f (from the partitions, daemon rchar)" % (b_lod, b_full, b_lod / b_full))


def generate_volume(path):
    if os.path.exists(path):
        return
    i2, i1, i0 = np.meshgrid(*(np.arange(n) for n in VDS_SHAPE), indexing="ij")
    values = (np.sin(i0 * 0.05) * 100 + i1 * 0.5 - i2 * 0.25).astype(np.float32)
    names = ["Sample", "Crossline", "Inline"]
    axes = [{"name": names[d], "numSamples": VDS_SHAPE[2 - d], "unit": "ms" if d == 0 else "", "coordinateMin": 0,
             "coordinateMax": VDS_SHAPE[2 - d] - 1} for d in range(3)]
    channel = {"name": "Amplitude", "format": "Format_R32", "components": "Components_1", "unit": "",
               "channelMapping": "Direct", "mappedValues": 1, "useNoValue": False, "noValue": 0.0,
               "integerScale": 1.0, "integerOffset": 0.0, "valueRange": [-200.0, 200.0], "discrete": False,
               "renderable": True, "allowLossyCompression": False}
    desc = {"brickSize": "BrickSize_64", "negativeMargin": 4, "positiveMargin": 4, "brickSize2DMultiplier": 4,
            "lodLevels": "LODLevels_None", "create2DLODs": False, "forceFullResolutionDimension": False,
            "fullResolutionDimension": -1}
    layout = {"layoutDescriptor": desc, "axisDescriptors": axes, "channelDescriptors": [channel], "metadata": []}
    make_vds.write_vds(path + ".tmp", layout, [(channel, values, [0, 1, 2], "Zip", lambda b: None)])
    os.rename(path + ".tmp", path)


def bench_vds_source(ncafs, folder):
    try:
        import vds_decode  # noqa: F401  (branch s3-vds-writer)
    except ImportError:
        log("(b) SKIPPED: tests/vds/vds_decode.py (the independent Python decoder, branch s3-vds-writer) is absent")
        return
    path = os.path.join(folder, "vol.vds")
    best = None
    for _ in range(3):
        t = time.perf_counter()
        vds_decode.Vds(path).read_lod(0, 0)
        best = min(best or 1e9, time.perf_counter() - t)
    m = fuse_bench.Mount(ncafs, folder, "views=nc")
    try:
        t_view = cat_seconds(os.path.join(m.mnt, "vol.nc"))
    finally:
        m.close()
    log("(b) cat of vol.nc (the .nc view of vol.vds) vs vds_decode.py decoding vol.vds:")
    log("    time  %12.3f vs %12.3f s      ratio %.4f" % (t_view, best, t_view / best))


def write_mid(big, parts=12):
    """mid.nca: the first `parts` partitions of big/ (~110 MB of classic files)."""
    entries = [{"index": [p], "location": [[p * fuse_bench.PER_PART, (p + 1) * fuse_bench.PER_PART - 1],
                                           [0, fuse_bench.NY - 1], [0, fuse_bench.NX - 1]],
                "subarray": {"file": "part_%03d.nc" % p, "ncvar": "tas",
                             "shape": [fuse_bench.PER_PART, fuse_bench.NY, fuse_bench.NX]}} for p in range(parts)]
    path = os.path.join(big, "mid.nca")
    if not os.path.exists(path):
        fuse_bench.nca(path, ["time", "lat", "lon"],
                       {"time": parts * fuse_bench.PER_PART, "lat": fuse_bench.NY, "lon": fuse_bench.NX},
                       "tas", "f4", entries, ["time"], [parts], None)
    return ["part_%03d.nc" % p for p in range(parts)]


NC4_PARTS, NC4_SHAPE = 6, (10, 4, 180, 360)  # per partition: time, level, lat, lon (~10 MB of float32)


def write_nc4(folder):
    """nc4.nca: 6 deflated netCDF-4 partitions of ua(time, level, lat, lon), chunks of one time step."""
    import netCDF4
    os.makedirs(folder, exist_ok=True)
    nt, nl, ny, nx = NC4_SHAPE
    names = []
    for p in range(NC4_PARTS):
        name = "ua_%02d.nc" % p
        names.append(name)
        path = os.path.join(folder, name)
        if os.path.exists(path):
            continue
        with netCDF4.Dataset(path + ".tmp", "w", format="NETCDF4") as ds:
            for d, n in zip(("time", "level", "lat", "lon"), NC4_SHAPE):
                ds.createDimension(d, n)
            v = ds.createVariable("ua", "f4", ("time", "level", "lat", "lon"), zlib=True, complevel=1,
                                  shuffle=True, chunksizes=(1, nl, ny, nx), fill_value=np.float32(1e20))
            lat, lon = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
            for t in range(nt):
                for lev in range(nl):
                    v[t, lev] = (np.sin(lon * 0.05 + t) * 20 + lat * 0.1 + lev).astype("f4")
        os.rename(path + ".tmp", path)
    entries = [{"index": [p], "location": [[p * nt, (p + 1) * nt - 1], [0, nl - 1], [0, ny - 1], [0, nx - 1]],
                "subarray": {"file": names[p], "ncvar": "ua", "shape": list(NC4_SHAPE)}} for p in range(NC4_PARTS)]
    path = os.path.join(folder, "nc4.nca")
    if not os.path.exists(path):
        fuse_bench.nca(path, ["time", "level", "lat", "lon"],
                       {"time": NC4_PARTS * nt, "level": nl, "lat": ny, "lon": nx},
                       "ua", "f4", entries, ["time"], [NC4_PARTS], None)
    return names


def drop_files(paths):
    """Drops the page cache of each file (clean pages: the partitions, the mount's files)."""
    for p in paths:
        fuse_bench.drop_cache(p)()


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cat_cold_warm(path, sources, pid):
    """Best of 3 cats of a view: cold (the partitions' and the view's page cache dropped) and warm (the
    partitions in the page cache, the view's dropped); and the daemon's CPU seconds per warm cat (a
    figure the load of a shared machine disturbs less than the time)."""
    cold = fuse_bench.timed(["cat", path], repeat=3, before=lambda: drop_files(sources + [path]))
    subprocess.run(["cat"] + sources, check=True, stdout=subprocess.DEVNULL)
    cpu = cpu_seconds(pid)
    warm = fuse_bench.timed(["cat", path], repeat=3, before=lambda: drop_files([path]))
    return cold, warm, (cpu_seconds(pid) - cpu) / 3


def bench_vds_dataset(binaries, folder, stem, parts, what):
    """(c) .vds against .nc of one dataset, for each binary (label, path) in the same run."""
    sources = [os.path.join(folder, p) for p in parts]
    log("(c) %s: cat of %s.vds vs cat of %s.nc, seconds (best of 3)" % (what, stem, stem))
    for label, ncafs in binaries:
        try:
            m = fuse_bench.Mount(ncafs, folder, "views=nc:vds")
        except SystemExit:
            log("    %-7s SKIPPED: this ncafs does not mount with views=nc:vds" % label)
            continue
        try:
            vds, nc = os.path.join(m.mnt, stem + ".vds"), os.path.join(m.mnt, stem + ".nc")
            if not os.path.exists(vds):
                log("    %-7s SKIPPED: the mount shows no %s.vds" % (label, stem))
                continue
            vc, vw, v_cpu = cat_cold_warm(vds, sources, m.proc.pid)
            nc_cold, nc_warm, nc_cpu = cat_cold_warm(nc, sources, m.proc.pid)
            log("    %-7s .vds %d bytes, .nc %d bytes" % (label, os.path.getsize(vds), os.path.getsize(nc)))
            log("    %-7s cold  %8.3f vs %8.3f s   ratio %.2f" % (label, vc, nc_cold, vc / nc_cold))
            log("    %-7s warm  %8.3f vs %8.3f s   ratio %.2f" % (label, vw, nc_warm, vw / nc_warm))
            log("    %-7s daemon CPU per warm cat %.3f vs %.3f s" % (label, v_cpu, nc_cpu))
            log("    %-7s daemon peak RSS %.0f MiB" % (label, m.peak_rss_kib() / 1024))
        finally:
            m.close()
    random_bricks(binaries, folder, stem)


def random_bricks(binaries, folder, stem, count=30):
    """(c) `count` LOD0 bricks of NAME.vds read at random by pread, each binary in a fresh mount (warm partitions)."""
    m = fuse_bench.Mount(binaries[-1][1], folder, "views=nc:vds")
    try:
        with open(os.path.join(m.mnt, stem + ".vds"), "rb") as f:
            entries = [e for e in vds_decode.Vds(f.read()).layer(0, 0).entries if e.kind() == "data"]
    finally:
        m.close()
    random.Random(1).shuffle(entries)
    for label, ncafs in binaries:
        m = fuse_bench.Mount(ncafs, folder, "views=nc:vds")
        try:
            path = os.path.join(m.mnt, stem + ".vds")
            os.stat(path)
            fd = os.open(path, os.O_RDONLY)
            cpu, t = cpu_seconds(m.proc.pid), time.perf_counter()
            for e in entries[:count]:
                os.pread(fd, e.length, e.offset)
            dt = time.perf_counter() - t
            os.close(fd)
            log("    %-7s %d random LOD0 bricks: %.3f s, daemon CPU %.3f s"
                % (label, min(count, len(entries)), dt, cpu_seconds(m.proc.pid) - cpu))
        finally:
            m.close()


def bench_vds_view(binaries, big, work):
    bench_vds_dataset(binaries, big, "mid", write_mid(big), "3-D float, 12 classic (CDF-1) partitions")
    nc4 = os.path.join(work, "nc4")
    bench_vds_dataset(binaries, nc4, "nc4", write_nc4(nc4), "4-D float, 6 deflated netCDF-4 partitions")


def main():
    args = bench_cli.positional(__doc__, "/tmp/ncafs-bench")
    if args is None:
        return 2
    ncafs, work = args
    log("generating in %s (reused when present) ..." % work)
    big = os.path.join(work, "big")
    fuse_bench.generate_big(big)
    vds_folder = os.path.join(work, "vds")
    os.makedirs(vds_folder, exist_ok=True)
    generate_volume(os.path.join(vds_folder, "vol.vds"))
    binaries = [("after", ncafs)]
    if os.environ.get("NCAFS_BEFORE"):
        binaries.insert(0, ("before", os.path.abspath(os.environ["NCAFS_BEFORE"])))
    if os.environ.get("VDS_BENCH_ONLY_VIEWS") != "1":
        bench_lod(ncafs, big)
        bench_vds_source(ncafs, vds_folder)
    bench_vds_view(binaries, big, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
