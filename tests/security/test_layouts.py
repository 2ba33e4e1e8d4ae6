#!/usr/bin/env python3
"""`ncafs export`, `check` and `inspect` on the layouts archives use: an
aggregation in one folder naming partitions in a sibling folder.

  nca/tas.nca    -> ../parts/d0000/part_NN.nc  (NCA JSON)
  nca/tas_cf.nc  -> the same partitions          (CF-1.13, `ncafs aggregate --relative`)
  agg/x.nc       -> ../data/x_0.nc, x_1.nc       (cfdm's test layout, CF-1.13)

Cases (root only: they create a user, SKIPPED otherwise):
  owner       the user the test creates owns the tree: every command reads
              every layout as netCDF tools do; export's values equal the
              partitions' (netCDF4-python), check says ok, inspect refuses nothing
  root_other  root on that user's files: refused, the message naming the
              rule and -o allow_root=DIR; accepted with it
  not_own     the user on files it does not control (root's files; its own
              file in a folder everybody may write): refused like root's,
              naming why
"""
import os
import shutil
import subprocess
import sys
import tempfile

import netCDF4
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import make_aggregations  # noqa: E402
from test_mount import NCAFS, SKIP, check  # noqa: E402


def run(cmd, user=None, cwd="/"):
    """CMD as root or, with USER=(uid, gid), as that user (no supplementary groups)."""
    prefix = ["setpriv", "--reuid=%d" % user[0], "--regid=%d" % user[1], "--clear-groups", "--"] if user else []
    return subprocess.run(prefix + cmd, capture_output=True, text=True, timeout=120, cwd=cwd)


def write_series(folder, names):
    """Partitions along an unlimited time (with a coordinate) named NAMES; the master."""
    made = make_aggregations.write_aggregation(folder, "series", ["time", "lat", "lon"], {"time": 2 * len(names),
                                               "lat": 3, "lon": 4}, {"time": [2] * len(names), "lat": [3], "lon": [4]},
                                               var="x", record_dim="time", coordinate="time")
    os.unlink(os.path.join(folder, "series.nca"))
    for i, name in enumerate(names):
        os.rename(os.path.join(folder, "part_%02d_00_00.nc" % i), os.path.join(folder, name))
    return made["master"]


def make_tree(home):
    """The three layouts under home; {file: (variable, master)}."""
    parts = os.path.join(home, "parts", "d0000")
    nca = os.path.join(home, "nca")
    made = make_aggregations.monthly(nca, name="tas", lat=3, lon=4)
    os.makedirs(parts)
    names = sorted(n for n in os.listdir(nca) if n.startswith("part_"))
    for name in names:
        os.rename(os.path.join(nca, name), os.path.join(parts, name))
    with netCDF4.Dataset(os.path.join(nca, "tas.nca"), "a") as ds:
        text = ds["tas"].nca_array
        for name in names:
            text = text.replace('"%s"' % name, '"../parts/d0000/%s"' % name)
        ds["tas"].nca_array = text
    aggregate = [NCAFS, "aggregate", "--dim", "time", "--relative"]
    r = run(aggregate + ["-o", os.path.join(nca, "tas_cf.nc")] + [os.path.join(parts, n) for n in names])
    check(r.returncode == 0, "aggregate into nca/: %s" % r.stderr)
    series = write_series(os.path.join(home, "data"), ["x_0.nc", "x_1.nc"])
    os.makedirs(os.path.join(home, "agg"))
    r = run(aggregate + ["-o", os.path.join(home, "agg", "x.nc"),
                         os.path.join(home, "data", "x_0.nc"), os.path.join(home, "data", "x_1.nc")])
    check(r.returncode == 0, "aggregate into agg/: %s" % r.stderr)
    check("../data/x_0.nc" in open(os.path.join(home, "agg", "x.nc"), "rb").read().decode("latin-1"),
          "agg/x.nc does not name ../data/x_0.nc")
    return {os.path.join(nca, "tas.nca"): ("tas", made["master"]),
            os.path.join(nca, "tas_cf.nc"): ("tas", made["master"]),
            os.path.join(home, "agg", "x.nc"): ("x", series)}


def chown_tree(top, uid, gid):
    for folder, dirs, files in os.walk(top):
        for name in [folder] + [os.path.join(folder, n) for n in dirs + files]:
            os.chown(name, uid, gid)


def exported_values(out, variable):
    with netCDF4.Dataset(out) as ds:
        v = ds[variable]
        v.set_auto_maskandscale(False)
        return np.array(v[:])


