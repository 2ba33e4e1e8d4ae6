#!/usr/bin/python3
"""Access on behalf of the caller, and no stale pages after a partition changes.

Run as root: test_access.py. Creates the system user ncafs-h-access (and the
group ncafs-h-access-g), removed at the end, mounts a generated SOURCE with
-o allow_other and reads through the mount as that user (runuser):
  (a) an aggregation the user wrote naming ../hidden.nc (0600 root): EACCES,
      no byte of the hidden values;
  (b) one naming ../private/inner.nc (folder 0700): EACCES; a partition
      symlink retargeted to hidden.nc under an open file: the next read EACCES;
  (c) an aggregation of readable partitions: the values the generator
      computed from the inputs;
  (d) a partition chmod'ed to 0600: refused at the next open; group-readable
      (0640) to a supplementary group of the user: allowed once the user is in it;
  (e) Zarr stores (NAME.zarr/): one readable (its values), one whose array's
      .zarray is 0600 and one whose array folder is 0700: EACCES; one whose
      chunk file is 0600 and one whose chunk folder (v/0/, "/" separator) is
      0700: opened, but reads fail with EIO for the user and for root alike (a
      log line names the chunk), and read the values once the chunk is 0644.
Stale pages: a partition rewritten in place, and one replaced by rename, show
their new values through an unchanged aggregation file after about a second.
Exit 77 with SKIPPED when not root or FUSE is unusable.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import make_aggregations  # noqa: E402
from test_mount import Mount, check, fail, fuse_usable  # noqa: E402

SKIP = 77
USER = "ncafs-h-access"
GROUP = "ncafs-h-access-g"
PYTHON = "/usr/bin/python3"
SETTLE = 1.5  # seconds: the contract is "within a second"

# Runs as the test user: reads a file through the mount and prints JSON.
CHILD = r"""
import json, sys
path, mode = sys.argv[1], sys.argv[2]
try:
    if mode == "bytes":
        with open(path, "rb") as f:
            print(json.dumps({"ok": True, "hex": f.read().hex()}))
    else:
        import netCDF4, numpy
        with netCDF4.Dataset(path) as ds:
            v = numpy.asarray(ds.variables[mode][:])
        print(json.dumps({"ok": True, "values": v.ravel().tolist(), "shape": list(v.shape)}))
except OSError as e:
    print(json.dumps({"ok": False, "errno": e.errno, "text": str(e)}))
"""


# Runs as the test user: opens an aggregation whose partition is a symlink to
# the user's own file, reads it, retargets the symlink to ../hidden.nc, reads again.
CHILD_SWAP = r"""
import json, os, sys, time
folder, virtual = sys.argv[1], sys.argv[2]
fd = os.open(virtual, os.O_RDONLY)
first = os.pread(fd, 1 << 20, 0)
os.symlink("../hidden.nc", os.path.join(folder, "link.tmp"))
os.replace(os.path.join(folder, "link.tmp"), os.path.join(folder, "link.nc"))
time.sleep(float(sys.argv[3]))
try:
    print(json.dumps({"ok": True, "first": first.hex(), "hex": os.pread(fd, 1 << 20, 0).hex()}))
except OSError as e:
    print(json.dumps({"ok": False, "first": first.hex(), "errno": e.errno}))
