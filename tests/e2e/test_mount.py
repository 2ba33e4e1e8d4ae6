#!/usr/bin/python3
"""End-to-end tests of ncafs through real FUSE mounts.

Run as: test_mount.py CASE   (CASE: data, reads, errors, helper, views, aggregate; see CASES)
Environment: NCAFS_BIN (the ncafs executable, set by CMake), NCAFS_SKIP_FUSE=1
to report "skipped" (exit 77) instead of failing where /dev/fuse is unusable.

Every expectation comes from an independent source: the master arrays are
computed by the generator (make_aggregations.py) from the inputs, the
materialised file is written by NCO's ncrcat, and the virtual files are read
by ncdump, netCDF4-python (netcdf-c), scipy.io.netcdf and byte reads (pread).
"""
import concurrent.futures
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_aggregations  # noqa: E402

SKIP = 77
NCAFS = os.environ.get("NCAFS_BIN", "ncafs")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def fuse_usable():
    """None when FUSE mounts can work here, else the reason."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return "/dev/fuse cannot be opened: %s" % e.strerror
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed"
    return None


def require_fuse():
    """Returns when FUSE mounts can work here; else exits 77 (SKIPPED, with
    NCAFS_SKIP_FUSE=1) or fails naming the reason."""
    reason = fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            sys.exit(SKIP)
        fail(reason + " (the end-to-end tests mount real file systems; set NCAFS_SKIP_FUSE=1 to skip them)")


class Mount:
    """ncafs SOURCE MNT -f in the background of this process; always unmounted."""

    def __init__(self, source, options=None, foreground=True):
        self.source = source
        self.options = options
        self.mnt = tempfile.mkdtemp(prefix="ncafs-mnt-")
        self.log = tempfile.NamedTemporaryFile(prefix="ncafs-log-", suffix=".txt", delete=False)
        self.process = None

    def __enter__(self):
        cmd = [NCAFS, self.source, self.mnt, "-f"]
        if self.options:
            cmd += ["-o", self.options]
        self.process = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while not os.path.ismount(self.mnt):
            if self.process.poll() is not None:
                self._cleanup_dir()
                fail("ncafs exited with %d before mounting:\n%s" % (self.process.returncode, self.log_text()))
            if time.time() > deadline:
                self.__exit__(None, None, None)
                fail("mount did not appear within 30 s")
            time.sleep(0.05)
        return self

    def path(self, *names):
        return os.path.join(self.mnt, *names)

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.process.poll() is None

    def __exit__(self, *exc):
        refused = ""
        deadline = time.monotonic() + 20  # a loaded machine may still be answering the kernel
        while os.path.ismount(self.mnt) and time.monotonic() < deadline:
            r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, text=True)
            if r.returncode == 0:
                break
            refused = r.stderr.strip()
            time.sleep(0.2)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            print("ncafs still running 30 s after the unmount (fusermount3 said: %s); killed" % (refused or "nothing"))
            self.process.kill()
            code = self.process.wait()
        self._cleanup_dir()
        log = self.log_text()
        os.unlink(self.log.name)
        if exc[0] is not None:  # the case failed: what the daemon said helps
            print("ncafs exited with %s; its log (last 4,000 characters):\n%s" % (code, log[-4000:]))
        if exc[0] is None:
            check("AddressSanitizer" not in log and "runtime error" not in log, "sanitizer report:\n" + log)
            check(code == 0, "ncafs exited with %d after unmount:\n%s" % (code, log))
        return False

    def _cleanup_dir(self):
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass


def ncdump_variable(path, var):
    """The `var = ... ;` block of ncdump -v var (data only, not the header)."""
    out = subprocess.run(["ncdump", "-v", var, path], capture_output=True, text=True, check=True).stdout
    data = out[out.index("\ndata:\n"):]
    start = data.index("\n " + var + " =")
    end = data.index(";", start)
    return data[start:end + 1]


def read_netcdf4(path, var):
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds.variables[var]
        v.set_auto_maskandscale(False)
        return np.array(v[...])


def read_scipy(path, var):
    import scipy.io
    with scipy.io.netcdf_file(path, "r", mmap=False) as f:
        return np.array(f.variables[var].data).copy()


def build_source(root):
    """Generates every test aggregation under root; returns {name: info}."""
    infos = {}
    for name, make in make_aggregations.ALL.items():
        infos[name] = make(os.path.join(root, name), name)
    return infos


# ----------------------------------------------------------------- cases

def case_data(work):
    source = os.path.join(work, "src")
    infos = build_source(source)
    monthly = os.path.join(source, "monthly")
    parts = sorted(os.path.join(monthly, n) for n in os.listdir(monthly) if n.startswith("part_") and n.endswith(".nc"))
    concatenated = os.path.join(work, "ncrcat.nc")
    subprocess.run(["ncrcat", "-O", "-h"] + parts + [concatenated], check=True)

    with Mount(source) as m:
        listing = sorted(os.listdir(m.path("monthly")))
        check("monthly.nc" in listing and "monthly.nca" not in listing,
              "monthly.nca should appear as monthly.nc: %s" % listing)
        check(len([n for n in listing if n.startswith("part_") and n.endswith(".nc")]) == 12,
              "partitions listed as themselves")
        with open(os.path.join(monthly, "part_00_00_00.nc"), "rb") as f:
            real = f.read()
        with open(m.path("monthly", "part_00_00_00.nc"), "rb") as f:
            check(f.read() == real, "a real file must be served with its own bytes")

        virtual = m.path("monthly", "monthly.nc")
        for var in ("tas", "time"):
            check(ncdump_variable(virtual, var) == ncdump_variable(concatenated, var),
                  "ncdump -v %s of the virtual file differs from the ncrcat file" % var)

        for name, info in infos.items():
            path = m.path(name, name + ".nc")
            st = os.stat(path)
            check(st.st_blksize == 64 << 10, "st_blksize should be 64 KiB (netcdf-c reads 4 x st_blksize), is %d" % st.st_blksize)
            check(st.st_mode & 0o222 == 0, "virtual files carry no write bits")
            got = read_netcdf4(path, info["var"])
            check(got.shape == info["master"].shape and np.array_equal(got, info["master"]),
                  "netCDF4-python: %s/%s differs from the master array" % (name, info["var"]))
            with open(path, "rb") as f:
                magic = f.read(4)
            if magic in (b"CDF\x01", b"CDF\x02"):
                check(np.array_equal(read_scipy(path, info["var"]), info["master"]),
                      "scipy.io.netcdf: %s differs from the master array" % name)
            copy = os.path.join(work, name + "-copy.nc")
            subprocess.run(["cp", path, copy], check=True)
            check(np.array_equal(read_netcdf4(copy, info["var"]), info["master"]),
                  "cp of %s: netcdf-c reads different data" % name)
            if info["coordinate"] is not None:
                check(np.array_equal(read_netcdf4(path, info["coordinate_name"]), info["coordinate"]),
                      "coordinate variable of %s differs" % name)
        with open(m.path("counts", "counts.nc"), "rb") as f:
            check(f.read(4) == b"CDF\x05", "a uint64 master needs CDF-5")
        with open(m.path("monthly", "monthly.nc"), "rb") as f:
            check(f.read(4) == b"CDF\x01", "a small float master fits CDF-1")
        check(m.alive(), "daemon died")

    # cdf_version=2 is honoured, and export with the same option gives the same bytes.
    with Mount(source, "cdf_version=2") as m:
        path = m.path("monthly", "monthly.nc")
        with open(path, "rb") as f:
            served = f.read()
        check(served[:4] == b"CDF\x02", "cdf_version=2 ignored")
        exported = os.path.join(work, "export.nc")
        subprocess.run([NCAFS, "export", os.path.join(monthly, "monthly.nca"), "-o", exported,
                        "-o", "cdf_version=2"], check=True)
        with open(exported, "rb") as f:
            check(f.read() == served, "export bytes differ from the mounted file")
        check(np.array_equal(read_scipy(path, "tas"), infos["monthly"]["master"]), "scipy on CDF-2")


def case_reads(work):
    source = os.path.join(work, "src")
    info = make_aggregations.write_aggregation(
        os.path.join(source, "big"), "big", ["time", "y", "x"], {"time": 40, "y": 50, "x": 60},
        {"time": [5, 3, 12, 20], "y": [50], "x": [25, 35]}, dtype="f8")
    exported = os.path.join(work, "big-export.nc")
    subprocess.run([NCAFS, "export", os.path.join(source, "big", "big.nca"), "-o", exported], check=True)
    with open(exported, "rb") as f:
        expected = f.read()
    check(np.array_equal(read_netcdf4(exported, "tas"), info["master"]), "export is not the master array")
    rng = random.Random(20240601)
    with Mount(source) as m:
        path = m.path("big", "big.nc")
        check(os.stat(path).st_size == len(expected), "st_size differs from export size")
        fd = os.open(path, os.O_RDONLY)
        try:
            for i in range(3000):
                offset = rng.randrange(0, len(expected) + 100)
                length = rng.choice([1, 7, 100, 4096, 65536, 1 << 20, rng.randrange(1, 300000)])
                got = os.pread(fd, length, offset)
                check(got == expected[offset:offset + length],
                      "pread(%d, %d) differs from export (%d bytes back)" % (offset, length, len(got)))
        finally:
            os.close(fd)

        def reader(seed):
            r = random.Random(seed)
            fd = os.open(path, os.O_RDONLY)
            try:
                for _ in range(200):
                    offset = r.randrange(0, len(expected))
                    length = r.randrange(1, 1 << 20)
                    if os.pread(fd, length, offset) != expected[offset:offset + length]:
                        return "reader %d: wrong bytes at %d+%d" % (seed, offset, length)
                with open(path, "rb") as f:
                    if f.read() != expected:
                        return "reader %d: sequential read differs" % seed
            finally:
                os.close(fd)
            return None

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            for problem in pool.map(reader, range(16)):
                check(problem is None, str(problem))
        check(m.alive(), "daemon died")


def case_errors(work):
    source = os.path.join(work, "src")
    info = make_aggregations.monthly(os.path.join(source, "m"), "m")
    # A broken aggregation (bad JSON) stays visible as its real bytes.
    broken = os.path.join(source, "broken")
    make_aggregations.split_2d(broken, "tiles")
    import netCDF4
    with netCDF4.Dataset(os.path.join(broken, "tiles.nca"), "a") as ds:
        ds.variables["tas"].nca_array = "{'Partitions': [ this is not json"
    # A collision: aggregation c.nca beside a real c.nc.
    collide = os.path.join(source, "collide")
    make_aggregations.cdf5_type(collide, "c")
    with open(os.path.join(collide, "c.nc"), "wb") as f:
        f.write(b"just bytes\n")

    with Mount(source, "cache_timeout=0") as m:
        names = os.listdir(m.path("broken"))
        check("tiles.nca" in names and "tiles.nc" not in names, "broken aggregation listing: %s" % names)
        with open(m.path("broken", "tiles.nca"), "rb") as f, open(os.path.join(broken, "tiles.nca"), "rb") as g:
            check(f.read() == g.read(), "broken aggregation must be served as its real bytes")
        names = os.listdir(m.path("collide"))
        check("c.nc" in names and "c.nca" in names, "collision listing: %s" % names)
        with open(m.path("collide", "c.nc"), "rb") as f:
            check(f.read() == b"just bytes\n", "the real c.nc must win over the virtual one")

        # Read-only everywhere.
        virtual = m.path("m", "m.nc")
        for what, action in [
            ("open for write", lambda: open(virtual, "r+b")),
            ("create", lambda: open(m.path("m", "new.txt"), "wb")),
            ("mkdir", lambda: os.mkdir(m.path("m", "d"))),
            ("unlink", lambda: os.unlink(m.path("m", "part_00_00_00.nc"))),
            ("rename", lambda: os.rename(m.path("m", "m.nc"), m.path("m", "n.nc"))),
            ("chmod", lambda: os.chmod(virtual, 0o777)),
            ("truncate", lambda: os.truncate(virtual, 0)),
        ]:
            try:
                action()
                fail(what + " succeeded on a read-only mount")
            except OSError as e:
                check(e.errno == errno.EROFS, "%s: expected EROFS, got %s" % (what, e))

        # Delete one partition while mounted: EIO on its bytes only.
        size = os.stat(virtual).st_size
        exported = os.path.join(work, "m-export.nc")
        subprocess.run([NCAFS, "export", os.path.join(source, "m", "m.nca"), "-o", exported], check=True)
        with open(exported, "rb") as f:
            expected = f.read()
        check(len(expected) == size, "export size")
        os.unlink(os.path.join(source, "m", "part_05_00_00.nc"))
        # Where does month 5 lie? Find by the known values: master record 10
        # (records interleave the time coordinate, so search one record).
        row = info["master"][10].astype(">f4").tobytes()
        at = expected.find(row)
        check(at > 0, "could not locate partition 5 in the exported bytes")
        # O_DIRECT: the kernel passes each read as asked, without a readahead
        # window that would reach into the missing partition's bytes.
        fd = os.open(virtual, os.O_RDONLY | os.O_DIRECT)
        try:
            try:
                os.pread(fd, 4096, at)
                fail("reading the bytes of a deleted partition succeeded")
            except OSError as e:
                check(e.errno == errno.EIO, "deleted partition: expected EIO, got %s" % e)
            check(os.pread(fd, 4096, 0) == expected[:4096], "header still readable")
            before = info["master"][9].astype(">f4").tobytes()
            first = expected.find(before)
            check(os.pread(fd, len(before), first) == before, "other partitions still readable")
        finally:
            os.close(fd)
        check("part_05_00_00.nc" in m.log_text(), "the EIO must be logged naming the partition:\n" + m.log_text())
        check(m.alive(), "daemon died after EIO")
        check(os.stat(virtual).st_size == size, "getattr must not fail because a partition is bad")

        # Change the aggregation: its size and content follow.
        make_aggregations.write_aggregation(os.path.join(source, "m"), "m", ["time", "lat", "lon"],
                                            {"time": 4, "lat": 3, "lon": 2},
                                            {"time": [2, 2], "lat": [3], "lon": [2]})
        new_master = read_netcdf4(os.path.join(source, "m", "part_00_00_00.nc"), "tas")
        time.sleep(0.05)
        got = read_netcdf4(virtual, "tas")
        check(got.shape == (4, 3, 2) and np.array_equal(got[:2], new_master),
              "a changed aggregation must be served anew, got shape %s" % (got.shape,))
        check(m.alive(), "daemon died")


def case_helper(work):
    """mount -t fuse.ncafs through mount.fuse3 (ncafs found on PATH), umount, SIGTERM."""
    source = os.path.join(work, "src")
    info = make_aggregations.monthly(os.path.join(source, "m"), "m")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(NCAFS)) + ":" + env.get("PATH", "")
    mnt = tempfile.mkdtemp(prefix="ncafs-mnt-")
    try:
        # mount(8) hands its helper a fixed PATH (not ours), so `-t fuse.ncafs`
        # only finds an installed ncafs; otherwise use the equivalent
        # mount.fuse3 form that names the program: -t fuse PROGRAM#SOURCE.
        default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        if shutil.which("ncafs", path=default_path):
            how = ["-t", "fuse.ncafs", source]
        else:
            how = ["-t", "fuse", os.path.abspath(NCAFS) + "#" + source]
        # No ro: mount(8) then passes rw, which ncafs accepts (it is read-only anyway).
        r = subprocess.run(["mount"] + how + [mnt, "-o",
                            "nodev,nosuid,noatime,cdf_version=2,nofail,_netdev,x-systemd.automount"],
                           env=env, capture_output=True, text=True)
        check(r.returncode == 0, "mount %s failed: %s %s" % (" ".join(how), r.stdout, r.stderr))
        check(os.path.ismount(mnt), "not mounted after mount(8) returned")
        path = os.path.join(mnt, "m", "m.nc")
        with open(path, "rb") as f:
            check(f.read(4) == b"CDF\x02", "options did not pass through mount.fuse3")
        check(np.array_equal(read_netcdf4(path, "tas"), info["master"]), "data through mount(8)")
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        check(r.returncode == 0, "umount failed: " + r.stderr)
        check(not os.path.ismount(mnt), "still mounted after umount")
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        os.rmdir(mnt)

    # A failing mount reports its error to the caller (before daemonizing).
    r = subprocess.run([NCAFS, source, "/nonexistent/mnt"], capture_output=True, text=True)
    check(r.returncode != 0 and "nonexistent" in r.stderr, "a bad mountpoint must fail in the foreground")
    with Mount(source, "rw") as m:
        try:
            open(m.path("m", "m.nc"), "r+b")
            fail("-o rw must not make the mount writable")
        except OSError as e:
            check(e.errno in (errno.EROFS, errno.EACCES), "write open under -o rw: %s" % e)

    # SIGTERM and SIGINT unmount cleanly.
    for sig in (signal.SIGTERM, signal.SIGINT):
        m = Mount(source)
        m.__enter__()
        m.process.send_signal(sig)
        try:
            code = m.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            m.__exit__(None, None, None)
            fail("ncafs did not exit on signal %d" % sig)
        check(code == 0, "exit status %d after signal %d" % (code, sig))
        check(not os.path.ismount(m.mnt), "still mounted after signal %d" % sig)
        m.__exit__(None, None, None)


# ----------------------------------------------------------------- views

CLASSIC_CDL = """netcdf single {
dimensions: time = UNLIMITED ; x = 4 ; y = 3 ;
variables:
  float t(time, x) ; t:units = "K" ; t:_FillValue = -999.f ;
  double d(x, y) ; d:long_name = "a double" ;
  short s(y) ; s:scale_factor = 0.5 ; s:_FillValue = -1s ;
  byte b(x) ;
  int i(time) ;
  char c(x) ;
  :title = "views test" ;
data:
  t = 1, 2, 3, 4, 5, -999, 7, 8, 9, 10, 11, 12 ;
  d = 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5 ;
  s = 10, -1, 30 ;
  b = -128, 0, 1, 127 ;
  i = 7, 8, 9 ;
  c = "abcd" ;
}
"""

NC4_CDL = """netcdf h4 {
dimensions: n = 5 ;
variables:
  ubyte u(n) ;
  uint w(n) ;
  int64 l(n) ;
  float f(n) ; f:_FillValue = 9.f ;
data:
  u = 0, 1, 2, 254, 255 ;
  w = 0, 1, 4000000000, 3, 4 ;
  l = -9000000000000, 0, 1, 2, 9000000000000 ;
  f = 1.5, 9, 2.5, _, 3.5 ;
}
"""

DS_DTYPES = {"int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1", "uint16": "u2",
             "uint32": "u4", "uint64": "u8", "float32": "f4", "float64": "f8"}


def decode_ds(path):
    """{name: numpy array} of the numeric variables of a ds-1.0 file, decoded
    here from the spec (version line, one JSON header line, blocks at
    .offset from the body start; mask bits MSB first, 1 = missing, which
    raw views never have)."""
    import json
    with open(path, "rb") as f:
        data = f.read()
    check(data.startswith(b"ds-1.0\n"), "%s: no ds-1.0 line" % path)
    end = data.index(b"\n", 7)
    header = json.loads(data[7:end].decode("utf-8"))
    body = data[end + 1:]
    out = {}
    for key, v in header.items():
        if key == "." or v.get(".type") not in DS_DTYPES:
            continue
        name = key[1:] if key.startswith("\\") else key
        block = body[v[".offset"]:v[".offset"] + v[".len"]]
        check(len(block) == v[".len"], "%s: block of %s runs past the end" % (path, name))
        check(not v[".missing"], "%s: raw view has a mask on %s" % (path, name))
        dtype = np.dtype(("<" if v[".endian"] == "l" else ">") + DS_DTYPES[v[".type"]])
        shape = tuple(v[".size"] or [])
        out[name] = np.frombuffer(block, dtype=dtype).reshape(shape)
    return out


def netcdf4_values(path, numeric_only=True):
    import netCDF4
    values = {}
    with netCDF4.Dataset(path) as ds:
        for name, v in ds.variables.items():
            if numeric_only and v.dtype.kind not in "iuf":
                continue
            v.set_auto_maskandscale(False)
            values[name] = np.array(v[...])
    return values


def same_values(got, want, what):
    check(sorted(got) == sorted(want), "%s: variables %s, expected %s" % (what, sorted(got), sorted(want)))
    for name in want:
        check(got[name].shape == want[name].shape and np.array_equal(got[name], want[name]),
              "%s: %s is %s, expected %s" % (what, name, got[name], want[name]))


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def export(*args):
    subprocess.run([NCAFS, "export"] + list(args), check=True)


def case_views(work):
    source = os.path.join(work, "src")
    v = os.path.join(source, "v")
    os.makedirs(v)
    for name, cdl, kind in [("single", CLASSIC_CDL, "classic"), ("h4", NC4_CDL, "nc4")]:
        cdl_path = os.path.join(work, name + ".cdl")
        with open(cdl_path, "w") as f:
            f.write(cdl)
        subprocess.run(["ncgen", "-k", kind, "-b", "-o", os.path.join(v, name + ".nc"), cdl_path], check=True)
    info = make_aggregations.monthly(os.path.join(source, "m"), "m")
    single = os.path.join(v, "single.nc")
    single_values = netcdf4_values(single)
    # Real .ds and .ncs sources, written by export from the classic file.
    export(single, "--format", "ds", "-o", os.path.join(v, "fromds.ds"))
    export(single, "--format", "ncs", "-o", os.path.join(v, "fromncs.ncs"))
    # netCDF-4 behind a 512-byte HDF5 user block (netcdf-c reads it): a dataset like any other.
    with open(os.path.join(v, "h4.nc"), "rb") as f, open(os.path.join(v, "userblock.h5"), "wb") as out:
        out.write(bytes(512) + f.read())
    # A real file wins over a view: v/h4.ncs is a real text file.
    with open(os.path.join(v, "h4.ncs"), "wb") as f:
        f.write(b"real h4.ncs\n")

    with Mount(source) as m:
        names = set(os.listdir(m.path("v")))
        for n in ("single.nc", "single.ds", "single.ncs", "h4.nc", "h4.ds", "h4.ncs", "fromds.ds", "fromds.nc",
                  "fromds.ncs", "fromncs.ncs", "fromncs.nc", "fromncs.ds"):
            check(n in names, "%s missing from the listing %s" % (n, sorted(names)))
        check(read_file(m.path("v", "h4.ncs")) == b"real h4.ncs\n", "the real h4.ncs must win over the view")
        check(set(os.listdir(m.path("m"))) >= {"m.nc", "m.ds", "m.ncs"}, "aggregation views missing")

        # cp of a view equals export --format of the same file.
        for src, fmt, view in [(single, "ds", m.path("v", "single.ds")),
                               (single, "ncs", m.path("v", "single.ncs")),
                               (os.path.join(source, "m", "m.nca"), "ds", m.path("m", "m.ds")),
                               (os.path.join(source, "m", "m.nca"), "ncs", m.path("m", "m.ncs")),
                               (os.path.join(v, "h4.nc"), "ds", m.path("v", "h4.ds"))]:
            copy = os.path.join(work, "copy." + fmt)
            subprocess.run(["cp", view, copy], check=True)
            exported = os.path.join(work, "export." + fmt)
            export(src, "--format", fmt, "-o", exported)
            check(read_file(copy) == read_file(exported), "cp of %s differs from export --format %s" % (view, fmt))

        # The raw .ds views, decoded here, hold netCDF4-python's raw values.
        same_values(decode_ds(m.path("v", "single.ds")), single_values, "single.ds")
        same_values(decode_ds(m.path("v", "h4.ds")), netcdf4_values(os.path.join(v, "h4.nc")), "h4.ds")
        check({"userblock.ds", "userblock.nc"} <= names, "no views of the HDF5 file with a user block")
        same_values(decode_ds(m.path("v", "userblock.ds")), netcdf4_values(os.path.join(v, "userblock.h5")),
                    "userblock.ds")
        m_ds = decode_ds(m.path("m", "m.ds"))
        check(np.array_equal(m_ds[info["var"]], info["master"]), "m.ds: the master array differs")

        # .nc views of real .ds and .ncs sources read back by netcdf-c.
        same_values(netcdf4_values(m.path("v", "fromds.nc")), single_values, "fromds.nc")
        same_values(netcdf4_values(m.path("v", "fromncs.nc")), single_values, "fromncs.nc")
        with open(m.path("v", "fromncs.nc"), "rb") as f:
            check(f.read(3) == b"CDF", "the .nc view of a .ncs file is netCDF classic")
        # ... and text survives the round trip through ds (char -> str -> char).
        import netCDF4
        with netCDF4.Dataset(m.path("v", "fromds.nc")) as ds:
            check(ds.title == "views test", "global attribute lost through ds")
            check(bytes(ds.variables["c"][:].tobytes()).rstrip(b"\0") == b"abcd", "char variable through ds")
        check(m.alive(), "daemon died")

    # A deflated export decodes (independent decoder) to netCDF4-python's values.
    deflated = os.path.join(work, "deflated.ncs")
    export(single, "--format", "ncs", "--deflate=9", "-o", deflated)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ncstream"))
    import decode_ncstream
    proto = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "codecs", "ncstream", "ncstream.proto")
    pb = decode_ncstream.load_schema(proto, os.path.join(work, "pb"))
    decoded = decode_ncstream.decode(deflated, pb)
    check(any(d.compress == 1 for d, _, _ in decoded.messages), "--deflate wrote no compressed payload")
    same_values({k: a for k, a in decoded.arrays.items() if a.dtype.kind in "iuf"}, single_values, "deflated ncs")
    check(len(read_file(deflated)) != len(read_file(os.path.join(v, "fromncs.ncs"))), "deflate changed nothing")

    # views=nc hides the twins.
    with Mount(source, "views=nc") as m:
        names = set(os.listdir(m.path("v")))
        check(not any(n.endswith(".ds") and n != "fromds.ds" for n in names), "views=nc lists .ds views: %s" % names)
        check("single.ncs" not in names and "m.ds" not in os.listdir(m.path("m")), "views=nc lists twins")
        check(not os.path.exists(m.path("v", "single.ds")), "views=nc: single.ds must not resolve")
        check(os.path.exists(m.path("v", "fromds.nc")), "views=nc keeps the .nc view of a .ds file")


def case_aggregate(work):
    """`ncafs aggregate` writes a CF-1.13 file from time-split partitions given
    out of order; through the mount it reads as NCO's ncrcat of the same files."""
    generated = os.path.join(work, "gen")
    make_aggregations.monthly(generated, "m")
    parts = sorted(n for n in os.listdir(generated) if n.startswith("part_") and n.endswith(".nc"))
    source = os.path.join(work, "src")
    os.makedirs(source)
    for n in parts:
        shutil.copy(os.path.join(generated, n), os.path.join(source, n))
    shuffled = [os.path.join(source, n) for n in parts[1::2] + parts[0::2]]
    concatenated = os.path.join(work, "ncrcat.nc")
    subprocess.run(["ncrcat", "-O", "-h"] + [os.path.join(source, n) for n in parts] + [concatenated], check=True)
    for flavour, extra in (("cf4", []), ("cf3", ["--classic"])):
        out = os.path.join(source, flavour + ".nc")
        subprocess.run([NCAFS, "aggregate", "-o", out] + extra + shuffled, check=True)
        check(subprocess.run([NCAFS, "check", "--verify-coordinates", out]).returncode == 0,
              "ncafs check reports problems in " + out)
    with Mount(source, "cache_timeout=0") as m:
        for flavour in ("cf4", "cf3"):
            virtual = m.path(flavour + ".nc")
            with open(virtual, "rb") as f:
                check(f.read(4) in (b"CDF\x01", b"CDF\x02", b"CDF\x05"), virtual + " is not a classic netCDF view")
            for var in ("tas", "time"):
                check(ncdump_variable(virtual, var) == ncdump_variable(concatenated, var),
                      "ncdump -v %s of %s differs from ncrcat" % (var, virtual))
                got, want = read_netcdf4(virtual, var), read_netcdf4(concatenated, var)
                check(got.shape == want.shape and np.array_equal(got, want),
                      "netCDF4-python reads %s of %s unlike ncrcat's" % (var, virtual))


