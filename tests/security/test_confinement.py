#!/usr/bin/python3
"""Confinement and changing files, through real FUSE mounts.

Run as: test_confinement.py CASE   (CASE: swap, flip, fifo, rewrite, fdlimit)
Environment: NCAFS_BIN (the ncafs executable, set by CMake), NCAFS_SKIP_FUSE=1
to report "skipped" (exit 77) where /dev/fuse is unusable.

Every expectation is computed here from the inputs: the secret's distinctive
bytes must never appear, a rewritten partition must read as exactly its old
or its new values (which differ at every element), and the 200-partition
aggregation must equal the master array make_aggregations computes itself.
"""
import errno
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import make_aggregations  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fail, fuse_usable, read_netcdf4, run_cases  # noqa: E402

SECRET_BYTES = b"\xde\xadSECRET\xbe\xef" * 4096  # 40 KiB of a pattern nothing else holds
SECRET_VALUE = 31337.0                         # every value of the secret netCDF file


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def flip_symlink(link, targets, stop):
    """Atomically re-points link between targets until stop is set."""
    tmp = link + ".tmp"
    i = 0
    while not stop.is_set():
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink(targets[i % 2], tmp)
        os.rename(tmp, link)
        i += 1


def run_readers(count, read_once, seconds):
    """count threads call read_once() for `seconds`; returns their errors."""
    errors = []
    stop = time.time() + seconds

    def loop():
        try:
            while time.time() < stop:
                read_once()
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=loop) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
        check(not t.is_alive(), "a reader did not return within %d s" % (seconds + 120))
    return errors


