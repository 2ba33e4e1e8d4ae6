#!/usr/bin/python3
"""Every claim of a file within a budget; stopping always possible; the
mount never reads itself.

Run as: test_budgets.py CASE
  refs_many    a reference set of 200,000 one-element arrays (600,001
               references, ~69 MB): `stat` of its view answers within 10 s,
               the daemon stays under 512 MiB (VmHWM) and logs one line
               naming the file and the count it refused
  refs_vds     10,000 one-element arrays: `ls -l` of the folder leaves the
               daemon under 512 MiB (the .vds view's index pages)
  refs_huge    1 KB sets declaring 4 and 8 arrays of 2^48 floats: `stat` of
               every view (huge.ncs: 2^20 data messages an array) under 512 MiB
  refs_zstd    a 256 MiB view backed by one 8 KiB zstd chunk: `cat` gives the
               values numcodecs encoded, decoding the chunk once (the daemon's
               CPU time stays far below one decode per 64 KiB block), and 16
               concurrent 4 KiB reads stay under 1 GiB
  cdf_counts   a 40 MB CDF-5 file of 1,000,000 minimal variables and a ds file
               whose header lists 1,000,000 variables: each refused for its
               count, the daemon under 512 MiB
  stop_signal  SIGTERM and SIGINT while a thread is busy with a hostile file:
               the daemon is gone within 2 s
  stop_unmount fusermount3 -u while a thread is busy: gone within 2 s
  self_read    MOUNTPOINT beneath SOURCE, 40 reference sets and 40 NCA
               aggregations naming their own view (../mnt/user/rNN.nc), one
               reader each: each read fails (EIO), a log line says the path leads into
               the mount, and another reader's `cat` of a real file succeeds
  parse_deadline  an NCA aggregation of 200,000 partitions under the
               test-only NCAFS_TEST_PARSE_DEADLINE_MS=1: the listing and
               `stat` answer within 10 s, its aggregated view is left out
               (the file shown only as a real file) with one log line naming the file and
               the parse deadline, and a 3-partition aggregation beside it
               reads the values written
Environment: NCAFS_BIN, NCAFS_SKIP_FUSE=1 (exit 77 where /dev/fuse is unusable).
A stat or a listing may cost the daemon 10 s of CPU (read from /proc, so
tests running beside do not decide it) and hangs past 120 s; the daemon
stops within 2 s; memory bounds are VmHWM from /proc.
"""
import base64
import concurrent.futures
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time

import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mount import Mount, check, run_cases  # noqa: E402
from test_hostile import nca_file, status_kib  # noqa: E402

MIB = 1 << 20
ANSWER = 10  # seconds of the daemon's CPU: what a stat or a listing may cost it
HANG = 120   # seconds of wall time: a stat or a listing that takes longer hangs
STOP = 2     # seconds: the daemon is gone within this after a stop


def peak_mib(mount):
    return status_kib(mount.process.pid, "VmHWM") / 1024.0


def check_peak(mount, bound_mib, what):
    peak = peak_mib(mount)
    print("%s: VmHWM %.0f MiB" % (what, peak))
    check(peak < bound_mib, "%s: the daemon peaked at %.0f MiB (bound %d MiB)" % (what, peak, bound_mib))


def timed(mount, what, fn, cpu_bound=ANSWER):
    """fn() (a stat or a listing through mount): the daemon's CPU it cost is
    bounded, not its wall time, which tests running beside would decide."""
    start, cpu_before = time.monotonic(), cpu_seconds(mount.process.pid)
    result = fn()
    took, cpu = time.monotonic() - start, cpu_seconds(mount.process.pid) - cpu_before
    print("%s: %.2f s, the daemon's CPU %.2f s" % (what, took, cpu))
    check(took < HANG, "%s took %.1f s: it hangs (bound %d s)" % (what, took, HANG))
    check(cpu < cpu_bound, "%s cost the daemon %.1f s of CPU (bound %d s)" % (what, cpu, cpu_bound))
    return result


def stat_or_none(path):
    try:
        return os.stat(path)
    except OSError:
        return None


def zarray(shape, chunks, dtype="<f4", compressor=None, fill=None):
    return json.dumps({"chunks": chunks, "compressor": compressor, "dtype": dtype, "fill_value": fill,
                       "filters": None, "order": "C", "shape": shape, "zarr_format": 2})


def write_refs(path, refs):
    with open(path, "w") as f:
        json.dump({"version": 1, "refs": refs}, f)