def case_ncstream_fragments(work):
    """A CF-1.13 aggregation some of whose fragments are ncstream files (the
    .ncs exports of netCDF partitions) is written by `ncafs aggregate` and
    read through the mount like one of netCDF fragments: netCDF4-python reads
    the values NCO's ncrcat of the netCDF sources holds (one format
    dispatcher, codecs/open_dataset.cpp, opens every fragment)."""
    generated = os.path.join(work, "gen")
    make_aggregations.monthly(generated, "m")
    parts = sorted(n for n in os.listdir(generated) if n.startswith("part_") and n.endswith(".nc"))
    concatenated = os.path.join(work, "ncrcat.nc")
    subprocess.run(["ncrcat", "-O", "-h"] + [os.path.join(generated, n) for n in parts] + [concatenated], check=True)
    source = os.path.join(work, "src")
    os.makedirs(source)
    fragments = []
    for i, n in enumerate(parts):
        if i % 3 == 1:  # every third partition as ncstream
            fragments.append(os.path.join(source, n[:-3] + ".ncs"))
            export(os.path.join(generated, n), "--format", "ncs", "-o", fragments[-1])
        else:
            fragments.append(os.path.join(source, n))
            shutil.copy(os.path.join(generated, n), fragments[-1])
    out = os.path.join(source, "cf.nc")
    subprocess.run([NCAFS, "aggregate", "-o", out] + fragments, check=True)
    check(subprocess.run([NCAFS, "check", "--verify-coordinates", out]).returncode == 0,
          "ncafs check reports problems in " + out)
    with Mount(source) as m:
        virtual = m.path("cf.nc")
        for var in ("tas", "time"):
            got, want = read_netcdf4(virtual, var), read_netcdf4(concatenated, var)
            check(got.shape == want.shape and np.array_equal(got, want),
                  "netCDF4-python reads %s of %s unlike ncrcat's of the netCDF sources" % (var, virtual))
        check(m.alive(), "daemon died")


