#!/usr/bin/python3
"""HDF5 indirections refused by name, through real FUSE mounts.

Run as: test_hdf5_indirection.py CASE   (CASE: mount, other_user, remote)
Environment: NCAFS_BIN (the ncafs executable, set by CMake).

Every file is written here by h5py (Debian's python3-h5py) in the test's own
temporary folder: a netCDF-4 file whose variable `x` draws on a "secret" file
outside SOURCE through HDF5 external storage (absolute and relative name), a
virtual dataset, or an external link, beside a variable `ok` stored in the
file itself. The secret holds a pattern nothing else holds; no byte of it may
come out of any view.
  mount:      as root: x.nc, x.ds, x.ncs read whole without `x` (left out)
              and without a secret byte, `ok` reads as h5py wrote it, an NCA
              aggregation of such a file gives EIO, the log names file,
              variable and reason once; `ncafs check` fails naming them (and
              the partition), `inspect` lists them, `export` leaves `x` out
              with a warning, and fails for the aggregation.
  other_user: -o allow_other, read as a user the test creates (unique name,
              removed afterwards): no secret byte, the aggregation EIO (root
              only, else SKIPPED).
  remote:     an NCA aggregation whose partition is such a file on nginx: the
              local copy is refused the same way (SKIPPED without nginx).
"""
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import h5py
import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
import make_aggregations  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fail, fuse_usable  # noqa: E402

SECRET = b"\xc3\x9fSECRET-HDF5\x7f" * 8  # 120 bytes of a pattern nothing else holds
OK_VALUES = np.array([11, -7, 2024, 31337], dtype="i4")
PYTHON = "/usr/bin/python3"

# What each kind of file makes `x` draw on, and what the log must say.
KINDS = {
    "ext_abs": "HDF5 external storage",
    "ext_rel": "HDF5 external storage",
    "vds": "an HDF5 virtual layout",
    "elink": "an HDF5 external link",
}


def write_secret(outside):
    os.makedirs(outside, exist_ok=True)
    secret = os.path.join(outside, "secret.bin")
    with open(secret, "wb") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)
    source = os.path.join(outside, "secret.h5")  # for the virtual dataset and the external link
    with h5py.File(source, "w") as f:
        f["s"] = np.frombuffer(SECRET, dtype="S1")
    os.chmod(source, 0o600)
    return secret, source


def write_indirect(path, kind, secret, secret_h5):
    """A netCDF-4 file (h5py) with `ok` and `x`, `x` (char: the secret's bytes
    unchanged in every view) drawing on a file outside SOURCE."""
    n = len(SECRET)
    with h5py.File(path, "w") as f:
        f["ok"] = OK_VALUES
        if kind == "ext_abs":
            f.create_dataset("x", shape=(n,), dtype="S1", external=[(secret, 0, n)])
        elif kind == "ext_rel":
            # The daemon runs in /: "../.." from there is / again.
            f.create_dataset("x", shape=(n,), dtype="S1", external=[("../.." + secret, 0, n)])
        elif kind == "vds":
            layout = h5py.VirtualLayout(shape=(n,), dtype="S1")
            layout[:] = h5py.VirtualSource(secret_h5, "s", shape=(n,))
            f.create_virtual_dataset("x", layout)
        else:
            f["x"] = h5py.ExternalLink(secret_h5, "/s")


def write_nca(path, target, n, var="x"):
    """An NCA aggregation of one partition `target` (relative name or URL)."""
    partitions = [{"index": [0], "location": [[0, n - 1]], "format": "netCDF",
                   "subarray": {"file": target, "ncvar": var, "shape": [n]}}]
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("d", n)
        carrier = ds.createVariable(var, "S1", (), fill_value=False)  # char: the secret's bytes as they are
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = "d"
        carrier.nca_array = make_aggregations._nca_json(["d"], ["d"], [1], partitions)


