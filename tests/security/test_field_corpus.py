#!/usr/bin/python3
"""A field corpus of netCDF-4 and HDF5 files, read hard through real mounts.

Run as: test_field_corpus.py CASE
  alone       every kind of tests/security/field_corpus.py (string, vlen,
              enum, compound and opaque types, nested groups, several
              UNLIMITED dimensions, fills of every type, fletcher32,
              big-endian, contiguous, compact and chunked layouts, h5netcdf's
              files, non-netCDF HDF5, files netcdf-c refuses or loops on) in one
              SOURCE: `ls -l`, `cat` of every view at once, the `.nc` view
              read by netCDF4-python and the `.ds` view decoded here, both
              equal to netCDF4-python on the file under the documented
              mapping (corpus_oracle.py); a file netcdf-c cannot read has no
              views and a log line naming it; `ncafs export`, `check` and
              `inspect` of each file succeed or fail naming it.
  aggregated  partitions of the kinds that matter for aggregations (strings,
              vlen, enum, compound and a group beside an UNLIMITED time and
              CF attributes, big-endian, fletcher32, contiguous, compact,
              h5netcdf) aggregated by `ncafs aggregate --dim time`: `cat`,
              `cp` and `ncafs export` give the same bytes, netCDF4-python
              reads the partitions' values; another aggregation with a
              corrupt chunk in a partition: its tas EIO with a log line
              naming the partition, export refused naming it, the first
              aggregation still exact.
  hammer      the same aggregation and the field corpus beside it on a
              fresh mount, read at once by 64 processes of random `pread`s
              of the aggregation and of every view of the corpus files that
              netCDF4-python reads whole (against the bytes of `cp` taken on
              another mount; every other process with O_DIRECT), `cat`s,
              netCDF4-python readers and the partitions' own views; then
              xarray with Dask (threads over scipy, processes over netCDF4).
              The daemon is alive after each.
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

netCDF4-python releases the GIL around netcdf-c, which is not thread-safe:
every netCDF4-python reader at once runs in a process of its own.
"""
import concurrent.futures
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
import corpus_oracle  # noqa: E402
import field_corpus  # noqa: E402
from test_mount import NCAFS, Mount, check, decode_ds, run_cases  # noqa: E402

PYTHON = "/usr/bin/python3"
VIEW_SUFFIXES = (".nc", ".ds", ".ncs", ".vds")


def classic_name(source_name):
    """The name of a source file's classic view (x.nc4 -> x.nc, x.nc -> x.classic.nc)."""
    stem, suffix = os.path.splitext(source_name)
    return stem + (".classic.nc" if suffix == ".nc" else ".nc")


def run(args, timeout=300):
    return subprocess.run(args, capture_output=True, timeout=timeout)


def log_names(m, path):
    """True when the daemon's log has a line naming path."""
    return any(path in line for line in m.log_text().splitlines())