def direct_read(path):
    """The whole file through O_DIRECT: every byte comes from ncafs, none
    from the kernel's page cache."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        chunks = []
        while True:
            chunk = os.pread(fd, 1 << 20, sum(len(c) for c in chunks))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def secret_netcdf(path, shape):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        for i, n in enumerate(shape):
            ds.createDimension("d%d" % i, n)
        v = ds.createVariable("tas", "f4", tuple("d%d" % i for i in range(len(shape))), fill_value=False)
        v.units = "K"
        v[...] = np.full(shape, SECRET_VALUE, dtype="f4")


# (a) ------------------------------------------------------------------------
def case_swap(work):
    src, secret = os.path.join(work, "src"), os.path.join(work, "secret")
    os.makedirs(os.path.join(src, "userdir", "sub"))
    os.makedirs(os.path.join(src, "userdir", "inner"))
    os.makedirs(os.path.join(secret, "deeper"))
    write(os.path.join(src, "userdir", "sub", "mine.txt"), b"mine\n")
    write(os.path.join(src, "userdir", "inner", "ok.txt"), b"inside\n")
    write(os.path.join(secret, "shadow.txt"), SECRET_BYTES)
    write(os.path.join(secret, "deeper", "key.txt"), SECRET_BYTES)
    with Mount(src) as m:
        check(os.listdir(m.path("userdir", "sub")) == ["mine.txt"], "sub lists its file")
        sub = os.path.join(src, "userdir", "sub")
        for target in (secret, os.path.relpath(secret, os.path.dirname(sub))):
            if os.path.islink(sub):
                os.unlink(sub)
            else:
                os.rename(sub, sub + ".old")
            os.symlink(target, sub)
            for attempt in range(3):  # also after the kernel's caches expire
                try:
                    names = os.listdir(m.path("userdir", "sub"))
                except OSError:
                    names = []
                check(not {"shadow.txt", "deeper"} & set(names), "secret listed through %s: %s" % (target, names))
                for rel in ("shadow.txt", "deeper/key.txt"):
                    try:
                        with open(m.path("userdir", "sub", rel), "rb") as f:
                            data = f.read()
                    except OSError:
                        continue
                    check(b"SECRET" not in data, "secret %s read through %s" % (rel, target))
                time.sleep(1.1)
        # A symlink inside SOURCE that stays inside is still followed.
        os.unlink(sub)
        os.symlink("inner", sub)
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                if os.listdir(m.path("userdir", "sub")) == ["ok.txt"]:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            fail("an inside symlink is no longer followed")
        check(open(m.path("userdir", "sub", "ok.txt"), "rb").read() == b"inside\n", "inside symlink reads")


# (b) ------------------------------------------------------------------------
def case_flip(work):
    src, secret = os.path.join(work, "src"), os.path.join(work, "secret")
    os.makedirs(src)
    os.makedirs(secret)
    inside = bytes(range(256)) * 160  # 40 KiB, no SECRET pattern
    write(os.path.join(src, "inside.bin"), inside)
    write(os.path.join(secret, "shadow.bin"), SECRET_BYTES)
    agg = os.path.join(src, "agg")
    want = make_aggregations.write_aggregation(agg, "flipagg", ["t", "x"], {"t": 8, "x": 50},
                                               {"t": [4, 4], "x": [50]})
    part = os.path.join(agg, "part_01_00.nc")
    os.rename(part, os.path.join(agg, "real_01.nc"))
    secret_netcdf(os.path.join(secret, "part.nc"), [4, 50])
    secret_pattern = np.full(50, SECRET_VALUE, dtype=">f4").tobytes()
    stop = threading.Event()
    flippers = [
        threading.Thread(target=flip_symlink, args=(os.path.join(src, "flip.bin"),
                                                    [os.path.join(src, "inside.bin"),
                                                     os.path.join(secret, "shadow.bin")], stop)),
        threading.Thread(target=flip_symlink, args=(part, ["real_01.nc", os.path.join(secret, "part.nc")], stop)),
    ]
    outcomes = {"inside": 0, "error": 0, "aggregation": 0, "aggregation error": 0}
    lock = threading.Lock()
    with Mount(src) as m:
        # Before the flipping: the aggregation reads as its master.
        os.symlink("real_01.nc", part)
        check(np.array_equal(read_netcdf4(m.path("agg", "flipagg.nc"), "tas"), want["master"]), "master before")
        # The flipping partition's values in the virtual file: read alone, they
        # come from the partition file itself (not from computed, cached blocks).
        part_bytes = want["master"][4:8].astype(">f4").tobytes()
        at = direct_read(m.path("agg", "flipagg.nc")).find(part_bytes)
        check(at > 0, "the partition's values lie in the virtual file")
        os.unlink(part)

        def read_real_file():
            try:
                data = direct_read(m.path("flip.bin"))
            except OSError:
                with lock:
                    outcomes["error"] += 1
                return
            check(b"SECRET" not in data, "a read of flip.bin served the secret's bytes")
            with lock:
                outcomes["inside" if data == inside else "error"] += 1

        def read_aggregation():
            fd = os.open(m.path("agg", "flipagg.nc"), os.O_RDONLY | os.O_DIRECT)
            try:
                data = os.pread(fd, len(part_bytes), at)
            except OSError:
                with lock:
                    outcomes["aggregation error"] += 1
                return
            finally:
                os.close(fd)
            check(secret_pattern not in data, "a read of the aggregation served the secret partition's values")
            check(data == part_bytes, "a read of the aggregation gave bytes of neither partition")
            with lock:
                outcomes["aggregation"] += 1

        for t in flippers:
            t.start()
        try:
            errors = run_readers(8, read_aggregation, 20) + run_readers(8, read_real_file, 20)
        finally:
            stop.set()
            for t in flippers:
                t.join()
        for e in errors:
            raise e
        check(m.alive(), "ncafs died during the flipping")
    print("flip outcomes:", outcomes)
    check(outcomes["inside"] > 0, "no read of flip.bin succeeded (the test did not exercise the inside file)")


# (c) ------------------------------------------------------------------------
def timed(what, fn, limit):
    start = time.time()
    result = fn()
    took = time.time() - start
    print("%s: %.3f s" % (what, took))
    check(took < limit, "%s took %.1f s (a FIFO blocked it?)" % (what, took))
    return result


def case_fifo(work):
    src = os.path.join(work, "src")
    agg = os.path.join(src, "agg")
    make_aggregations.write_aggregation(agg, "pipes", ["t", "x"], {"t": 8, "x": 5}, {"t": [4, 4], "x": [5]})
    fifo_part = os.path.join(agg, "part_01_00.nc")
    os.unlink(fifo_part)
    os.mkfifo(fifo_part)
    os.mkfifo(os.path.join(src, "pipe.nc"))
    write(os.path.join(src, "text.txt"), b"text\n")
    # `ncafs check` on an aggregation naming a FIFO returns, with the reason.
    r = timed("ncafs check", lambda: subprocess.run([NCAFS, "check", os.path.join(agg, "pipes.nca")],
                                                      capture_output=True, text=True, timeout=120), 60)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and "FIFO" in out and "part_01_00.nc" in out,
          "ncafs check did not report the FIFO partition:\n" + out)
    with Mount(src) as m:
        names = timed("ls", lambda: os.listdir(m.mnt), 10)
        check("pipe.nc" not in names and "pipe.ds" not in names, "a FIFO is listed: %s" % names)
        try:
            os.stat(m.path("pipe.nc"))
            fail("a FIFO named *.nc is shown")
        except FileNotFoundError:
            pass

        def read_aggregation():
            try:
                with open(m.path("agg", "pipes.nc"), "rb") as f:
                    f.read()
            except OSError as e:
                check(e.errno == errno.EIO, "expected EIO, got %s" % e)
                return
            fail("the aggregation with a FIFO partition read without error")

        timed("aggregation read", read_aggregation, 10)
        readers = [threading.Thread(target=lambda: [read_aggregation() for _ in range(20)]) for _ in range(6)]
        for t in readers:
            t.start()
        for _ in range(5):  # the mount stays responsive meanwhile
            timed("ls while readers hit the FIFO", lambda: os.listdir(m.path("agg")), 10)
            check(timed("real file read", lambda: open(m.path("text.txt"), "rb").read(), 10) == b"text\n", "text.txt")
        for t in readers:
            t.join(120)
            check(not t.is_alive(), "a reader of the FIFO aggregation hangs")


# (d) ------------------------------------------------------------------------
SETTLE_S = 0.3


def case_rewrite(work):
    src, scratch = os.path.join(work, "src"), os.path.join(work, "scratch")
    agg = os.path.join(src, "agg")
    make_aggregations.write_aggregation(agg, "rw", ["t", "x"], {"t": 16, "x": 500}, {"t": [8, 8], "x": [500]},
                                        dtype="f8")
    part = os.path.join(agg, "part_01_00.nc")
    os.makedirs(scratch)
    old_values = np.arange(8 * 500, dtype="f8").reshape(8, 500) + 1000.5
    new_values = -old_values  # differs at every element
    contents = []
    for name, values in (("old", old_values), ("new", new_values)):
        path = os.path.join(scratch, name + ".nc")
        with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("t", 8)
            ds.createDimension("x", 500)
            v = ds.createVariable("tas", "f8", ("t", "x"), fill_value=False)
            v.units = "K"
            v[...] = values
        contents.append(open(path, "rb").read())
    check(len(contents[0]) == len(contents[1]), "old and new partitions have one layout")
    write(part, contents[0])
    old_bytes, new_bytes = old_values.astype(">f8").tobytes(), new_values.astype(">f8").tobytes()
    counts = {"old": 0, "new": 0, "EIO": 0}
    lock = threading.Lock()
    # "Changed within the last second" shortened by the test-only switch to
    # SETTLE_S, still far above the writer's 10 ms between halves and 20 ms
    # between versions (the real window is tested by tests/io/open_file_test.cpp).
    os.environ["NCAFS_TEST_SETTLE_MS"] = str(int(SETTLE_S * 1000))
    with Mount(src) as m:
        whole = open(m.path("agg", "rw.nc"), "rb").read()
        at = whole.find(old_bytes)
        check(at > 0, "the partition's values lie in the virtual file")
        stop = threading.Event()

        def rewrite():
            i = 0
            while not stop.is_set():
                before = os.stat(part)
                fd = os.open(part, os.O_WRONLY)  # in place: same inode
                try:
                    data = contents[(i + 1) % 2]
                    if i % 2:  # one write(2)
                        check(os.pwrite(fd, data, 0) == len(data), "one write")
                    else:  # two, with a pause: half a version stays readable for 10 ms
                        half = len(data) // 2
                        check(os.pwrite(fd, data[:half], 0) == half, "first half written")
                        time.sleep(0.01)
                        check(os.pwrite(fd, data[half:], half) == len(data) - half, "second half written")
                finally:
                    os.close(fd)
                if i % 3 == 0:  # restore the old mtime: only ctime tells
                    os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
                i += 1
                time.sleep(0.02)

        def read_once():
            # O_DIRECT: every read reaches ncafs (one request: 32000 bytes),
            # not the kernel's page cache.
            fd = os.open(m.path("agg", "rw.nc"), os.O_RDONLY | os.O_DIRECT)
            try:
                data = os.pread(fd, len(old_bytes), at)
            except OSError as e:
                check(e.errno == errno.EIO, "expected EIO, got %s" % e)
                with lock:
                    counts["EIO"] += 1
                return
            finally:
                os.close(fd)
            kind = "old" if data == old_bytes else "new" if data == new_bytes else None
            if kind is None:
                got = np.frombuffer(data, dtype=">f8")
                mixed = int(np.sum(got == old_values.ravel())), int(np.sum(got == new_values.ravel()))
                first_new = int(np.argmax(got == new_values.ravel()))
                first_old = int(np.argmax(got == old_values.ravel()))
                fail("a read mixed two versions: %d old and %d new of %d values (first old at %d, first new at %d)"
                     % (mixed + (got.size, first_old, first_new)))
            with lock:
                counts[kind] += 1

        writer = threading.Thread(target=rewrite)
        writer.start()
        try:
            errors = run_readers(8, read_once, 20)
        finally:
            stop.set()
            writer.join()
        for e in errors:
            raise e
        # Each version, written with the mtime put back, is what a whole read
        # (header and both partitions, computed) of a new open gives.
        for version, want in ((0, old_bytes), (1, new_bytes), (0, old_bytes)):
            before = os.stat(part)
            fd = os.open(part, os.O_WRONLY)
            os.pwrite(fd, contents[version], 0)
            os.close(fd)
            os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
            time.sleep(SETTLE_S + 0.05)  # no longer "changed within the last second"
            whole = direct_read(m.path("agg", "rw.nc"))
            check(whole[at:at + len(want)] == want, "after a rewrite restoring the mtime, version %d is read" % version)
    print("rewrite outcomes:", counts)
    check(counts["old"] > 0 and counts["new"] > 0, "the readers did not see both versions: %s" % counts)


# (e) ------------------------------------------------------------------------
class LimitedMount(Mount):
    """Mount with the daemon's RLIMIT_NOFILE set to `limit`."""

    def __init__(self, source, limit):
        super().__init__(source)
        self.limit = limit

    def __enter__(self):
        popen = subprocess.Popen
        limit = self.limit

        def limited(*args, **kwargs):
            kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
            return popen(*args, **kwargs)

        subprocess.Popen = limited
        try:
            return super().__enter__()
        finally:
            subprocess.Popen = popen