CASES = {"data": case_data, "reads": case_reads, "errors": case_errors, "helper": case_helper, "views": case_views,
         "aggregate": case_aggregate, "ncstream_fragments": case_ncstream_fragments}


def run_cases(cases, prefix, root_because=None):
    """The main of every end-to-end driver: runs the case named by argv[1] in
    a scratch folder; SKIPPED (exit 77) only with NCAFS_SKIP_FUSE=1, or when
    root_because (why the cases need root) is given and we are not root; the
    folder is then searchable by all (users the cases create reach it)."""
    program = os.path.basename(sys.argv[0])
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print("usage: %s {%s}" % (program, "|".join(cases)))
        return 2
    if root_because and os.geteuid() != 0:
        print("SKIPPED: %s must run as root (%s)" % (program, root_because))
        return SKIP
    reason = fuse_usable()
    if reason:
        if os.environ.get("NCAFS_SKIP_FUSE") == "1":
            print("SKIPPED: " + reason)
            return SKIP
        fail(reason + " (the end-to-end tests mount real file systems; set NCAFS_SKIP_FUSE=1 to skip them)")
    work = tempfile.mkdtemp(prefix=prefix)
    if root_because:
        os.chmod(work, 0o755)
    try:
        cases[sys.argv[1]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: " + sys.argv[1])
    return 0


def main():
    return run_cases(CASES, "ncafs-e2e-")


if __name__ == "__main__":
    sys.exit(main())