def read_all(path):
    """(bytes read before the first error, errno or 0)."""
    got = bytearray()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return bytes(got), e.errno
    try:
        offset = 0
        while True:
            try:
                chunk = os.pread(fd, 1 << 16, offset)
            except OSError as e:
                return bytes(got), e.errno
            if not chunk:
                return bytes(got), 0
            got += chunk
            offset += len(chunk)
    finally:
        os.close(fd)


def no_secret(data, what):
    check(SECRET[:16] not in data and b"SECRET-HDF5" not in data, what + ": secret bytes leaked")


def make_source(work):
    outside = os.path.join(work, "outside")
    secret, secret_h5 = write_secret(outside)
    src = os.path.join(work, "src")
    os.makedirs(src)
    for kind in KINDS:
        write_indirect(os.path.join(src, kind + ".nc4"), kind, secret, secret_h5)
        write_nca(os.path.join(src, "agg_%s.nca" % kind), kind + ".nc4", len(SECRET))
    return src


def expect_views(m, kind):
    """The three views of KIND.nc4 read whole, without `x` and without a
    secret byte; `ok` as h5py wrote it; the aggregation of it: EIO."""
    for view in ("nc", "ds", "ncs"):
        data, err = read_all(m.path("%s.%s" % (kind, view)))
        no_secret(data, "%s.%s" % (kind, view))
        check(err == 0 and len(data) > 0, "%s.%s: the rest of the file reads (errno %d)" % (kind, view, err))
    with netCDF4.Dataset(m.path(kind + ".nc")) as ds:
        check(np.array_equal(np.asarray(ds["ok"][:]), OK_VALUES), kind + ".nc: ok differs from what h5py wrote")
        check("x" not in ds.variables, kind + ".nc: x is left out")
    data, err = read_all(m.path("agg_%s.nc" % kind))
    no_secret(data, "agg_%s.nc" % kind)
    check(err == errno.EIO, "agg_%s.nc: expected EIO, got errno %d" % (kind, err))


def expect_log(m, src, kind):
    log = m.log_text()
    no_secret(log.encode(), "the log")
    file = os.path.join(src, kind + ".nc4")
    if kind == "elink":
        want = "%s: link /x is %s" % (file, KINDS[kind])
    else:
        want = "%s: variable x uses %s" % (file, KINDS[kind])
    lines = [line for line in log.splitlines() if want in line and "partition" not in line]
    check(len(lines) == 1, "log lacks %r once (the aggregation's read says it too):\n%s" % (want, log))


def run_cli(*args):
    r = subprocess.run([NCAFS] + list(args), capture_output=True, timeout=120, cwd="/")
    return r.returncode, r.stdout + r.stderr


def expect_commands(src, work, kind):
    file = os.path.join(src, kind + ".nc4")
    code, out = run_cli("check", file)
    no_secret(out, "check " + kind)
    check(code == 1 and b"refused" in out and KINDS[kind].encode() in out,
          "check %s: expected a refusal, got %d %r" % (kind, code, out))
    code, out = run_cli("inspect", file)
    check(code == 0 and b"refused: " in out and KINDS[kind].encode() in out,
          "inspect %s lists the refusal: %d %r" % (kind, code, out))
    agg = os.path.join(src, "agg_%s.nca" % kind)
    code, out = run_cli("check", agg)
    want_var = b"link /x is an HDF5 external link" if kind == "elink" else b"variable x uses"
    check(code == 1 and want_var in out and b"partition" in out and (kind + ".nc4").encode() in out,
          "check agg_%s names partition and variable: %d %r" % (kind, code, out))
    target = os.path.join(work, "export_%s.nc" % kind)
    code, out = run_cli("export", file, "--format", "nc", "-o", target)
    no_secret(out + open(target, "rb").read(), "export " + kind)
    check(code == 0 and b"refused" in out, "export %s warns and leaves x out: %d %r" % (kind, code, out))
    with netCDF4.Dataset(target) as ds:
        check("x" not in ds.variables and np.array_equal(np.asarray(ds["ok"][:]), OK_VALUES),
              "export %s: ok as h5py wrote it, x left out" % kind)
    code, out = run_cli("export", agg, "-o", target + "2")
    exported = open(target + "2", "rb").read() if os.path.exists(target + "2") else b""
    no_secret(out + exported, "export agg " + kind)
    check(code != 0, "export agg_%s fails" % kind)


