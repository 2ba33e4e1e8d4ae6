#!/usr/bin/python3
"""Finds mutated netCDF-4 files on which ncdump crashes or hangs.

usage: mutate_netcdf4.py OUT_DIR [--crashes N] [--hangs N] [--minutes M] [--seed S]

Writes a small valid netCDF-4 file with netCDF4-python (deflated tas(time,
lat, lon) on an UNLIMITED time, a scalar string variable, attributes), then
flips a few of its bytes at random, again and again, and runs `ncdump` on
each mutant: one that dies of a signal is kept as OUT_DIR/crash_NN.nc4, one
that runs past 5 s as OUT_DIR/hang_NN.nc4 (with libhdf5 1.10.8 both turn up
within minutes). The files kept feed tests/security/test_library_containment.py
(case mutants), which drops them into a mounted SOURCE.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np


def write_seed(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 4)
        ds.createDimension("lon", 5)
        ds.title = "mutation seed"
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "hours since 2000-01-01"
        t[:] = np.arange(3)
        v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, chunksizes=(1, 4, 5))
        v.units = "K"
        v[:] = np.arange(60, dtype="f4").reshape(3, 4, 5)
        ds.createVariable("note", str, ())[...] = "expver 1"


def mutate(seed, rng):
    data = bytearray(seed)
    for _ in range(rng.randint(1, 6)):
        # Often within the first kilobytes (superblock, root group), else
        # anywhere (object headers, B-trees, the global heap of the strings).
        at = rng.randrange(min(len(data), 4096)) if rng.random() < 0.5 else rng.randrange(len(data))
        data[at] = rng.randrange(256) if rng.random() < 0.5 else data[at] ^ (1 << rng.randrange(8))
    return bytes(data)


def ncdump(path, seconds):
    """ncdump's exit status on path, None when it ran past `seconds`."""
    try:
        return subprocess.run(["ncdump", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=seconds).returncode
    except subprocess.TimeoutExpired:
        return None


def verdict(path):
    """'crash', 'hang' or None for ncdump on path. A run past 5 s is tried
    again for 60 s: on a busy machine a slow run is not a loop."""
    code = ncdump(path, 5)
    if code is None:
        code = ncdump(path, 60)
        if code is None:
            return "hang"
    return "crash" if code < 0 else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--crashes", type=int, default=3)
    p.add_argument("--hangs", type=int, default=1)
    p.add_argument("--minutes", type=float, default=20)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="ncafs-mutate-")
    seed_path = os.path.join(work, "seed.nc4")
    write_seed(seed_path)
    with open(seed_path, "rb") as f:
        seed = f.read()
    found = {"crash": 0, "hang": 0}
    wanted = {"crash": a.crashes, "hang": a.hangs}
    deadline = time.monotonic() + a.minutes * 60
    tried = 0
    mutant = os.path.join(work, "mutant.nc4")
    while time.monotonic() < deadline and any(found[k] < wanted[k] for k in found):
        data = mutate(seed, rng)
        with open(mutant, "wb") as f:
            f.write(data)
        tried += 1
        if tried % 500 == 0:
            print("%d mutants tried" % tried, flush=True)
        kind = verdict(mutant)
        if kind and found[kind] < wanted[kind]:
            name = os.path.join(a.out, "%s_%02d.nc4" % (kind, found[kind]))
            with open(name, "wb") as f:
                f.write(data)
            found[kind] += 1
            print("%s after %d mutants" % (name, tried), flush=True)
    os.unlink(mutant)
    os.unlink(seed_path)
    os.rmdir(work)
    print("tried %d mutants: %d crash(es), %d hang(s)" % (tried, found["crash"], found["hang"]))
    return 0 if all(found[k] >= wanted[k] for k in found) else 1


if __name__ == "__main__":
    sys.exit(main())