def same(got, want):
    """Values equal, NaN included, whatever the byte order."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype.kind != want.dtype.kind or got.dtype.itemsize != want.dtype.itemsize:
        return False
    return np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def compare_attrs(got, want, what):
    check(sorted(got) == sorted(want), "%s: attributes %s, expected %s" % (what, sorted(got), sorted(want)))
    for name, value in want.items():
        ok = got[name] == value if isinstance(value, str) else same(got[name], value)
        check(ok, "%s: attribute %s is %r, expected %r" % (what, name, got[name], value))


def compare_description(got, want, what):
    """A view described by corpus_oracle equal to the expected classic view."""
    check(got["dims"] == want["dims"], "%s: dimensions %s, expected %s" % (what, got["dims"], want["dims"]))
    compare_attrs(got["attrs"], want["attrs"], what)
    check(sorted(got["vars"]) == sorted(want["vars"]) and not got["non_classic"],
          "%s: variables %s (and %s), expected %s" % (what, sorted(got["vars"]), got["non_classic"], sorted(want["vars"])))
    for name, v in want["vars"].items():
        g = got["vars"][name]
        check(g["kind"] == v["kind"] and g["dims"] == v["dims"],
              "%s: %s is %s%s, expected %s%s" % (what, name, g["kind"], g["dims"], v["kind"], v["dims"]))
        compare_attrs(g["attrs"], v["attrs"], "%s: %s" % (what, name))
        check(not isinstance(g["values"], str), "%s: reading %s failed: %s" % (what, name, g["values"]))
        check(same(g["values"], v["values"]), "%s: %s reads %s, expected %s" % (what, name, g["values"], v["values"]))


def unreadable(description):
    """The variables netCDF4-python could not read from the source file."""
    return sorted(name for name, v in description["vars"].items() if isinstance(v["values"], str))


def oracles(work, source, names):
    """{name: (description or None, why)} of every file as netCDF4-python reads it."""
    found = corpus_oracle.described_many([os.path.join(source, n) for n in names], work, source=True)
    return {n: found[os.path.join(source, n)] for n in names}


def expected_view(description):
    """The classic view of a described file; None when netcdf-c cannot open it."""
    return corpus_oracle.classic_view(description) if description else None


def check_view_read(m, source, view, want, got_why):
    """netCDF4-python on the view read (got_why: its description, or None and
    why) want. Where netCDF4-python cannot read a variable of the source, the
    view's read of it fails, and so may others (a read of a view comes in
    blocks: docs/views.md), each with a log line naming the source; what
    reads equals the source."""
    got, why = got_why
    damaged = unreadable(want)
    if got is None:
        check(damaged, "%s: reading it failed although netCDF4-python reads %s: %s" % (view, source, why))
        check(m is None or log_names(m, source), "%s failed (%s) with no log line naming %s" % (view, why, source))
        return
    failed = [n for n, v in got["vars"].items() if isinstance(v["values"], str)]
    for name in damaged:
        check(name in failed, "%s: %s reads although netCDF4-python cannot read it from %s" % (view, name, source))
    if failed:
        check(damaged, "%s: reading %s failed although netCDF4-python reads %s" % (view, failed, source))
        check(m is None or log_names(m, source), "%s: %s failed with no log line naming %s" % (view, failed, source))
    readable = dict(want, vars={n: v for n, v in want["vars"].items() if n not in failed})
    compare_description(dict(got, vars={n: v for n, v in got["vars"].items() if n not in failed}), readable, view)


def check_ds_view(m, source, path, want):
    """The raw .ds view, decoded here: the numeric values netCDF4-python reads."""
    if unreadable(want):
        return  # its bytes fail to read (checked with the other cats)
    numeric = {n: v["values"] for n, v in want["vars"].items() if v["kind"] != "S1"}
    got = decode_ds(path)
    check(sorted(got) == sorted(numeric), "%s: variables %s, expected %s" % (path, sorted(got), sorted(numeric)))
    for name, values in numeric.items():
        check(same(got[name], values), "%s: %s is %s, expected %s" % (path, name, got[name], values))


def cat_at_once(m, paths):
    """`cat` of every path at once: {path: (status, bytes, stderr)}."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = {p: pool.submit(run, ["cat", p], 120) for p in paths}
        return {p: (f.result().returncode, f.result().stdout, f.result().stderr.decode(errors="replace"))
                for p, f in futures.items()}


def views_of(listing, source_name):
    stem = os.path.splitext(source_name)[0]
    names = {classic_name(source_name)} | {stem + s for s in VIEW_SUFFIXES[1:]}
    return sorted(n for n in names if n in listing)


def check_listing(m, described):
    r = run(["ls", "-l", m.mnt], 120)
    check(r.returncode == 0, "ls -l failed: %s" % r.stderr.decode(errors="replace"))
    listing = set(os.listdir(m.mnt))
    for name, (description, why) in described.items():
        views = views_of(listing, name)
        check(name in listing, "%s itself is not listed" % name)
        if description is None:  # netcdf-c cannot open it (%s: why)
            check(not views, "%s has views %s although netcdf-c cannot open it (%s)" % (name, views, why))
            check(not os.path.exists(m.path(classic_name(name))), "%s: its view resolves" % name)
            check(log_names(m, os.path.join(m.source, name)), "no log line names %s:\n%s" % (name, m.log_text()))
        else:
            stem = os.path.splitext(name)[0]
            refusal = corpus_oracle.classic_refusal(description)
            check(refusal is None or classic_name(name) not in views,
                  "%s: %s is listed although %s" % (name, classic_name(name), refusal))
            for view in ([] if refusal else [classic_name(name)]) + [stem + ".ds", stem + ".ncs"]:
                check(view in views, "%s: %s is not listed (%s)" % (name, view, sorted(listing)))
    return listing


