#!/usr/bin/python3
"""Cleanup of the fixture ncafs_deb_installed: purges the package installed by
deb_build_install.py and checks that its files, conffile included, are gone.

usage: deb_purge.py"""

import os
import subprocess

from packaging_common import TestFailure, log, main, require_root, run

FILES = ["/usr/bin/ncafs", "/usr/sbin/mount.ncafs", "/usr/share/man/man1/ncafs.1.gz",
         "/usr/lib/systemd/system/ncafs@.service", "/etc/ncafs/example.conf.example"]


def check(argv):
    require_root()
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "ncafs"], capture_output=True, text=True)
    if "ok installed" not in status.stdout:
        raise TestFailure(f"ncafs is not installed (dpkg: {status.stdout or status.stderr.strip()}); "
                          "did deb_build_install.py run?")
    run(["apt-get", "purge", "-y", "-q", "ncafs"], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
        timeout=300)
    left = [f for f in FILES if os.path.exists(f)]
    if left:
        raise TestFailure(f"after apt-get purge ncafs these remain: {left}")
    log("purged; no file of the package remains")


main(check)