def one_element_arrays(path, n):
    """n arrays of one float each, sharing dimension x: 3 n + 1 references."""
    refs = {".zgroup": '{"zarr_format": 2}'}
    one = "base64:" + base64.b64encode(struct.pack("<f", 1.0)).decode()
    meta, attrs = zarray([1], [1]), json.dumps({"_ARRAY_DIMENSIONS": ["x"]})
    for i in range(n):
        name = "v%06d" % i
        refs[name + "/.zarray"] = meta
        refs[name + "/.zattrs"] = attrs
        refs[name + "/0"] = one
    write_refs(path, refs)


# The per-file bound these cases are held to (the default, 1G, leaves room for
# an aggregation of a million partitions).
HELD_TO = "max_file_metadata_mem=256M"


def new_source(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    return src


def expect_logged(mount, *needles):
    lines = [l for l in mount.log_text().splitlines() if all(n in l for n in needles)]
    check(lines, "no log line names %r:\n%s" % (needles, mount.log_text()[-3000:]))
    return lines[0]


def case_refs_many(work):
    src = new_source(work)
    one_element_arrays(os.path.join(src, "many.json"), 200000)
    print("many.json: %.0f MB" % (os.path.getsize(os.path.join(src, "many.json")) / 1e6))
    with Mount(src, HELD_TO) as m:
        for view in ("many.nc", "many.vds", "many.ncs"):
            timed(m, "stat " + view, lambda: stat_or_none(m.path(view)))
        check(m.alive(), "the daemon died")
        check_peak(m, 512, "200,000 arrays")
        line = expect_logged(m, "many.json", "200000 arrays")
        check("max_file_metadata_mem" in line, "the refusal does not name the limit: " + line)


def case_refs_vds(work):
    src = new_source(work)
    one_element_arrays(os.path.join(src, "tenk.json"), 10000)
    with Mount(src, HELD_TO) as m:
        listing = timed(m, "ls -l", lambda: subprocess.run(["ls", "-l", m.mnt], capture_output=True, text=True))
        check("tenk.nc" in listing.stdout, "tenk.nc is not listed:\n" + listing.stdout + listing.stderr)
        if "tenk.vds" in listing.stdout:  # listed: its bytes are what the index says (read its head)
            with open(m.path("tenk.vds"), "rb") as f:
                check(f.read(12) == b"HueDataStore", "the .vds view does not start with its magic")
        with netCDF4.Dataset(m.path("tenk.nc")) as ds:
            check(len(ds.variables) == 10000 and float(ds["v009999"][0]) == 1.0, "tenk.nc does not hold the arrays")
        check_peak(m, 512, "10,000 arrays after ls -l")


def huge_set(path, n):
    refs = {".zgroup": '{"zarr_format": 2}'}
    for i in range(n):
        refs["h%d/.zarray" % i] = zarray([1 << 48], [1 << 24], fill=0.0)
        refs["h%d/.zattrs" % i] = json.dumps({"_ARRAY_DIMENSIONS": ["d%d" % i]})
    write_refs(path, refs)
    check(os.path.getsize(path) < 2048, "the huge set is not small")


def case_refs_huge(work):
    src = new_source(work)
    huge_set(os.path.join(src, "huge.json"), 4)
    huge_set(os.path.join(src, "huger.json"), 8)
    with Mount(src, HELD_TO) as m:
        for name in ("huge", "huger"):
            for ext in ("ncs", "nc", "ds", "vds"):
                timed(m, "stat %s.%s" % (name, ext), lambda: stat_or_none(m.path(name + "." + ext)))
        check(m.alive(), "the daemon died")
        check_peak(m, 512, "arrays of 2^48 floats")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def case_refs_zstd(work):
    import numcodecs
    src = new_source(work)
    n = 64 * MIB  # floats: 256 MiB
    values = np.zeros(n, dtype="<f4")
    values[::4096] = 2.5  # not all fill: the view must carry the decoded values
    stored = numcodecs.Zstd(level=19).encode(values.tobytes())
    print("one zstd chunk of %d bytes decodes to %d" % (len(stored), values.nbytes))
    refs = {".zgroup": '{"zarr_format": 2}',
            "z/.zarray": zarray([n], [n], compressor={"id": "zstd", "level": 19}),
            "z/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
            "z/0": "base64:" + base64.b64encode(stored).decode()}
    write_refs(os.path.join(src, "z.json"), refs)
    with Mount(src) as m:
        # Cold: 16 readers of the one chunk at once wait for one decode, not 16.
        size = os.path.getsize(m.path("z.nc"))
        rng = np.random.default_rng(7)

        def pread_at(offset):
            fd = os.open(m.path("z.nc"), os.O_RDONLY)
            try:
                return os.pread(fd, 4096, int(offset))
            finally:
                os.close(fd)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(pread_at, rng.integers(0, size - 4096, 16)))
        check_peak(m, 1024, "16 concurrent 4 KiB reads")
        before = cpu_seconds(m.process.pid)
        data = subprocess.run(["cat", m.path("z.nc")], capture_output=True, timeout=600).stdout
        used = cpu_seconds(m.process.pid) - before
        print("cat of the 256 MiB view: %.1f s of daemon CPU" % used)
        got = np.frombuffer(data[len(data) - values.nbytes:], dtype=">f4")
        check(np.array_equal(got, values), "the view's values differ from what numcodecs encoded")
        # One decode per 64 KiB block would be 4,096 decodes of 256 MiB: hours, not seconds.
        check(used < 120, "cat used %.0f s of daemon CPU: the chunk is decoded again and again" % used)