"""


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    check(r.returncode == 0, "%s failed: %s" % (" ".join(cmd), r.stderr))


def as_user(path, mode):
    r = subprocess.run(["runuser", "-u", USER, "--", PYTHON, "-c", CHILD, path, mode],
                       capture_output=True, text=True, cwd="/", timeout=120)
    check(r.returncode == 0, "reader as %s failed: %s" % (USER, r.stderr))
    return json.loads(r.stdout)


def expect_refused(path, what, hidden_bytes=None):
    got = as_user(path, "bytes")
    check(not got["ok"] and got["errno"] == 13, "%s: expected EACCES, got %s" % (what, str(got)[:300]))
    if hidden_bytes is not None:
        check(hidden_bytes not in bytes.fromhex(got.get("hex", "")), what + ": hidden bytes leaked")


def expect_values(path, var, master, what):
    got = as_user(path, var)
    check(got["ok"], "%s: expected the values, got %s" % (what, got))
    values = np.array(got["values"], dtype=master.dtype).reshape(got["shape"])
    check(values.shape == master.shape and np.array_equal(values, master), what + ": values differ from the inputs'")


def read_netcdf4(path, var):
    with netCDF4.Dataset(path) as ds:
        return np.asarray(ds.variables[var][:])


def write_single_nca(path, target, values, var="tas"):
    """An NCA aggregation of one partition `target` (relative name), as a user could write it."""
    n = len(values)
    partitions = [{"index": [0], "location": [[0, n - 1]], "format": "netCDF",
                   "subarray": {"file": target, "ncvar": var, "shape": [n]}}]
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("x", n)
        carrier = ds.createVariable(var, "f4", (), fill_value=False)
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = "x"
        carrier.nca_array = make_aggregations._nca_json(["x"], ["x"], [1], partitions)


def write_partition(path, values, var="tas"):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", len(values))
        ds.createVariable(var, "f4", ("x",), fill_value=False)[:] = values


def make_source(work):
    """SOURCE with hidden.nc (0600), private/ (0700), user/ (the user's), good/ (readable)."""
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "private"))
    os.makedirs(os.path.join(src, "user"))
    os.chmod(src, 0o755)
    hidden = np.arange(6, dtype="f4") + np.float32(4242.5)
    write_partition(os.path.join(src, "hidden.nc"), hidden)
    os.chmod(os.path.join(src, "hidden.nc"), 0o600)
    write_partition(os.path.join(src, "private", "inner.nc"), hidden + 1)
    os.chmod(os.path.join(src, "private", "inner.nc"), 0o644)
    os.chmod(os.path.join(src, "private"), 0o700)
    write_single_nca(os.path.join(src, "user", "steal.nca"), "../hidden.nc", hidden)
    write_single_nca(os.path.join(src, "user", "steal2.nca"), "../private/inner.nc", hidden)
    mine = hidden - np.float32(1000.0)
    write_partition(os.path.join(src, "user", "mine.nc"), mine)
    os.symlink("mine.nc", os.path.join(src, "user", "link.nc"))
    write_single_nca(os.path.join(src, "user", "swap.nca"), "link.nc", mine)
    run("chown", "-R", "-h", USER, os.path.join(src, "user"))
    good = make_aggregations.write_aggregation(os.path.join(src, "good"), "good", ["time", "x"],
                                               {"time": 6, "x": 4}, {"time": [2, 2, 2], "x": [4]})
    for name in os.listdir(os.path.join(src, "good")):
        os.chmod(os.path.join(src, "good", name), 0o644)
    os.chmod(os.path.join(src, "good"), 0o755)
    write_zarr_stores(src, hidden)
    return src, hidden, good["master"]


def write_zarr_stores(src, values):
    """zarr/open.zarr readable; zarr/meta.zarr with v/.zarray 0600; zarr/folder.zarr with v/ 0700;
    zarr/chunk.zarr with v/0 0600; zarr/nested.zarr (2-D, chunk keys v/I/J) with v/0/ 0700;
    zarr/grouped.zarr with its array in the sub-group g/, which is 0700."""
    import zarr
    for name in ("open", "meta", "folder", "chunk", "nested", "grouped"):
        path = os.path.join(src, "zarr", name + ".zarr")
        group = zarr.open_group(path, mode="w")
        if name == "grouped":
            group = group.create_group("g")
        if name == "nested":
            a = group.create_dataset("v", data=values.reshape(2, 3), chunks=(1, 3), dimension_separator="/")
            a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        else:
            a = group.create_dataset("v", data=values, chunks=(4,))
            a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        for folder, _, files in os.walk(path):
            os.chmod(folder, 0o755)
            for f in files:
                os.chmod(os.path.join(folder, f), 0o644)
    os.chmod(os.path.join(src, "zarr"), 0o755)
    os.chmod(os.path.join(src, "zarr", "meta.zarr", "v", ".zarray"), 0o600)
    os.chmod(os.path.join(src, "zarr", "folder.zarr", "v"), 0o700)
    os.chmod(os.path.join(src, "zarr", "chunk.zarr", "v", "0"), 0o600)
    os.chmod(os.path.join(src, "zarr", "nested.zarr", "v", "0"), 0o700)
    os.chmod(os.path.join(src, "zarr", "grouped.zarr", "g"), 0o700)
    write_zarr_fragments(os.path.join(src, "zarr"), values)