def check_cats(m, described, listing):
    """Every view of every file read by `cat` at once: whole, or (only where
    netCDF4-python cannot read the source either) EIO with a log line."""
    sources = {m.path(v): name for name, (d, _) in described.items() if d for v in views_of(listing, name)}
    for path, (status, data, err) in cat_at_once(m, sources).items():
        name = sources[path]
        if status != 0:
            check(unreadable(described[name][0]), "cat %s failed although netCDF4-python reads %s: %s" % (path, name, err))
            check(log_names(m, os.path.join(m.source, name)), "cat %s failed with no log line naming %s" % (path, name))
        else:
            size = os.stat(path).st_size
            check(len(data) == size, "cat %s: %d bytes of %d" % (path, len(data), size))
    check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])


def check_commands(work, source, name, left_out, description):
    """`inspect`, `check` and `ncafs export --format nc` of one file: they
    succeed, or fail naming the file. Returns the export, when written."""
    path = os.path.join(source, name)
    out = os.path.join(work, "export", classic_name(name))
    results = {}
    for command in (["inspect", path], ["check", path], ["export", path, "--format", "nc", "-o", out]):
        r = run([NCAFS] + command, 300)
        said = (r.stdout + r.stderr).decode(errors="replace")
        check("Sanitizer" not in said, "%s %s: %s" % (command[0], name, said[-3000:]))
        results[command[0]] = (r.returncode, said)
        if r.returncode != 0:
            check(path in said, "%s of %s failed without naming it: %s" % (command[0], name, said[-2000:]))
    if description is None:
        for command, (status, said) in results.items():
            check(command == "inspect" or status != 0, "%s of %s succeeded; netcdf-c cannot open it" % (command, name))
        return
    refusal = corpus_oracle.classic_refusal(description)
    if refusal:
        check(results["export"][0] != 0, "export --format nc of %s succeeded although %s" % (name, refusal))
        check("warning: %s: no .nc view: " % path in results["check"][1],
              "check %s does not warn that it has no .nc view (%s):\n%s" % (name, refusal, results["check"][1]))
    if not unreadable(description):
        for command, (status, said) in results.items():
            check(status == 0 or (command == "export" and refusal), "%s of %s failed: %s" % (command, name, said[-2000:]))
    said = results["inspect"][1]
    for item in left_out:  # "group a" or a variable name
        words = item.split()
        check(any(line.startswith("left out: " + path) and words[-1] in line and words[0] in line
                  for line in said.splitlines()), "inspect %s does not list %s as left out:\n%s" % (name, item, said))
    return out if results["export"][0] == 0 else None


