#!/usr/bin/python3
"""ncafs.1 renders with groff in all warning categories (-ww) without a single
diagnostic, and has the sections the manual promises.

usage: check_man_page.py MANPAGE"""

import re
import subprocess

from packaging_common import TestFailure, main, log

REQUIRED_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "NAMESPACE", "VIEWS", "OPTIONS", "COMMANDS",
                     "EXIT STATUS", "SIGNALS", "ENVIRONMENT", "FILES", "EXAMPLES", "LIMITS",
                     "SEE ALSO"]
REQUIRED_EXAMPLES = ["mount -t fuse.ncafs", "fuse.ncafs  ro,allow_other,nofail", "systemctl enable",
                     "journalctl -u ncafs@", "ncafs export", "ncafs inspect", "ncafs check"]


def check(argv):
    (manpage,) = argv
    result = subprocess.run(["groff", "-ww", "-man", "-Tutf8", manpage], capture_output=True, text=True)
    if result.returncode != 0 or result.stderr.strip():
        raise TestFailure(f"groff -ww -man -Tutf8 {manpage} exited {result.returncode} with:\n{result.stderr}")
    # The rendered text, without overstrike bold/underline, as a reader sees it.
    text = re.sub(r".\x08", "", result.stdout)
    headings = set(re.findall(r"^([A-Z][A-Z ]+)$", text, re.MULTILINE))
    missing = [s for s in REQUIRED_SECTIONS if s not in headings]
    if missing:
        raise TestFailure(f"{manpage}: sections missing: {missing}")
    flat = re.sub(r"[\u2010\u2011\u2212]", "-", text)  # hyphens as groff may render them
    missing = [e for e in REQUIRED_EXAMPLES if e not in flat]
    if missing:
        raise TestFailure(f"{manpage}: examples missing: {missing}")
    log(f"{manpage}: renders without warnings, {len(headings)} sections, all examples present")


main(check)
