#!/usr/bin/python3
"""A confined reader that dies is reported, naming the file and the signal.

Run as: test_cli_death.py CASE   (CASE: export, check, inspect)
`ncafs export`, `check` and `inspect` read files in a confined child
process. Here the child is made to crash (NCAFS_TEST_CRASH_ON=NAME, the
test-only switch that raises SIGSEGV when the child starts on a file of that
name, as a parser bug would): the command must exit non-zero and say on
standard error which file it was reading and which signal ended it, never
a bare exit status (the signal is SIGSEGV, or SIGABRT where
AddressSanitizer catches the crash and aborts). With two files given, the line names the one the child
was reading, not the other. Without Landlock the commands run unconfined,
so there is no child: SKIPPED (exit 77). Environment: NCAFS_BIN.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import netCDF4
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mount import NCAFS, check  # noqa: E402

SKIP = 77


def classic(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("v", "f4", ("x",))[:] = np.arange(4, dtype="f4")


def run_ncafs(args, crash_on):
    env = dict(os.environ, NCAFS_TEST_CRASH_ON=crash_on)
    r = subprocess.run([NCAFS] + args, capture_output=True, text=True, timeout=120, env=env)
    if "Landlock" in r.stderr and "warning" in r.stderr:
        print("SKIPPED: the commands run unconfined here (no Landlock): " + r.stderr.strip())
        sys.exit(SKIP)
    return r


def expect_death_named(r, path, other=None):
    check(r.returncode != 0, "exit status 0 after the reader died:\n" + r.stderr)
    # SIGSEGV, or SIGABRT where AddressSanitizer catches the crash and aborts.
    lines = [l for l in r.stderr.splitlines() if path in l and re.search(r"killed by signal \d+ \(\w", l)]
    check(lines, "no line on standard error names %s and the signal:\n%s" % (path, r.stderr))
    if other:
        check(other not in lines[0], "the line names the file not being read: " + lines[0])


def case_export(work):
    a = os.path.join(work, "a.nc")
    classic(a)
    out = os.path.join(work, "out.nc")
    r = run_ncafs(["export", a, "-o", out], "a.nc")
    expect_death_named(r, a)
    check(not os.path.exists(out), "a half-written output is left after the death")
    r = run_ncafs(["export", a, "-o", out], "")
    check(r.returncode == 0 and os.path.getsize(out) > 0, "export without the switch failed:\n" + r.stderr)


def case_check(work):
    a, b = os.path.join(work, "a.nc"), os.path.join(work, "b.nc")
    classic(a)
    classic(b)
    expect_death_named(run_ncafs(["check", a, b], "b.nc"), b, other=a)


def case_inspect(work):
    a, b = os.path.join(work, "a.nc"), os.path.join(work, "b.nc")
    classic(a)
    classic(b)
    expect_death_named(run_ncafs(["inspect", a, b], "a.nc"), a, other=b)


CASES = {"export": case_export, "check": case_check, "inspect": case_inspect}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: %s {%s}" % (sys.argv[0], "|".join(CASES)))
        return 2
    work = tempfile.mkdtemp(prefix="ncafs-cli-death-")
    try:
        CASES[sys.argv[1]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: " + sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