def case_alone(work):
    source = os.path.join(work, "src")
    left_out = field_corpus.write_corpus(source)
    described = oracles(work, source, left_out)
    damaged = {name for name, (d, _) in described.items() if d is None or unreadable(d)}
    check(damaged == field_corpus.DAMAGED, "netcdf-c cannot read %s whole; field_corpus.DAMAGED says %s"
          % (sorted(damaged), sorted(field_corpus.DAMAGED)))
    with Mount(source, "cache_timeout=0") as m:
        listing = check_listing(m, described)
        check_cats(m, described, listing)
        classic = {name: m.path(classic_name(name)) for name, (d, _) in described.items()
                   if d and not corpus_oracle.classic_refusal(d)}
        views = corpus_oracle.described_many(list(classic.values()), work, stall=120)
        for name, (description, _) in described.items():
            if description is None:
                continue
            stem = os.path.splitext(name)[0]
            want = expected_view(description)
            if name in classic:
                check_view_read(m, os.path.join(source, name), classic[name], want, views[classic[name]])
            check_ds_view(m, os.path.join(source, name), m.path(stem + ".ds"), want)
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
    os.makedirs(os.path.join(work, "export"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = {name: pool.submit(check_commands, work, source, name, left_out[name], described[name][0])
                   for name in described}
        exported = {name: f.result() for name, f in futures.items() if f.result()}
    read = corpus_oracle.described_many(list(exported.values()), work, stall=120)
    for name, out in exported.items():  # the export reads as the view must
        want = expected_view(described[name][0])
        check_view_read(None, os.path.join(source, name), out, want, read[out])



AGGREGATION_ROUNDS = 2  # partitions of each kind


def build_aggregation(work):
    """SOURCE/data/part_*.nc4 (every partition kind, interleaved) and
    SOURCE/tas.nc (`ncafs aggregate --dim time`); returns (source, partition
    names, the aggregation view as it must read)."""
    source = os.path.join(work, "src")
    names = field_corpus.write_partitions(os.path.join(source, "data"), AGGREGATION_ROUNDS)
    r = run([NCAFS, "aggregate", "--dim", "time", "-o", os.path.join(source, "tas.nc"), os.path.join(source, "data"),
             "--glob", "part_*.nc4"])
    check(r.returncode == 0, "ncafs aggregate failed: %s" % (r.stdout + r.stderr).decode(errors="replace"))
    parts = oracles(work, os.path.join(source, "data"), names)
    for name, (d, why) in parts.items():
        check(d is not None, "netCDF4-python cannot read partition %s: %s" % (name, why))
    first = parts[names[0]][0]
    want = {"dims": [("time", field_corpus.NT * len(names), True), ("lat", field_corpus.NLAT, False),
                     ("lon", field_corpus.NLON, False)],
            "attrs": {"Conventions": "CF-1.8"},  # the partitions' own, from ncafs_fragment_Conventions
            "vars": {name: dict(first["vars"][name]) for name in ("time", "lat", "lon", "tas")}}
    for name in ("time", "tas"):
        want["vars"][name]["values"] = np.concatenate([parts[n][0]["vars"][name]["values"] for n in names])
    for i, n in enumerate(names):  # the oracle against what the generator wrote
        tas, time = field_corpus.partition_values(i)
        check(same(parts[n][0]["vars"]["tas"]["values"], tas) and same(parts[n][0]["vars"]["time"]["values"], time),
              "netCDF4-python reads partition %s unlike it was written" % n)
    return source, names, parts, want


def compare_dims_by_name(got, want, what):
    """Dimensions equal as name -> (length, unlimited); the view may list
    them in another order than the partitions."""
    got_dims = {name: (length, unlimited) for name, length, unlimited in got["dims"]}
    want_dims = {name: (length, unlimited) for name, length, unlimited in want["dims"]}
    check(got_dims == want_dims, "%s: dimensions %s, expected %s" % (what, got_dims, want_dims))
    compare_description(dict(got, dims=want["dims"]), want, what)


def read_view(path):
    with open(path, "rb") as f:
        return f.read()


def damaged_aggregation(source):
    """SOURCE/damaged: three fletcher32 partitions, the second with a flipped
    byte in a chunk of tas, aggregated; returns (its path, the damaged
    partition's path, the view as it must read where it reads)."""
    folder = os.path.join(source, "damaged")
    os.makedirs(folder)
    paths = [os.path.join(folder, "part_%d.nc4" % i) for i in range(3)]
    for i, path in enumerate(paths):
        field_corpus.PARTITION_KINDS["fletcher32"](path, i)
    field_corpus.flip_chunk_byte(paths[1], "tas")
    aggregation = os.path.join(folder, "tas.nc")
    r = run([NCAFS, "aggregate", "--dim", "time", "-o", aggregation] + paths)
    check(r.returncode == 0, "ncafs aggregate failed: %s" % (r.stdout + r.stderr).decode(errors="replace"))
    written = [field_corpus.partition_values(i) for i in range(3)]
    want = {"dims": [("time", 3 * field_corpus.NT, True), ("lat", field_corpus.NLAT, False),
                     ("lon", field_corpus.NLON, False)], "attrs": {"Conventions": "CF-1.8"}, "vars": {}}
    return aggregation, paths[1], want, np.concatenate([t for _, t in written])


def check_damaged(m, first_vars, source):
    """The damaged aggregation: tas fails, with a log line naming the damaged
    partition; what reads equals the partitions (first_vars: the first
    partition's variables, described)."""
    aggregation, damaged, damaged_want, time = damaged_aggregation(source)
    vars_want = {name: dict(first_vars[name]) for name in ("time", "lat", "lon", "tas")}
    vars_want["time"]["values"] = time
    vars_want["tas"]["values"] = "netCDF4-python cannot read a chunk of %s" % damaged
    got = corpus_oracle.described(m.path("damaged", "tas.nc"), 120)
    check_view_read(m, damaged, m.path("damaged", "tas.nc"), dict(damaged_want, vars=vars_want), got)
    check(any(damaged in line and "chunk" in line for line in m.log_text().splitlines()),
          "no log line names the damaged partition and its chunk:\n" + m.log_text()[-3000:])
    r = run([NCAFS, "export", aggregation, "-o", os.path.join(os.path.dirname(source), "damaged.nc")])
    check(r.returncode != 0 and damaged in r.stderr.decode(errors="replace"),
          "export of the damaged aggregation: status %d, %s" % (r.returncode, r.stderr.decode(errors="replace")))


def case_aggregated(work):
    source, names, parts, want = build_aggregation(work)
    exported = os.path.join(work, "export.nc")
    r = run([NCAFS, "export", os.path.join(source, "tas.nc"), "-o", exported])
    check(r.returncode == 0, "ncafs export of the aggregation failed: %s" % r.stderr.decode(errors="replace"))
    with Mount(source, "cache_timeout=0") as m:
        view = m.path("tas.nc")
        status, data, err = cat_at_once(m, [view])[view]
        check(status == 0 and len(data) == os.stat(view).st_size, "cat of the view failed: %s" % err)
        copy = os.path.join(work, "copy.nc")
        check(run(["cp", view, copy]).returncode == 0, "cp of the view failed")
        check(read_view(copy) == data, "cp of the view differs from cat")
        check(read_view(exported) == data, "ncafs export of the aggregation differs from cat of its view")
        for path in (view, exported):
            got, why = corpus_oracle.described(path, 120)
            check(got is not None, "netCDF4-python cannot read %s: %s" % (path, why))
            compare_dims_by_name(got, want, path)
        ds = decode_ds(m.path("tas.ds"))
        for name in ("time", "tas"):
            check(same(ds[name], want["vars"][name]["values"]), "tas.ds: %s differs from the partitions" % name)
        # Each partition's own view, read at once with the aggregation's views.
        views = [m.path("data", os.path.splitext(n)[0] + ".nc") for n in names]
        others = [m.path("tas" + suffix) for suffix in VIEW_SUFFIXES[1:] if os.path.exists(m.path("tas" + suffix))]
        check(len(others) >= 2, "tas.ds and tas.ncs are not shown: %s" % os.listdir(m.mnt))
        for path, (status, got, err) in cat_at_once(m, views + [view] + others).items():
            check(status == 0 and len(got) == os.stat(path).st_size, "cat %s failed: %s" % (path, err))
        read = corpus_oracle.described_many(views, work, stall=120)
        for n, path in zip(names, views):
            got, why = read[path]
            check(got is not None, "netCDF4-python cannot read %s: %s" % (path, why))
            compare_description(got, expected_view(parts[n][0]), path)
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
        # A damaged partition in another aggregation: EIO naming it, and the first still reads.
        check_damaged(m, parts[names[0]][0]["vars"], source)
        got, why = corpus_oracle.described(view, 120)
        check(got is not None, "after the damaged aggregation, %s fails: %s" % (view, why))
        compare_dims_by_name(got, want, view + " after the damaged aggregation")
        check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])