def cdf5_many_variables(path, n):
    """CDF-5: one dimension, n scalar int variables, no data (each vsize 4, begin past the header)."""
    head = b"CDF\x05" + struct.pack(">q", 0)
    dims = struct.pack(">iq", 0x0A, 1) + struct.pack(">q", 1) + b"x\0\0\0" + struct.pack(">q", 1)
    gatts = struct.pack(">iq", 0, 0)
    entries = []
    for i in range(n):
        name = ("%x" % i).encode()
        name += b"\0" * ((4 - len(name) % 4) % 4)
        entries.append(struct.pack(">q", len(("%x" % i))) + name + struct.pack(">q", 0) + struct.pack(">iq", 0, 0) +
                       struct.pack(">iqq", 4, 4, 0))
    body = b"".join(entries)
    header_size = len(head) + len(dims) + len(gatts) + 12 + len(body)
    fixed = bytearray(body)  # begin offsets are 0: a layout check may refuse them, the count comes first
    with open(path, "wb") as f:
        f.write(head + dims + gatts + struct.pack(">iq", 0x0B, n) + bytes(fixed))
        f.write(b"\0" * (4 * n))
    return header_size


def ds_many_entries(path, n):
    with open(path, "w") as f:
        f.write("ds-1.0\n{")
        f.write(",".join('"v%d": {".dims": ["x"], ".size": [1], ".type": "float32", ".offset": 0, ".len": 4}' % i
                         for i in range(n)))
        f.write("}\n")
        f.write("\0\0\0\0")


def case_cdf_counts(work):
    src = new_source(work)
    cdf5_many_variables(os.path.join(src, "cdf.nc"), 1000000)
    ds_many_entries(os.path.join(src, "many.ds"), 1000000)
    with Mount(src, HELD_TO) as m:
        for name in ("cdf.ds", "cdf.vds", "many.nc", "many.ncs"):
            timed(m, "stat " + name, lambda: stat_or_none(m.path(name)))
        check(m.alive(), "the daemon died")
        check_peak(m, 512, "a million variables")
        expect_logged(m, "cdf.nc", "1000000 variables")
        expect_logged(m, "many.ds", "max_file_metadata_mem")


def busy_stat(path):
    """A stat in a thread of its own (it may wait on the daemon for long)."""
    t = threading.Thread(target=stat_or_none, args=(path,), daemon=True)
    t.start()
    return t


def gone_within(process, seconds):
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def started(src, extra=()):
    mnt = os.path.join(os.path.dirname(src), "mnt")
    os.makedirs(mnt, exist_ok=True)
    log = open(os.path.join(os.path.dirname(src), "log.txt"), "w")
    p = subprocess.Popen([os.environ.get("NCAFS_BIN", "ncafs"), src, mnt, "-f"] + list(extra), stdout=log, stderr=log)
    deadline = time.time() + 30
    while not os.path.ismount(mnt):
        check(p.poll() is None and time.time() < deadline, "the mount did not appear")
        time.sleep(0.05)
    return p, mnt


def stop_case(work, how):
    src = new_source(work)
    # A set the daemon is busy with for a while: many arrays within the budget.
    one_element_arrays(os.path.join(src, "busy.json"), 40000)
    for stop in how:
        p, mnt = started(src)
        try:
            busy = busy_stat(os.path.join(mnt, "busy.nc"))
            time.sleep(0.5)  # the daemon is parsing
            check(busy.is_alive(), "the stat was answered before the stop: nothing was busy")
            start = time.monotonic()
            if stop == "unmount":
                while subprocess.run(["fusermount3", "-u", mnt], capture_output=True).returncode != 0:
                    check(time.monotonic() - start < 30, "fusermount3 -u kept failing")
                    time.sleep(0.05)
                start = time.monotonic()
            else:
                p.send_signal(stop)
            ok = gone_within(p, STOP)
            print("%s: the daemon is gone after %.2f s" % (stop, time.monotonic() - start))
            check(ok, "%s: the daemon still runs %d s later" % (stop, STOP))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)