def write_zarr_fragments(folder, values):
    """frag_NAME.nc: a CF-1.13 aggregation whose one fragment is NAME.zarr's array v (grouped: g/v)."""
    sys.path.insert(0, os.path.join(HERE, "..", "remote"))
    sys.path.insert(0, os.path.join(HERE, "..", "zarr_store"))
    from test_remote_zarr import write_view
    for name, identifier in (("open", "v"), ("meta", "v"), ("chunk", "v"), ("grouped", "/g/v")):
        path = os.path.join(folder, "frag_%s.nc" % name)
        write_view(path, {"v": (name + ".zarr", identifier)},
                   {"v": (values.shape, values.dtype.str.lstrip("<>=|"), ["x"])})
        os.chmod(path, 0o644)


def case_zarr(m, values):
    expect_values(m.path("zarr", "open.nc"), "v", values, "(e) open.zarr as the user")
    expect_refused(m.path("zarr", "meta.nc"), "(e) meta.zarr with v/.zarray 0600")
    expect_refused(m.path("zarr", "folder.nc"), "(e) folder.zarr with v/ 0700")
    # The same stores named as fragments: the caller check covers the store's
    # folder; members fewer users may read than it (v/.zarray, v/0 0600, the
    # sub-group g/ 0700 on the way to g/v) fail for every caller.
    expect_values(m.path("zarr", "frag_open.nc"), "v", values, "(e) open.zarr as a fragment, as the user")
    for name in ("meta", "chunk", "grouped"):
        got = as_user(m.path("zarr", "frag_%s.nc" % name), "bytes")
        check(not got["ok"] and got["errno"] == 5, "(e) %s.zarr as a fragment: expected EIO, got %s" % (name, str(got)[:300]))
    check(np.array_equal(read_netcdf4(m.path("zarr", "folder.nc"), "v"), values), "root reads folder.nc wrongly")
    case_zarr_chunks(m, values)


def case_zarr_chunks(m, values):
    """A chunk (or chunk folder) fewer users may read than the array's metadata: no caller gets its bytes."""
    for name, member, mode in (("chunk", "v/0", 0o644), ("nested", "v/0", 0o755)):
        view = m.path("zarr", name + ".nc")
        got = as_user(view, "bytes")
        check(not got["ok"] and got["errno"] == 5, "(e) %s.zarr with %s unreadable: expected EIO, got %s"
              % (name, member, str(got)[:300]))
        try:
            with open(view, "rb") as f:
                leaked = f.read()
            fail("(e) root read %s.nc whole although %s is less readable than v/.zarray (%d bytes)"
                 % (name, member, len(leaked)))
        except OSError as e:
            check(e.errno == 5, "(e) root's read of %s.nc: expected EIO, got %s" % (name, e))
        log = m.log_text()
        check("Zarr chunk refused with allow_other" in log and name + ".zarr/" + member in log,
              "(e) no log line names %s.zarr/%s:\n%s" % (name, member, log))
        os.chmod(os.path.join(m.source, "zarr", name + ".zarr", member), mode)
        expected = values.reshape(2, 3) if name == "nested" else values
        expect_values(view, "v", expected, "(e) %s.zarr once %s is as readable as v/.zarray" % (name, member))


def case_refusals(m, hidden):
    hidden_be = hidden.astype(">f4").tobytes()
    expect_refused(m.path("user", "steal.nc"), "(a) steal.nc naming ../hidden.nc", hidden_be)
    expect_refused(m.path("user", "steal.ds"), "(a) steal.ds naming ../hidden.nc", hidden_be)
    expect_refused(m.path("user", "steal2.nc"), "(b) steal2.nc naming ../private/inner.nc", hidden_be)
    # A partition retargeted under an open file: the next read is judged again.
    r = subprocess.run(["runuser", "-u", USER, "--", PYTHON, "-c", CHILD_SWAP, m.src_user, m.path("user", "swap.nc"),
                        str(SETTLE)], capture_output=True, text=True, cwd="/", timeout=120)
    check(r.returncode == 0, "swap reader failed: " + r.stderr)
    got = json.loads(r.stdout)
    mine_be = (hidden - np.float32(1000.0)).astype(">f4").tobytes()
    check(mine_be in bytes.fromhex(got["first"]), "the user's own partition was not served before the swap")
    check(not got["ok"] and got["errno"] == 13, "read after retargeting a partition to hidden.nc: expected EACCES, got "
          + str(got)[:300])
    # Root may read hidden.nc: the same aggregation serves its values to root,
    # so the refusals above are the check's doing.
    check(np.array_equal(read_netcdf4(m.path("user", "steal.nc"), "tas"), hidden), "root reads steal.nc wrongly")
    log = m.log_text()
    check("open of" in log and "read of" in log and "refused for uid" in log and "hidden.nc" in log
          and "inner.nc" in log,
          "no log line names the refused user and files:\n" + log)