PREAD_PROGRAM = """
import json, os, random, sys
pairs, seed, direct = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3] == "1"
rng = random.Random(seed)
wanted = {}
for _ in range(40):
    view, reference = rng.choice(pairs)
    if reference not in wanted:
        with open(reference, "rb") as f:
            wanted[reference] = f.read()
    want = wanted[reference]
    fd = os.open(view, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    offset = rng.randrange(len(want) + 16)
    length = rng.choice((1, 7, 4096, 65536, 200000, rng.randrange(1, 300000)))
    got = os.pread(fd, length, offset)
    os.close(fd)
    if got != want[offset:offset + length]:
        sys.exit("pread(%d, %d) of %s: %d bytes differ from cat's" % (offset, length, view, len(got)))
"""

XARRAY_PROGRAM = """
import sys
import dask
import numpy as np
import xarray as xr
if __name__ == "__main__":
    view, engine, scheduler, out = sys.argv[1:]
    with dask.config.set(scheduler=scheduler):
        ds = xr.open_dataset(view, engine=engine, chunks={"time": 5, "lat": 4}, mask_and_scale=False,
                             decode_times=False)
        np.savez(out, tas=ds["tas"].load().values, time=ds["time"].load().values)
        ds.close()
"""


def start(args):
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def readers_at_once(m, pairs_file, names):
    """64 processes of random preads of the views in pairs_file (every other
    one with O_DIRECT), 4 cats and 4 netCDF4-python readers of the
    aggregation, and a cat of every partition's own view, all started at
    once: [(what, process)]."""
    view = m.path("tas.nc")
    started = [("pread %d" % i, start([PYTHON, "-c", PREAD_PROGRAM, pairs_file, str(i), str(i % 2)]))
               for i in range(64)]
    started += [("cat", start(["cat", view])) for _ in range(4)]
    started += [("netCDF4-python", start([PYTHON, corpus_oracle.__file__, view])) for _ in range(4)]
    started += [("cat " + n, start(["cat", m.path("data", os.path.splitext(n)[0] + ".nc")])) for n in names]
    return started


