#!/usr/bin/python3
"""End-to-end tests of exact values for every client, through
real FUSE mounts, each against an independent reader.

Run as: test_exact.py CASE   (see CASES). Environment as test_mount.py.

  hdf5_log       reading a 136-variable netCDF-4 file from the daemon's worker
                 threads leaves no HDF5-DIAG line in its log
  classic_views  x.nc4, x.h5, x.hdf5 get .nc/.ds/.ncs views and a netCDF-4
                 x.nc gets x.classic.nc; netcdf-c reads the views as the source
  record_aggregate  ncafs aggregate keeps the record dimension and the
                 partitions' Conventions show in the view (ncra, netCDF4-python,
                 xarray against ncrcat's file)
  clients        a realistic aggregation read by ncdump, ncks, ncra, CDO and
                 netCDF4-python, each against ncrcat's file
  missing_partition  a missing partition fails its own bytes only, whole
                 reads (never short), netcdf-c never sees wrong values
"""
import os
import subprocess
import sys
import tempfile
import shutil

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mount import Mount, check, fuse_usable, SKIP, NCAFS, run_cases  # noqa: E402,F401


def netcdf4_values(path):
    """{name: raw numpy array} of every variable, as netcdf-c reads it."""
    import netCDF4
    out = {}
    with netCDF4.Dataset(path) as ds:
        for name, v in ds.variables.items():
            v.set_auto_maskandscale(False)
            out[name] = np.array(v[...])
    return out


def same_values(got, want, what):
    check(sorted(got) == sorted(want), "%s: variables %s, want %s" % (what, sorted(got), sorted(want)))
    for k in want:
        check(got[k].shape == want[k].shape and np.array_equal(got[k], want[k]),
              "%s: variable %s differs" % (what, k))


def write_many_variables(path, count=136):
    import netCDF4
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 5)
        for i in range(count):
            v = ds.createVariable("v%03d" % i, "f4" if i % 2 else "i2", ("x",))
            v[:] = np.arange(5) + i