def expect_reads(file, variable, master, extra, user, scratch):
    """export, check and inspect of FILE succeed; export's values are master."""
    out = os.path.join(scratch, "out.nc")
    r = run([NCAFS, "export", file, "-o", out] + extra, user, scratch)
    check(r.returncode == 0, "export %s %s: %d %s" % (file, extra, r.returncode, r.stderr))
    check(np.array_equal(exported_values(out, variable), master), "export %s: values differ from the partitions" % file)
    os.unlink(out)
    r = run([NCAFS, "check", file] + extra, user, scratch)
    check(r.returncode == 0 and r.stdout.strip() == "ok", "check %s %s: %d %s%s" % (file, extra, r.returncode,
                                                                                r.stdout, r.stderr))
    r = run([NCAFS, "inspect", file] + extra, user, scratch)
    text = r.stdout + r.stderr
    check(r.returncode == 0 and "refused" not in text and "missing:" not in text and "outside" not in text,
          "inspect %s %s: %d %s" % (file, extra, r.returncode, text))


def expect_refused(file, reason, admit, user, scratch):
    """export, check and inspect of FILE refuse the partitions with a message
    naming the reason and -o allow_root=ADMIT; export leaves no output."""
    out = os.path.join(scratch, "refused.nc")
    for command in (["export", file, "-o", out], ["check", file], ["inspect", file]):
        r = run([NCAFS] + command, user, scratch)
        text = r.stdout + r.stderr
        check(r.returncode != 0 or "refused: " in text, "%s: not refused: %s" % (" ".join(command), text))
        for want in ("outside the allowed roots", reason, "-o allow_root=%s admits it" % admit):
            check(want in text, "%s: the refusal does not say %r:\n%s" % (" ".join(command), want, text))
        check(not os.path.exists(out), "a refused export left its output")


class User:
    """A system user of the test's own, removed afterwards."""

    def __init__(self, name):
        self.name = name
        subprocess.run(["userdel", name], capture_output=True)  # left by an interrupted run
        r = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                            name], capture_output=True, text=True)
        check(r.returncode == 0, "useradd: " + r.stderr)
        import pwd
        entry = pwd.getpwnam(name)
        self.ids = (entry.pw_uid, entry.pw_gid)

    def close(self):
        subprocess.run(["userdel", self.name], capture_output=True)
        subprocess.run(["groupdel", self.name], capture_output=True)


def admitted_root(file, home):
    return os.path.join(home, "data") if file.endswith("x.nc") else os.path.join(home, "parts")


def case_owner(work, user):
    home = os.path.join(work, "home")
    os.makedirs(home)
    layouts = make_tree(home)
    chown_tree(home, *user.ids)
    for file, (variable, master) in layouts.items():
        expect_reads(file, variable, master, [], user.ids, home)
        # A view name as the mount shows it (tas.nc for tas.nca) reads the same.
        if file.endswith(".nca"):
            expect_reads(file[:-1], variable, master, [], user.ids, home)


def case_root_other(work, user):
    home = os.path.join(work, "home")
    os.makedirs(home)
    layouts = make_tree(home)
    chown_tree(home, *user.ids)
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch)
    for file, (variable, master) in layouts.items():
        expect_refused(file, "run by root", admitted_root(file, home), None, scratch)
        expect_reads(file, variable, master, ["-o", "allow_root=" + admitted_root(file, home)], None, scratch)


def case_not_own(work, user):
    home = os.path.join(work, "home")
    os.makedirs(home)
    layouts = make_tree(home)  # root's files
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch)
    chown_tree(scratch, *user.ids)
    for file in layouts:
        expect_refused(file, "belongs to uid 0", admitted_root(file, home), user.ids, scratch)
    # The user's own file in a folder everybody may write (someone could swap it).
    chown_tree(home, *user.ids)
    os.chmod(os.path.join(home, "nca"), 0o777)
    for file in layouts:
        if "/nca/" in file:
            expect_refused(file, "is writable by others", admitted_root(file, home), user.ids, scratch)
    file = os.path.join(home, "nca", "tas.nca")
    variable, master = layouts[file]
    expect_reads(file, variable, master, ["-o", "allow_root=" + admitted_root(file, home)], user.ids, scratch)


CASES = {"owner": case_owner, "root_other": case_root_other, "not_own": case_not_own}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: test_layouts.py {%s}" % "|".join(CASES))
        return 2
    if os.geteuid() != 0:
        print("SKIPPED: test_layouts.py must run as root (it creates a user and runs the commands as it)")
        return SKIP
    work = tempfile.mkdtemp(prefix="ncafs-layouts-")
    os.chmod(work, 0o755)  # the user passes through it
    user = User("ncafs-lay-" + sys.argv[1].replace("_", "")[:12])
    try:
        CASES[sys.argv[1]](work, user)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        user.close()
    print("PASS: " + sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