def case_mount(work):
    src = make_source(work)
    with Mount(src) as m:
        for kind in KINDS:
            expect_views(m, kind)
        for kind in KINDS:
            expect_log(m, src, kind)
    for kind in KINDS:
        expect_commands(src, work, kind)


def case_other_user(work):
    if os.geteuid() != 0:
        print("SKIPPED: other_user must run as root (it creates a user and mounts with allow_other)")
        return SKIP
    user = "ncafs-h5-" + uuid.uuid4().hex[:8]
    os.chmod(work, 0o755)
    src = make_source(work)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                   check=True, capture_output=True)
    child = ("import os,sys\nfd=os.open(sys.argv[1],os.O_RDONLY)\nd=b''\n"
             "try:\n  off=0\n  while True:\n    c=os.pread(fd,65536,off)\n    if not c: break\n"
             "    d+=c; off+=len(c)\n  e=0\nexcept OSError as x: e=x.errno\n"
             "sys.stdout.buffer.write(b'%d\\n' % e + d)\n")
    try:
        with Mount(src, "allow_other") as m:
            for kind in ("ext_abs", "ext_rel", "vds", "elink"):
                for name in ("%s.nc" % kind, "%s.ds" % kind, "%s.ncs" % kind, "agg_%s.nc" % kind):
                    r = subprocess.run(["runuser", "-u", user, "--", PYTHON, "-c", child, m.path(name)],
                                       capture_output=True, timeout=120, cwd="/")
                    first, _, data = r.stdout.partition(b"\n")
                    no_secret(data + r.stderr, "%s as %s" % (name, user))
                    want = errno.EIO if name.startswith("agg_") else 0
                    check(first == str(want).encode(), "%s as %s: expected errno %d, got %r" %
                          (name, user, want, r.stdout[:80] + r.stderr[-300:]))
    finally:
        subprocess.run(["userdel", user], capture_output=True)
    return 0


def case_remote(work):
    import servers  # noqa: E402
    why = servers.skip_reason_nginx()
    if why:
        print("SKIPPED: " + why)
        return SKIP
    outside = os.path.join(work, "outside")
    secret, secret_h5 = write_secret(outside)
    www = os.path.join(work, "www")
    os.makedirs(www)
    write_indirect(os.path.join(www, "remote.nc4"), "ext_abs", secret, secret_h5)
    src = os.path.join(work, "src")
    os.makedirs(src)
    with servers.Nginx(www) as web:
        write_nca(os.path.join(src, "remote.nca"), web.url + "/remote.nc4", len(SECRET))
        # allow_root= names the server: a loopback address is reached only then.
        options = "cache_dir=%s,cache_size=64M,allow_root=%s/" % (os.path.join(work, "cache"), web.url)
        with Mount(src, options) as m:
            data, err = read_all(m.path("remote.nc"))
            no_secret(data, "remote.nc")
            check(err == errno.EIO, "remote.nc: expected EIO, got errno %d" % err)
            log = m.log_text()
            check("variable x uses HDF5 external storage" in log, "log names the refusal:\n" + log)
    return 0


CASES = {"mount": case_mount, "other_user": case_other_user, "remote": case_remote}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: %s {%s}" % (sys.argv[0], "|".join(CASES)))
        return 2
    reason = fuse_usable()
    if reason:
        print("SKIPPED: " + reason)
        return SKIP
    os.chdir("/")  # as the daemon runs: a relative external name resolves from /
    work = tempfile.mkdtemp(prefix="ncafs-h5ind-")
    try:
        code = CASES[sys.argv[1]](work) or 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if code == 0:
        print("PASS: " + sys.argv[1])
    return code


if __name__ == "__main__":
    sys.exit(main())