def hammered_views(source):
    """The field corpus beside the aggregation (SOURCE/corpus): the views of
    its files netcdf-c reads whole, relative to SOURCE."""
    folder = os.path.join(source, "corpus")
    views = []
    for name in field_corpus.write_corpus(folder):
        if name not in field_corpus.DAMAGED:
            stem = os.path.splitext(name)[0]
            nc = [] if name == "unlimited_empty.nc4" else [classic_name(name)]  # no .nc view: checked by alone
            views += [os.path.join("corpus", v) for v in nc + [stem + ".ds", stem + ".ncs"]]
    return views


def references(work, m, views):
    """cp of each view to work/reference/ (on a mount of its own): [(view, copy)]."""
    pairs = []
    for i, view in enumerate(views):
        copy = os.path.join(work, "reference", "%03d" % i)
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        r = run(["cp", m.path(view), copy])
        check(r.returncode == 0, "cp of %s failed: %s" % (view, r.stderr.decode(errors="replace")))
        pairs.append((view, copy))
    return pairs


def xarray_values(work, view, engine, scheduler):
    program = os.path.join(work, "xarray_read.py")
    with open(program, "w") as f:
        f.write(XARRAY_PROGRAM)
    out = os.path.join(work, "xarray_%s_%s.npz" % (engine, scheduler))
    r = run([PYTHON, program, view, engine, scheduler, out], 300)
    check(r.returncode == 0, "xarray (%s, dask %s) failed: %s" % (engine, scheduler, r.stderr.decode(errors="replace")[-3000:]))
    return np.load(out)


def case_hammer(work):
    source, names, _, want = build_aggregation(work)
    views = ["tas.nc"] * 8 + hammered_views(source)  # the aggregation most often
    with Mount(source, "cache_timeout=0") as m:  # cat's bytes, taken once, on another mount
        pairs = references(work, m, views)
    data = read_view(pairs[0][1])
    pairs_file = os.path.join(work, "pairs.json")
    with Mount(source, "cache_timeout=0") as m:
        with open(pairs_file, "w") as f:
            json.dump([(m.path(v), copy) for v, copy in pairs], f)
        for what, process in readers_at_once(m, pairs_file, names):
            out, err = process.communicate(timeout=300)
            check(process.returncode == 0, "%s failed (%d): %s" % (what, process.returncode, err.decode(errors="replace")[-2000:]))
            if what == "cat":
                check(out == data, "cat of the view at once with the others differs from the reference")
            elif what == "netCDF4-python":
                import pickle
                compare_dims_by_name(pickle.loads(out), want, "the view read at once with 64 pread processes")
        check(m.alive(), "the daemon died under the readers:\n" + m.log_text()[-4000:])
        # xarray with Dask: threads over scipy (pure python) where the view is CDF-1/2; processes over
        # netCDF4 (netcdf-c is not thread-safe).
        runs = [("netcdf4", "processes")] + ([("scipy", "threads")] if data[:4] in (b"CDF\x01", b"CDF\x02") else [])
        for engine, scheduler in runs:
            print("xarray over the view: engine %s, dask scheduler %s" % (engine, scheduler), flush=True)
            got = xarray_values(work, m.path("tas.nc"), engine, scheduler)
            for name in ("tas", "time"):
                check(same(got[name], want["vars"][name]["values"]),
                      "xarray (%s, dask %s): %s differs from the partitions" % (engine, scheduler, name))
        check(m.alive(), "the daemon died under xarray:\n" + m.log_text()[-4000:])


if __name__ == "__main__":
    os.environ["NCAFS_TEST_SETTLE_MS"] = "0"  # fresh inputs read as settled ones (tests/README.md)
    sys.exit(run_cases({"alone": case_alone, "aggregated": case_aggregated, "hammer": case_hammer}, "ncafs-field-corpus-"))