def case_hdf5_log(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    stems = ["many%d" % i for i in range(6)]
    for stem in stems:
        write_many_variables(os.path.join(source, stem + ".nc4"))
    want = netcdf4_values(os.path.join(source, "many0.nc4"))
    with Mount(source) as m:
        # Concurrent readers of distinct files: FUSE serves them from several
        # worker threads, and each file is opened by netcdf-c in one of them.
        readers = [subprocess.Popen(["cat", m.path(stem + ext)], stdout=subprocess.DEVNULL)
                   for stem in stems for ext in (".nc", ".ds")]
        for r in readers:
            check(r.wait(timeout=120) == 0, "reading a view failed")
        same_values(netcdf4_values(m.path("many0.nc")), want, "many0.nc")
        log = m.log_text()
    diag = sum(1 for line in log.splitlines() if "HDF5-DIAG" in line)
    check(diag == 0, "%d HDF5-DIAG lines in the daemon's log:\n%s" % (diag, log[:3000]))


def case_classic_views(work):
    source = os.path.join(work, "src")
    os.makedirs(source)
    names = {"a.nc4": "a", "b.h5": "b", "c.hdf5": "c", "d.nc": "d"}
    for fname in names:
        write_many_variables(os.path.join(source, fname), count=6)
    import make_aggregations
    agg = make_aggregations.write_aggregation(os.path.join(source, "agg4"), "agg4", ["time", "x"], {"time": 8, "x": 7},
                                              {"time": [3, 5], "x": [7]}, var="v", dtype="i4",
                                              partition_format="NETCDF4", nca_format="NETCDF4", nca_suffix=".nc")
    with open(os.path.join(source, "e.nc4"), "wb") as f:
        f.write(b"some text, not HDF5\n")
    with Mount(source) as m:
        listing = set(os.listdir(m.mnt))
        for fname, stem in names.items():
            src = os.path.join(source, fname)
            want = netcdf4_values(src)
            views = [stem + ".ds", stem + ".ncs"] + ([stem + ".classic.nc"] if fname.endswith(".nc") else [stem + ".nc"])
            for view in views:
                check(view in listing, "%s missing from the listing %s" % (view, sorted(listing)))
            classic = m.path(views[2])
            with open(classic, "rb") as f:
                check(f.read(3) == b"CDF", classic + " is not netCDF classic")
            same_values(netcdf4_values(classic), want, classic)
            for view in views[:2]:
                with open(m.path(view), "rb") as f:
                    check(len(f.read()) > 100, view + " is not served")
            with open(m.path(fname), "rb") as f, open(src, "rb") as g:
                check(f.read() == g.read(), fname + " must keep its own bytes")
        check("e.nc" not in listing and "e.nc4" in listing, "a non-HDF5 .nc4 has no views: %s" % sorted(listing))
        check("a.classic.nc" not in listing, "only a netCDF-4 NAME.nc gets NAME.classic.nc")
        check(not os.path.exists(m.path("e.classic.nc")), "e.classic.nc must not resolve")
        # A netCDF-4 aggregation named agg4.nc shows its classic view as agg4.nc
        # only: no second name for the same bytes (its partitions keep theirs).
        agg_listing = os.listdir(m.path("agg4"))
        check("agg4.classic.nc" not in agg_listing and "part_00_00.classic.nc" in agg_listing,
              "classic views in the aggregation's folder: %s" % sorted(agg_listing))
        check(not os.path.exists(m.path("agg4", "agg4.classic.nc")), "agg4.classic.nc must not resolve")
        with open(m.path("agg4", "agg4.nc"), "rb") as f:
            check(f.read(3) == b"CDF", "agg4.nc is not the aggregation's classic view")
        check(np.array_equal(netcdf4_values(m.path("agg4", "agg4.nc"))["v"], agg["master"]),
              "agg4.nc: the master array differs")
    with Mount(source, "views=ds") as m:
        check("d.classic.nc" not in os.listdir(m.mnt), "views=ds must hide the classic view")


def header_facts(path):
    """Unlimited dimensions (netcdf-c's nc_inq_unlimdims through netCDF4-python),
    xarray's view of them, and the global Conventions."""
    import netCDF4
    import xarray
    with netCDF4.Dataset(path) as ds:
        unlimited = sorted(n for n, d in ds.dimensions.items() if d.isunlimited())
        conventions = ds.getncattr("Conventions") if "Conventions" in ds.ncattrs() else None
    with xarray.open_dataset(path, decode_times=False) as x:
        xr_unlimited = sorted(x.encoding.get("unlimited_dims", set()))
    return unlimited, xr_unlimited, conventions


def ncra_data(path, out):
    """ncra's record average of path, as ncdump prints the data of tas."""
    subprocess.run(["ncra", "-O", "-h", path, out], check=True)
    return ncdump_data(out, "tas")


def ncdump_data(path, var):
    text = subprocess.run(["ncdump", "-v", var, path], capture_output=True, text=True, check=True).stdout
    return text[text.index("\ndata:\n"):]


def case_record_aggregate(work):
    """ncafs aggregate of record-dimension partitions keeps time UNLIMITED; the
    view shows the partitions' Conventions; ncra and nc_inq_unlimdim agree with
    ncrcat's file (netCDF-4 and classic aggregation files)."""
    import make_aggregations
    source = os.path.join(work, "src")
    make_aggregations.monthly(source, "m")
    os.unlink(os.path.join(source, "m.nca"))
    parts = sorted(os.path.join(source, n) for n in os.listdir(source) if n.startswith("part_"))
    for p in parts:
        subprocess.run(["ncatted", "-h", "-a", "Conventions,global,o,c,CF-1.8", p], check=True)
    concatenated = os.path.join(work, "ncrcat.nc")
    subprocess.run(["ncrcat", "-O", "-h"] + parts + [concatenated], check=True)
    want = header_facts(concatenated)
    check(want == (["time"], ["time"], "CF-1.8"), "ncrcat's file: %s" % (want,))
    want_mean = ncra_data(concatenated, os.path.join(work, "want_mean.nc"))
    for flavour, extra in (("a4", []), ("a3", ["--classic"])):
        out = os.path.join(source, flavour + ".nc")
        subprocess.run([NCAFS, "aggregate", "-o", out] + extra + parts[::-1], check=True)
        import netCDF4
        with netCDF4.Dataset(out) as ds:
            check(ds.dimensions["time"].isunlimited(), out + ": the aggregation file lost the record dimension")
            check(ds.Conventions == "CF-1.13", out + ": the aggregation file must say CF-1.13")
    with Mount(source, "cache_timeout=0") as m:
        for flavour in ("a4", "a3"):
            view = m.path(flavour + ".nc")
            got = header_facts(view)
            check(got == want, "%s: (unlimited, xarray unlimited, Conventions) = %s, ncrcat's file %s" % (view, got, want))
            check(ncra_data(view, os.path.join(work, flavour + "_mean.nc")) == want_mean,
                  "ncra of %s differs from ncra of the ncrcat file" % view)
            for var in ("tas", "time"):
                check(ncdump_data(view, var) == ncdump_data(concatenated, var), "ncdump -v %s of %s" % (var, view))


def word_reads(path, size):
    """pread of every 4-byte word: {offset: bytes or None for EIO}."""
    import errno
    out = {}
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in range(0, size, 4):
            try:
                out[off] = os.pread(fd, 4, off)
            except OSError as e:
                check(e.errno == errno.EIO, "pread at %d: %s, want EIO" % (off, e))
                out[off] = None
    finally:
        os.close(fd)
    return out


def case_missing_partition(work):
    """A missing partition fails exactly its own bytes: every 4-byte word of
    the view reads as it did with the partition present or fails with EIO (the
    failing words are exactly the missing partition's values), a read spanning
    good bytes and the gap fails whole (never short: netcdf-c zero-fills a
    short read), and netcdf-c reads every time step either right or not at all."""
    import make_aggregations
    source = os.path.join(work, "src")
    info = make_aggregations.monthly(os.path.join(source, "m"), "m")  # 12 partitions of 2 steps
    master = info["master"]
    with Mount(source) as m:
        with open(m.path("m", "m.nc"), "rb") as f:
            complete = f.read()
    aside = os.path.join(work, "part_05.nc")
    shutil.move(os.path.join(source, "m", "part_05_00_00.nc"), aside)  # time steps 10 and 11
    missing_words = 2 * master[0].size  # two float time steps
    with Mount(source) as m:
        view = m.path("m", "m.nc")
        check(os.path.getsize(view) == len(complete), "size changed")
        words = word_reads(view, len(complete))
        failing = sorted(off for off, b in words.items() if b is None)
        ranges = []
        for off in failing:
            if ranges and ranges[-1][1] == off:
                ranges[-1][1] = off + 4
            else:
                ranges.append([off, off + 4])
        check(len(failing) == missing_words, "%d words fail (byte ranges %s), want exactly the %d of the missing "
              "partition" % (len(failing), ranges, missing_words))
        for off, b in words.items():
            if b is not None:
                check(b == complete[off:off + len(b)], "word at %d differs from the complete view" % off)
        # A read from a good byte into the gap: EIO, not a short count.
        fd = os.open(view, os.O_RDONLY)
        try:
            first = failing[0]
            try:
                got = os.pread(fd, 4096, first - 8)
                check(False, "a read spanning the gap returned %d bytes, want EIO" % len(got))
            except OSError:
                pass
            check(os.pread(fd, 8, first - 8) == complete[first - 8:first], "the bytes just before the gap")
        finally:
            os.close(fd)
        # netcdf-c, one open per time step: right values or an error, never wrong values.
        import netCDF4
        outcome = {}
        for t in range(master.shape[0]):
            try:
                with netCDF4.Dataset(view) as ds:
                    v = ds.variables[info["var"]]
                    v.set_auto_maskandscale(False)
                    got = np.array(v[t])
                check(np.array_equal(got, master[t]), "netcdf-c read wrong values for time step %d" % t)
                outcome[t] = "ok"
            except (OSError, RuntimeError):
                outcome[t] = "error"
        check(outcome[10] == outcome[11] == "error", "steps of the missing partition must fail: %s" % outcome)
        good = [t for t in outcome if outcome[t] == "ok"]
        check(len(good) >= 20, "only steps %s read; the missing partition should cost at most its neighbours" % good)
        check("direct I/O" in m.log_text(), "the log should say why the view is served with direct I/O")


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    check(r.returncode == 0, "%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def case_clients(work):
    """One realistic aggregation (packed short with scale/offset, float with
    fill and gaps, noleap time with bounds, unlimited time) read through the
    mount by ncdump, ncks, ncra, CDO and netCDF4-python, each compared with
    the same client's reading of ncrcat's concatenation of the partitions."""
    import make_realistic
    source = os.path.join(work, "src")
    parts = make_realistic.write(source)
    want = os.path.join(work, "ncrcat.nc")
    run("ncrcat", "-O", "-h", *parts, want)
    variables = ("ps", "tas", "time", "time_bnds", "lat", "lon")
    with Mount(source) as m:
        view = m.path("real.nc")
        # ncdump: the data of every variable, and the unlimited dimension.
        for var in variables:
            check(ncdump_data(view, var) == ncdump_data(want, var), "ncdump -v %s differs from ncrcat's file" % var)
        check("time = UNLIMITED ; // (12 currently)" in run("ncdump", "-h", view), "ncdump: time is not the record dimension")
        # ncks: values as NCO prints them, whole and a hyperslab across partitions.
        for args in (["-v", "ps,tas"], ["-d", "time,2,6", "-d", "lat,1,2", "-v", "tas,ps,time_bnds"]):
            got = run("ncks", "-H", "-C", "--trd", *args, view)
            check(got == run("ncks", "-H", "-C", "--trd", *args, want), "ncks %s differs" % " ".join(args))
        # ncra: record means (NCO unpacks ps and honours the fills).
        check(ncra_data_var(view, os.path.join(work, "view_mean.nc"), "tas ps") ==
              ncra_data_var(want, os.path.join(work, "want_mean.nc"), "tas ps"), "ncra differs")
        # CDO: diffn finds no difference; infon (per-step statistics) agrees.
        # (CDO 2.1 prints nothing when no record differs, "N of M records differ" otherwise.)
        r = subprocess.run(["cdo", "diffn", view, want], capture_output=True, text=True)
        check(r.returncode == 0 and "differ" not in r.stdout + r.stderr, "cdo diffn: %s%s" % (r.stdout, r.stderr))
        check(len(run("cdo", "-s", "infon", view).splitlines()) == 2 * 12 + 1, "cdo infon does not see 24 records")
        check(run("cdo", "-s", "infon", view) == run("cdo", "-s", "infon", want), "cdo infon differs")
        # netCDF4-python: masked, unpacked values and decoded noleap times.
        import netCDF4
        with netCDF4.Dataset(view) as a, netCDF4.Dataset(want) as b:
            for var in variables:
                x, y = a.variables[var][...], b.variables[var][...]
                check(x.dtype == y.dtype and np.ma.allequal(x, y) and
                      np.array_equal(np.ma.getmaskarray(x), np.ma.getmaskarray(y)), "netCDF4-python: %s differs" % var)
            ta, tb = a.variables["time"], b.variables["time"]
            check(list(netCDF4.num2date(ta[:], ta.units, ta.calendar)) ==
                  list(netCDF4.num2date(tb[:], tb.units, tb.calendar)), "decoded noleap times differ")
            check(a.Conventions == b.Conventions == "CF-1.8", "Conventions: %s vs %s" % (a.Conventions, b.Conventions))
            check(a.variables["ps"][...].mask.sum() == 12 and a.variables["tas"][...].mask.sum() > 40,
                  "the fills and gaps did not come through as masked values")


def ncra_data_var(path, out, names):
    subprocess.run(["ncra", "-O", "-h", path, out], check=True)
    return "".join(ncdump_data(out, n) for n in names.split())


CASES = {"clients": case_clients, "hdf5_log": case_hdf5_log, "classic_views": case_classic_views, "record_aggregate": case_record_aggregate,
         "missing_partition": case_missing_partition}


def main():
    return run_cases(CASES, "ncafs-e2e-exact-")


if __name__ == "__main__":
    sys.exit(main())
