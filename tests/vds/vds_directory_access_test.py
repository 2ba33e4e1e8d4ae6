#!/usr/bin/python3
"""A *.vds/ folder under the caller check (allow_other).

Run as root. Creates two system users with unique names (removed at the
end): OWNER, who owns the members of priv.vds/ (an OpenVDS fixture in the
object-store directory form, folders 0755, every member 0600), and OTHER,
who may search the folders but read no member. Through a mount with
-o allow_other, OTHER must get EACCES from priv.nc, priv.ds and priv.ncs and
no value, while OWNER reads priv.nc with netCDF4-python and gets the
fixture's values (the sha1s of tests/data/vds/README.md, every LOD). A
second volume pub.vds/ whose members are 0644 reads for OTHER: the refusal
comes from the members, not from the folder form.
Exit 77 with SKIPPED when not root or FUSE is unusable.
"""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from test_mount import Mount, check, fuse_usable  # noqa: E402

import vds_directory_form  # noqa: E402
import vds_mount_test  # noqa: E402  (EXPECTED sha1s of the README)

SKIP = 77
PYTHON = "/usr/bin/python3"
DATA = os.path.join(HERE, "..", "data", "vds")
FIXTURE = "r32_zip_const_novalue"

# Runs as a test user: the bytes of a view, or the raw sha1 of every LOD of
# Amplitude through netCDF4-python; JSON on stdout.
CHILD = r"""
import hashlib, json, sys
path, mode = sys.argv[1], sys.argv[2]
try:
    if mode == "bytes":
        with open(path, "rb") as f:
            print(json.dumps({"ok": True, "size": len(f.read())}))
    else:
        import netCDF4, numpy
        sums = []
        with netCDF4.Dataset(path) as ds:
            for name in ("Amplitude", "Amplitude_lod1", "Amplitude_lod2"):
                raw = numpy.asarray(ds.variables[name][...].data)
                sums.append(hashlib.sha1(raw.astype(raw.dtype.newbyteorder("<")).tobytes()).hexdigest())
        print(json.dumps({"ok": True, "sha1": sums}))
except OSError as e:
    print(json.dumps({"ok": False, "errno": e.errno, "text": str(e)}))
"""


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    check(r.returncode == 0, "%s failed: %s" % (" ".join(cmd), r.stderr))


def as_user(user, path, mode):
    r = subprocess.run(["runuser", "-u", user, "--", PYTHON, "-c", CHILD, path, mode],
                       capture_output=True, text=True, cwd="/", timeout=120)
    check(r.returncode == 0, "reader as %s failed: %s" % (user, r.stderr))
    return json.loads(r.stdout)


def make_volume(src, name, owner, member_mode):
    folder = os.path.join(src, name + ".vds")
    vds_directory_form.container_to_directory(os.path.join(DATA, FIXTURE + ".vds"), folder)
    run("chown", "-R", owner, folder)
    for top, dirs, files in os.walk(folder):
        os.chmod(top, 0o755)
        for f in files:
            os.chmod(os.path.join(top, f), member_mode)


def expect_refused(user, m, name):
    for view in ("nc", "ds", "ncs"):
        got = as_user(user, m.path(name + "." + view), "bytes")
        check(not got["ok"] and got["errno"] == 13, "%s.%s as %s: expected EACCES, got %s" % (name, view, user, got))
    got = as_user(user, m.path(name + ".nc"), "values")
    check(not got["ok"], "%s.nc as %s: values read although every member is 0600: %s" % (name, user, got))


def expect_values(user, m, name):
    want = [raw for _shape, raw, _f64 in vds_mount_test.EXPECTED[FIXTURE]]
    got = as_user(user, m.path(name + ".nc"), "values")
    check(got["ok"] and got["sha1"] == want, "%s.nc as %s: %s, want sha1s %s" % (name, user, got, want))
    for view in ("ds", "ncs"):
        got = as_user(user, m.path(name + "." + view), "bytes")
        check(got["ok"] and got["size"] > 0, "%s.%s as %s: %s" % (name, view, user, got))


def main():
    reason = fuse_usable() if os.geteuid() == 0 else "not root (it creates users and mounts with allow_other)"
    if reason:
        print("SKIPPED: vds_directory_access_test.py: " + reason)
        return SKIP
    suffix = secrets.token_hex(4)
    owner, other = "ncafs-vdo-" + suffix, "ncafs-vdx-" + suffix
    work = tempfile.mkdtemp(prefix="ncafs-vds-access-")
    try:
        for user in (owner, other):
            run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user)
        os.chmod(work, 0o755)  # the folders on the way to SOURCE must be searchable by the users
        src = os.path.join(work, "src")
        os.mkdir(src, 0o755)
        make_volume(src, "priv", owner, 0o600)
        make_volume(src, "pub", owner, 0o644)
        with Mount(src, "allow_other") as m:
            expect_refused(other, m, "priv")
            expect_values(owner, m, "priv")
            expect_refused(other, m, "priv")  # the owner's reads opened nothing for OTHER
            expect_values(other, m, "pub")
            check(m.alive(), "ncafs died")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for user in (owner, other):
            subprocess.run(["userdel", user], capture_output=True)
    print("PASS: *.vds/ folders under the caller check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