def case_fdlimit(work):
    src = os.path.join(work, "src")
    want = make_aggregations.write_aggregation(os.path.join(src, "many"), "many", ["t", "x"], {"t": 200, "x": 3},
                                               {"t": [1] * 200, "x": [3]})
    real_files = {"p%d.txt" % i: os.urandom(3000 + i) for i in range(5)}
    for name, data in real_files.items():
        write(os.path.join(src, name), data)
    with LimitedMount(src, 64) as m:
        limit = open("/proc/%d/limits" % m.process.pid).read()
        check(any(line.startswith("Max open files") and line.split()[3] == "64" for line in limit.splitlines()),
              "the daemon runs with 64 descriptors:\n" + limit)
        for rounds in range(2):
            for name, data in real_files.items():
                check(open(m.path(name), "rb").read() == data, "%s reads whole under ulimit -n 64" % name)
            got = read_netcdf4(m.path("many", "many.nc"), "tas")
            check(np.array_equal(got, want["master"]), "the 200-partition aggregation reads whole and right")
        print("descriptors open in the daemon after the reads: %d" % len(os.listdir("/proc/%d/fd" % m.process.pid)))
        check("Too many open files" not in m.log_text(), "the daemon ran out of descriptors:\n" + m.log_text())


CASES = {"swap": case_swap, "flip": case_flip, "fifo": case_fifo, "rewrite": case_rewrite, "fdlimit": case_fdlimit}


def main():
    return run_cases(CASES, "ncafs-security-")


if __name__ == "__main__":
    sys.exit(main())