def case_stop_signal(work):
    stop_case(work, [signal.SIGTERM, signal.SIGINT])


def case_stop_unmount(work):
    stop_case(work, ["unmount"])


def case_self_read(work):
    src = os.path.join(work, "src")
    user = os.path.join(src, "user")
    os.makedirs(os.path.join(src, "mnt"))
    os.makedirs(user)
    with open(os.path.join(src, "control.txt"), "w") as f:
        f.write("control bytes\n")
    for i in range(40):  # reference sets and NCA aggregations naming their own view
        refs = {".zgroup": '{"zarr_format": 2}', "r/.zarray": zarray([4], [4]),
                "r/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}), "r/0": ["../mnt/user/r%02d.nc" % i, 0, 16]}
        write_refs(os.path.join(user, "r%02d.json" % i), refs)
        nca_file(os.path.join(user, "a%02d.nca" % i),
                 '{"pmshape": [1], "pmdimensions": ["x"], "Partitions": [{"index": [0], "location": [[0, 3]],'
                 ' "subarray": {"file": "../mnt/user/a%02d.nc", "ncvar": "v", "shape": [4]}}]}' % i, dims=(("x", 4),))
    names = ["r%02d.nc" % i for i in range(40)] + ["a%02d.nc" % i for i in range(40)]
    mount = Mount(src)
    os.rmdir(mount.mnt)
    mount.mnt = os.path.join(src, "mnt")  # MOUNTPOINT beneath SOURCE
    with mount as m:
        def read_view(name):
            try:
                with open(m.path("user", name), "rb") as f:
                    f.read()
                return "read"
            except OSError as e:
                return e.strerror
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            outcomes = pool.map(read_view, names)
            time.sleep(1)
            control = subprocess.run(["cat", m.path("control.txt")], capture_output=True, timeout=ANSWER)
            check(control.stdout == b"control bytes\n", "another reader's cat failed: %r" % (control,))
            outcomes = list(outcomes)
        print("reads of views naming themselves:", sorted(set(outcomes)))
        check("read" not in outcomes, "a view naming itself was read")
        expect_logged(m, "r07.json", "leads into this mount itself")
        expect_logged(m, "a07.nca", "leads into this mount itself")


def case_parse_deadline(work):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
    import tiny_partitions as tp
    src = os.path.join(work, "src")
    os.makedirs(src)
    small = tp.write_partitions(os.path.join(src, "parts"), 3)
    tp.write_nca(os.path.join(src, "small.nca"), small)
    big = 200_000
    tp.write_nca(os.path.join(src, "big.nca"), [os.path.join(src, "gone", "p%07d.nc" % i) for i in range(big)])
    os.environ["NCAFS_TEST_PARSE_DEADLINE_MS"] = "1"
    try:
        with Mount(src, "cache_timeout=0") as m:
            start = time.monotonic()
            names = os.listdir(m.mnt)
            try:
                with netCDF4.Dataset(m.path("big.nc")) as ds:
                    shape = ds["tas"].shape if "tas" in ds.variables else None
            except OSError:
                shape = None
            check(time.monotonic() - start < ANSWER, "the listing and stat of big.nc took more than %d s" % ANSWER)
            check(shape != (big, tp.NLAT, tp.NLON), "big.nc aggregated although its parse is past the deadline")
            with netCDF4.Dataset(m.path("small.nc")) as ds:
                tas = np.asarray(ds["tas"][:])
            check(tas.shape == (3, tp.NLAT, tp.NLON), "small.nc: shape %s (listing %s)" % (tas.shape, names))
            for i in range(3):
                check(np.array_equal(tas[i].ravel(), np.array(tp.expected_tas(i), "f4")), "small.nc partition %d" % i)
            check(m.alive(), "the daemon died:\n" + m.log_text()[-4000:])
            lines = [l for l in m.log_text().splitlines() if "big.nca" in l and "parse deadline" in l]
            check(len(lines) >= 1, "no log line names big.nca and the parse deadline:\n" + m.log_text()[-4000:])
    finally:
        del os.environ["NCAFS_TEST_PARSE_DEADLINE_MS"]


CASES = {"refs_many": case_refs_many, "refs_vds": case_refs_vds, "refs_huge": case_refs_huge,
         "refs_zstd": case_refs_zstd, "cdf_counts": case_cdf_counts, "stop_signal": case_stop_signal,
         "stop_unmount": case_stop_unmount, "self_read": case_self_read, "parse_deadline": case_parse_deadline}


def main():
    return run_cases(CASES, "ncafs-budgets-")


if __name__ == "__main__":
    sys.exit(main())