def case_readable(m, master):
    expect_values(m.path("good", "good.nc"), "tas", master, "(c) good.nc as the user")


def case_mode_changes(m, src, master):
    part = os.path.join(src, "good", "part_01_00.nc")
    os.chmod(part, 0o600)
    time.sleep(SETTLE)
    expect_refused(m.path("good", "good.nc"), "(d) after chmod 0600 of a partition")
    run("chgrp", GROUP, part)
    os.chmod(part, 0o640)
    time.sleep(SETTLE)
    expect_refused(m.path("good", "good.nc"), "(d) group-readable partition, user not in the group")
    run("usermod", "-aG", GROUP, USER)
    expect_values(m.path("good", "good.nc"), "tas", master, "(d) group-readable partition, user in the group")
    os.chmod(part, 0o644)


def rewrite_in_place(path, values):
    with netCDF4.Dataset(path, "r+") as ds:
        ds.variables["tas"][:] = values


def replace_by_rename(path, values):
    before = os.path.getsize(path)
    tmp = path + ".tmp"
    shutil.copyfile(path, tmp)
    rewrite_in_place(tmp, values)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    check(os.path.getsize(path) == before, "the replacement partition changed size")


def case_stale_pages(m, src, master):
    virtual = m.path("good", "good.nc")
    held = os.open(virtual, os.O_RDONLY)  # stays open: no new open may refresh anything
    try:  # closed on failure too, or the mount could not be unmounted
        changed = stale_page_rounds(virtual, held, src, master)
    finally:
        os.close(held)
    expect_values(virtual, "tas", changed, "the user after the rewrites")


def stale_page_rounds(virtual, held, src, master):
    first = os.pread(held, 1 << 24, 0)  # now in the kernel's page cache
    check(np.array_equal(read_netcdf4(virtual, "tas"), master), "good.nc before the rewrite")
    changed = master.copy()
    for name, rows, change in (("part_00_00.nc", slice(0, 2), rewrite_in_place),
                               ("part_02_00.nc", slice(4, 6), replace_by_rename)):
        changed[rows] = changed[rows] + np.float32(5000.0)
        change(os.path.join(src, "good", name), changed[rows])
        time.sleep(SETTLE)
        # First through the descriptor opened before the change: no open since may have refreshed it.
        with netCDF4.Dataset("held", memory=os.pread(held, 1 << 24, 0)) as ds:
            check(np.array_equal(np.asarray(ds.variables["tas"][:]), changed),
                  "a descriptor opened before %s of %s still reads the kernel's stale pages" % (change.__name__, name))
        got = read_netcdf4(virtual, "tas")
        check(np.array_equal(got, changed), "%s changed (%s) but good.nc still shows old values" %
              (name, change.__name__))
        with open(virtual, "rb") as f:
            fresh = f.read()
        check(fresh != first, "the bytes of good.nc did not change after " + change.__name__)
    return changed


def cleanup_identities():
    subprocess.run(["userdel", USER], capture_output=True)
    subprocess.run(["groupdel", GROUP], capture_output=True)


def main():
    if os.geteuid() != 0:
        print("SKIPPED: test_access.py must run as root (it creates a user and mounts with allow_other)")
        return SKIP
    reason = fuse_usable()
    if reason:
        print("SKIPPED: " + reason)
        return SKIP
    cleanup_identities()  # left over by an interrupted run
    run("groupadd", "--system", GROUP)
    run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER)
    work = tempfile.mkdtemp(prefix="ncafs-h-access-")
    os.chmod(work, 0o755)  # the folders on the way to SOURCE must be searchable by the user
    try:
        src, hidden, master = make_source(work)
        with Mount(src, "allow_other") as m:
            m.src_user = os.path.join(src, "user")
            case_refusals(m, hidden)
            case_readable(m, master)
            case_zarr(m, hidden)
            case_mode_changes(m, src, master)
            case_stale_pages(m, src, master)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        cleanup_identities()
    print("PASS: access and stale pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
