#!/usr/bin/python3
"""Every brick of .vds views, LOD0 and LOD1, against values computed here
from the source files with netCDF4-python and numpy (not through any view).

Datasets whose shape is no multiple of the brick size (edge bricks), with
_FillValue cells (R32 keeps them as they are): a CF-1.13 aggregation of
ta(time, y, x) float = (360, 70, 130), 13 MB (more than one batch), over
three fragments (deflated chunked netCDF-4, classic CDF-2, contiguous
netCDF-4), and a netCDF-4 file ua(level, time, y, x) float =
(3, 70, 66, 129) (level outside the dimension group: one chunk per level).
The whole file is read in order (LOD1 made from the samples the LOD0
batches kept); then, from a fresh mount, each data brick alone in a random
order (batches started from any brick, narrow ones for a reader that jumps,
LOD1 read from the source when its LOD0 bricks were not made yet): both
must give the same bytes, and each brick's samples must equal the source
values sliced [lo:hi:2**lod] along the group dims. A uniform brick
(constant or NoValue hash) must cover source values that are all that value.
Environment: NCAFS_BIN; exit 77 = skipped (no FUSE).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import test_mount  # noqa: E402  (Mount, fail, check, fuse_usable)
import vds_decode  # noqa: E402

import netCDF4  # noqa: E402

check = test_mount.check
FILL = np.float32(-999.0)
FRAGMENTS = (("frag_deflated.nc", "NETCDF4", {"zlib": True, "complevel": 1, "chunksizes": (5, 35, 65)}),
             ("frag_classic.nc", "NETCDF3_64BIT_OFFSET", {}),
             ("frag_contiguous.nc", "NETCDF4", {"contiguous": True}))
PER_FRAGMENT, NY, NX = 120, 70, 130


def values(shape, seed):
    """Smooth float32 values with a box and scattered cells of FILL."""
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(shape) * 10 + 280).astype("f4")
    v[(slice(1, 3),) * (len(shape) - 2) + (slice(5, 17), slice(60, 70))] = FILL
    v.flat[rng.choice(v.size, v.size // 50, replace=False)] = FILL
    return v


def make_aggregation(source):
    """agg.nca (CF-1.13) over time; returns the master's values (135, 70, 130)."""
    parts = []
    for k, (name, fmt, options) in enumerate(FRAGMENTS):
        v = values((PER_FRAGMENT, NY, NX), k)
        with netCDF4.Dataset(os.path.join(source, name), "w", format=fmt) as ds:
            for dim, n in (("time", PER_FRAGMENT), ("y", NY), ("x", NX)):
                ds.createDimension(dim, n)
            var = ds.createVariable("ta", "f4", ("time", "y", "x"), fill_value=FILL, **options)
            var.set_auto_mask(False)
            var[:] = v
        parts.append(v)
    cdl = """netcdf agg {
dimensions: time = %d ; y = %d ; x = %d ; f_time = 3 ; f_y = 1 ; f_x = 1 ; j = 3 ; i = 3 ;
variables:
  float ta ; ta:_FillValue = -999.f ; ta:aggregated_dimensions = "time y x" ;
    ta:aggregated_data = "map: fragment_map uris: fragment_uris identifiers: fragment_identifiers" ;
  int fragment_map(j, i) ;
  string fragment_uris(f_time, f_y, f_x) ;
  string fragment_identifiers ;
:Conventions = "CF-1.13" ;
data:
  fragment_map = %d, %d, %d, %d, _, _, %d, _, _ ;
  fragment_uris = %s ;
  fragment_identifiers = "ta" ;
}
""" % (3 * PER_FRAGMENT, NY, NX, PER_FRAGMENT, PER_FRAGMENT, PER_FRAGMENT, NY, NX,
       ", ".join('"%s"' % f[0] for f in FRAGMENTS))
    cdl_path = os.path.join(source, "agg.cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    subprocess.run(["ncgen", "-4", "-o", os.path.join(source, "agg.nca"), cdl_path], check=True)
    os.unlink(cdl_path)
    # The values, read back from the fragment files by netCDF4-python.
    read = []
    for name, _, _ in FRAGMENTS:
        with netCDF4.Dataset(os.path.join(source, name)) as ds:
            ds.variables["ta"].set_auto_mask(False)
            read.append(np.asarray(ds.variables["ta"][:]))
    return np.concatenate(read, axis=0)


def make_four(source):
    """four.nc: ua(level, time, y, x) netCDF-4, chunked; returns its values."""
    path = os.path.join(source, "four.nc")
    shape = (3, 70, 66, 129)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for dim, n in zip(("level", "time", "y", "x"), shape):
            ds.createDimension(dim, n)
        var = ds.createVariable("ua", "f4", ("level", "time", "y", "x"), fill_value=FILL, zlib=True,
                                chunksizes=(1, 10, 66, 129))
        var.set_auto_mask(False)
        var[:] = values(shape, 9)
    with netCDF4.Dataset(path) as ds:
        ds.variables["ua"].set_auto_mask(False)
        return np.asarray(ds.variables["ua"][:])


def brick_slices(vds, lod, index):
    """netCDF-order slices of the brick's samples in the LOD0 array and its stored sizes (VDS order)."""
    geo, _ = vds.geometry(lod)
    slices, sizes = [], []
    for d, (stride, count, _, _, shift) in enumerate(geo):
        i = index % count
        index //= count
        lo, hi = i * stride, min((i + 1) * stride, vds.shape[d])
        slices.append(slice(lo, hi, 1 << shift))
        sizes.append(((hi - lo - 1) >> shift) + 1)
    return tuple(reversed(slices)), sizes


def check_bricks(name, whole, alone, want):
    """Each brick of LOD0 and LOD1 of `whole` (the file's bytes) against `want` and `alone` (its bytes read singly)."""
    vds = vds_decode.Vds(whole)
    _, group = vds.geometry(0)
    data_bricks = 0
    for lod in (0, 1):
        for index, entry in enumerate(vds.layer(0, lod).entries):
            where, sizes = brick_slices(vds, lod, index)
            expected = want[where]
            check(expected.shape == tuple(reversed(sizes)), "%s LOD%d brick %d: shape" % (name, lod, index))
            kind = entry.kind()
            if kind == "data":
                data_bricks += 1
                got = vds._chunk_array(0, lod, entry, sizes, group)
                check(alone[(lod, index)] == vds_decode.chunk_bytes(whole, entry),
                      "%s LOD%d brick %d: read alone, its bytes differ from the whole file's" % (name, lod, index))
            else:
                got = np.full(expected.shape, vds._fill(0, kind, entry), dtype="f4")
            if not np.array_equal(got, expected):
                bad = np.argwhere(got != expected)
                test_mount.fail("%s LOD%d brick %d (%s, sizes %s): %d samples differ, first at %s: %r, want %r"
                                % (name, lod, index, kind, sizes, len(bad), bad[0], got[tuple(bad[0])],
                                   expected[tuple(bad[0])]))
    check(data_bricks > 8, "%s: only %d data bricks" % (name, data_bricks))
    return data_bricks


def bricks_alone(path, whole):
    """The bytes of every data brick of LOD0 and LOD1, each read by one pread, in a random order."""
    vds = vds_decode.Vds(whole)
    wanted = [(lod, i, e) for lod in (0, 1) for i, e in enumerate(vds.layer(0, lod).entries) if e.kind() == "data"]
    random.Random(4).shuffle(wanted)
    fd = os.open(path, os.O_RDONLY)
    try:
        return {(lod, i): os.pread(fd, e.length, e.offset) for lod, i, e in wanted}
    finally:
        os.close(fd)


def main():
    test_mount.require_fuse()
    source = tempfile.mkdtemp(prefix="ncafs-vdsbrick-src-")
    try:
        want = {"agg": make_aggregation(source), "four": make_four(source)}
        options = "views=nc,vds,vds_lods=1"
        whole = {}
        with test_mount.Mount(source, options) as m:
            for stem in want:
                with open(m.path(stem + ".vds"), "rb") as f:
                    whole[stem] = f.read()
        with test_mount.Mount(source, options) as m:  # a fresh daemon: no brick made yet
            alone = {stem: bricks_alone(m.path(stem + ".vds"), whole[stem]) for stem in want}
        counts = [check_bricks(stem, whole[stem], alone[stem], want[stem]) for stem in want]
    finally:
        shutil.rmtree(source, ignore_errors=True)
    print("PASS: vds bricks (%s data bricks)" % ", ".join(str(c) for c in counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
