#!/usr/bin/python3
"""The package under a real systemd: Debian 12 booted by systemd-nspawn
(tests/packaging/nspawn_root.py), the .deb installed with apt inside.

usage: nspawn_systemd.py DEB_BUILD_DIR

DEB_BUILD_DIR holds the ncafs_*.deb that packaging.deb_build_install made;
the container root is cached in DEB_BUILD_DIR/nspawn-root. Checks, in order:
- ncafs@tas.service (Type=notify) is active only once its mount answers, and
  its STATUS= text says what it serves;
- with allow_other, root and an unprivileged user read the aggregation
  (ncdump), the user is refused an aggregation whose partition is 0600, and
  that refusal is in the journal at priority warning (journalctl -p warning);
- the mount is nosuid,nodev, and the daemon opens partitions with openat2
  (strace), which RestrictSUIDSGID= would turn into ENOSYS;
- an unknown option and a MOUNTPOINT that already is another instance's
  mount both fail with exit status 2, are not retried, and leave that other
  mount alone (ExecStopPost= clears only its own dead mount);
- stop unmounts; restart; kill -9 restarts with the dead mount cleared;
- remote partitions from an HTTP server in the container fail under the
  default unit and work with the documented drop-in;
- boot with the instance enabled and a fuse.ncafs line in /etc/fstab (without
  nosuid,nodev: they are forced): both mounted; umount of the fstab mount;
- upgrade (a repacked .deb of a higher version) restarts the running
  instance on the new program; dpkg -r stops it; dpkg -P removes the link
  that systemctl enable made.
Exit status 77 (SKIPPED) when this machine cannot run the container.
"""

import glob
import json
import os
import re
import sys
import time

import nspawn_root
from packaging_common import PART1, PART2, TestFailure, log, main, make_aggregation, run, wait_until

USER = (65534, 65534)  # nobody:nogroup, as the reader
HTTP_PORT = 8000  # inside the container's own network namespace (only its loopback)


def find_deb(build):
    debs = sorted(glob.glob(os.path.join(build, "ncafs_*.deb")))
    if len(debs) != 1:
        raise TestFailure(f"expected one ncafs_*.deb in {build} (made by packaging.deb_build_install), "
                          f"found {debs}")
    return debs[0]


class Checks:
    def __init__(self, container, deb):
        self.c = container
        self.deb = deb

    # --- helpers ------------------------------------------------------------

    def systemctl(self, *args, check=True):
        return self.c.run(["systemctl", *args], check=check, timeout=120)

    def show(self, unit, prop):
        return self.systemctl("show", "-P", prop, unit).stdout.strip()

    def mounts_at(self, mountpoint):
        """[(fstype, source, mount options)] at MOUNTPOINT in the container, bottom first."""
        text = self.c.run(["cat", "/proc/self/mountinfo"]).stdout
        found = []
        for line in text.splitlines():
            left, _, right = line.partition(" - ")
            fields = left.split()
            if fields[4] == mountpoint:
                fstype, source = right.split()[:2]
                found.append((fstype, source, fields[5]))
        return found

    def expect_tas(self, path, user=None):
        dump = self.c.run(["ncdump", "-v", "tas", path], user=user, timeout=60).stdout
        match = re.search(r"\btas\s*=\s*([^;]*);", dump.split("data:", 1)[-1])
        values = [float(v) for v in match.group(1).replace("\n", " ").split(",")] if match else None
        if values != PART1 + PART2:
            raise TestFailure(f"ncdump {path} as {user or 'root'}: tas = {values}, expected {PART1 + PART2}")

    def write(self, inside, text, mode=0o644):
        path = self.c.path(inside)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def configure(self, name, source, mountpoint, options):
        self.c.run(["mkdir", "-p", mountpoint])
        self.write(f"/etc/ncafs/{name}.conf", f"SOURCE={source}\nMOUNTPOINT={mountpoint}\nOPTIONS={options}\n")

    def main_pid(self, unit):
        return int(self.show(unit, "MainPID"))

    # --- the checks -----------------------------------------------------------

    def install(self):
        with open(self.deb, "rb") as src, open(self.c.path("/root/ncafs.deb"), "wb") as dst:
            dst.write(src.read())
        # The container has no network: the cached root holds every dependency
        # (nspawn_root.ensure_root).
        self.c.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "/root/ncafs.deb"], timeout=600)
        self.systemctl("cat", "ncafs@.service")
        log("installed the .deb with apt-get; systemd knows ncafs@.service")

    def make_data(self):
        os.makedirs(self.c.path("/srv/tas"), mode=0o755)
        make_aggregation(self.c.path("/srv/tas"), partitions_at="/srv/tas")
        # An aggregation whose partitions only root may read.
        os.makedirs(self.c.path("/srv/tas/secret"), mode=0o755)
        make_aggregation(self.c.path("/srv/tas/secret"), partitions_at="/srv/tas/secret", name="secret")
        for part in ("part1.nc", "part2.nc"):
            os.chmod(self.c.path(f"/srv/tas/secret/{part}"), 0o600)
        os.makedirs(self.c.path("/srv/other"), mode=0o755)
        make_aggregation(self.c.path("/srv/other"), partitions_at="/srv/other")
        # Remote: the partitions served over HTTP, the NCA file naming their URLs.
        os.makedirs(self.c.path("/srv/http"), mode=0o755)
        os.makedirs(self.c.path("/srv/remote"), mode=0o755)
        make_aggregation(self.c.path("/srv/remote"), partitions_at=f"http://127.0.0.1:{HTTP_PORT}")
        for part in ("part1.nc", "part2.nc"):
            os.rename(self.c.path(f"/srv/remote/{part}"), self.c.path(f"/srv/http/{part}"))

    def start_tas(self):
        self.configure("tas", "/srv/tas", "/mnt/tas", "ro,allow_other")
        started = time.monotonic()
        self.systemctl("start", "ncafs@tas.service")
        # Type=notify: start returns once READY=1 came, which the daemon sends
        # only after its mount answers.
        mounts = self.mounts_at("/mnt/tas")
        if not mounts or mounts[-1][0] != "fuse.ncafs":
            raise TestFailure(f"systemctl start returned but /mnt/tas holds {mounts}")
        flags = set(mounts[-1][2].split(","))
        if not {"ro", "nosuid", "nodev"} <= flags:
            raise TestFailure(f"the unit's mount has flags {sorted(flags)}, expected ro,nosuid,nodev")
        status = self.show("ncafs@tas.service", "StatusText")
        if status != "serving /srv/tas at /mnt/tas":
            raise TestFailure(f"STATUS= text is {status!r}, expected 'serving /srv/tas at /mnt/tas'")
        log(f"ncafs@tas active after {time.monotonic() - started:.1f} s with its mount up "
            f"({mounts[-1][2]}); status: {status}")

    def reads(self):
        self.expect_tas("/mnt/tas/agg.nc")
        self.expect_tas("/mnt/tas/agg.nc", user=USER)
        self.expect_tas("/mnt/tas/secret/secret.nc")
        refused = self.c.run(["ncdump", "-v", "tas", "/mnt/tas/secret/secret.nc"], user=USER, check=False)
        if refused.returncode == 0 or "Permission denied" not in refused.stderr + refused.stdout:
            raise TestFailure(f"uid {USER[0]} read an aggregation of 0600 partitions, or was refused for "
                              f"another reason: {refused.stdout} {refused.stderr}")
        log(f"reads: root and uid {USER[0]} read agg.nc; uid {USER[0]} is refused secret.nc (0600 partitions)")

    def journal_priorities(self):
        def warnings():
            return self.c.run(["journalctl", "-u", "ncafs@tas.service", "-p", "warning", "--no-pager",
                               "-o", "json"], check=False).stdout

        wait_until(lambda: "refused for uid 65534" in warnings(), 20,
                      "the refusal of secret.nc in journalctl -p warning")
        entries = [json.loads(line) for line in warnings().splitlines() if line.startswith("{")]
        refusal = [e for e in entries if "refused for uid 65534" in e.get("MESSAGE", "")]
        if refusal[0].get("PRIORITY") != "4" or refusal[0]["MESSAGE"].startswith("<"):
            raise TestFailure(f"the refusal is logged as {refusal[0]}, expected PRIORITY 4 without '<N>'")
        info = self.c.run(["journalctl", "-u", "ncafs@tas.service", "-p", "info", "-o", "json",
                           "--no-pager"]).stdout
        serving = [json.loads(l) for l in info.splitlines() if "serving /srv/tas" in l]
        if not serving or serving[-1].get("PRIORITY") != "6":
            raise TestFailure(f"the 'serving' line is not at priority 6 (info): {serving}")
        log("journal: the refusal at priority 4 (warning), 'serving' at 6 (info)")

    def openat2_used(self):
        """strace the daemon while it opens partitions not yet open."""
        pid = self.main_pid("ncafs@tas.service")
        trace = "/root/openat2.trace"
        self.c.run(["sh", "-c", f"strace -f -qq -e trace=openat2 -p {pid} -o {trace} </dev/null >/dev/null 2>&1 & "
                    "echo $! > /root/strace.pid"])
        time.sleep(1.0)  # strace attaches
        # A dataset whose files the daemon has not opened yet.
        os.makedirs(self.c.path("/srv/tas/fresh"), mode=0o755)
        make_aggregation(self.c.path("/srv/tas/fresh"), partitions_at="/srv/tas/fresh", name="fresh")
        self.expect_tas("/mnt/tas/fresh/fresh.nc")
        self.c.run(["sh", "-c", "kill $(cat /root/strace.pid); sleep 0.5"])
        text = open(self.c.path(trace)).read()
        calls = [l for l in text.splitlines() if "openat2(" in l]
        good = [l for l in calls if re.search(r"= \d+\s*$", l)]
        if not good:
            raise TestFailure(f"the daemon under the unit made no successful openat2 call while opening "
                              f"partitions (RestrictSUIDSGID= or SystemCallFilter= answering ENOSYS?):\n{text}")
        log(f"openat2: {len(good)} successful calls of {len(calls)}, e.g. {good[0].strip()}")

    def configuration_errors(self):
        """Exit status 2, no retry, the other instance's mount untouched."""
        before = self.main_pid("ncafs@tas.service")
        self.configure("over", "/srv/other", "/mnt/tas", "ro")
        self.configure("bad", "/srv/other", "/mnt/bad", "ro,no_such_option")
        for name, why in (("over", "MOUNTPOINT is ncafs@tas's mount"), ("bad", "an unknown option")):
            unit = f"ncafs@{name}.service"
            self.systemctl("start", unit, check=False)
            status, restarts = self.show(unit, "ExecMainStatus"), self.show(unit, "NRestarts")
            if status != "2" or restarts != "0":
                raise TestFailure(f"{unit} ({why}): exit status {status}, {restarts} restarts; expected 2, 0")
            self.systemctl("reset-failed", unit, check=False)
        mounts = self.mounts_at("/mnt/tas")
        if len(mounts) != 1 or self.main_pid("ncafs@tas.service") != before:
            raise TestFailure(f"after the failed instances /mnt/tas holds {mounts}, ncafs@tas pid "
                              f"{self.main_pid('ncafs@tas.service')} (was {before})")
        self.expect_tas("/mnt/tas/agg.nc")
        log("configuration errors: exit status 2, not retried; ncafs@tas's mount untouched")

    def lifecycle(self):
        self.systemctl("stop", "ncafs@tas.service")
        if self.mounts_at("/mnt/tas"):
            raise TestFailure(f"after stop /mnt/tas still holds {self.mounts_at('/mnt/tas')}")
        self.systemctl("start", "ncafs@tas.service")
        first = self.main_pid("ncafs@tas.service")
        self.systemctl("restart", "ncafs@tas.service")
        second = self.main_pid("ncafs@tas.service")
        if second in (0, first):
            raise TestFailure(f"restart: main pid {first} -> {second}")
        self.expect_tas("/mnt/tas/agg.nc", user=USER)
        # kill -9: the dead mount must be cleared and the service restarted (RestartSec=5s).
        self.c.run(["sh", "-c", f"kill -9 {second}"])
        wait_until(lambda: self.main_pid("ncafs@tas.service") not in (0, second) and
                      self.show("ncafs@tas.service", "ActiveState") == "active", 30,
                      "ncafs@tas to be restarted after kill -9")
        mounts = self.mounts_at("/mnt/tas")
        if len(mounts) != 1:
            raise TestFailure(f"after kill -9 and the restart /mnt/tas holds {mounts}: the dead mount stayed")
        self.expect_tas("/mnt/tas/agg.nc", user=USER)
        log(f"stop, start, restart ({first} -> {second}), kill -9 -> restarted as "
            f"{self.main_pid('ncafs@tas.service')}, one mount at /mnt/tas")

    def remote(self):
        self.c.run(["systemd-run", "--unit=ncafs-test-http", "busybox", "httpd", "-f",
                    "-p", f"127.0.0.1:{HTTP_PORT}", "-h", "/srv/http"])
        wait_until(lambda: self.c.run(["busybox", "wget", "-q", "-O", "/dev/null",
                                       f"http://127.0.0.1:{HTTP_PORT}/part1.nc"], check=False).returncode == 0,
                   20, "the HTTP server")
        # The operator allows the server (loopback: named explicitly); the
        # default unit still denies the network, the drop-in opens it.
        self.configure("remote", "/srv/remote", "/mnt/remote",
                       f"ro,allow_other,allow_root=http://127.0.0.1:{HTTP_PORT}/")
        self.systemctl("start", "ncafs@remote.service")
        denied = self.c.run(["ncdump", "-v", "tas", "/mnt/remote/agg.nc"], check=False, timeout=120)
        if denied.returncode == 0:
            raise TestFailure("remote partitions were read under the default unit, which allows AF_UNIX only")
        dropin = "/etc/systemd/system/ncafs@remote.service.d"
        self.c.run(["mkdir", "-p", dropin])
        self.c.run(["cp", "/usr/share/doc/ncafs/examples/remote-partitions.conf", dropin + "/"])
        self.systemctl("daemon-reload")
        self.systemctl("restart", "ncafs@remote.service")
        self.expect_tas("/mnt/remote/agg.nc", user=USER)
        self.systemctl("stop", "ncafs@remote.service")
        log("remote: refused under the default unit, read with the drop-in remote-partitions.conf")

    def prepare_boot(self):
        self.systemctl("enable", "ncafs@tas.service")
        self.c.run(["mkdir", "-p", "/mnt/fstab"])
        with open(self.c.path("/etc/fstab"), "a") as f:
            f.write("/srv/other /mnt/fstab fuse.ncafs ro,allow_other,nofail 0 0\n")

    def after_boot(self):
        if self.show("ncafs@tas.service", "ActiveState") != "active":
            raise TestFailure("after boot the enabled ncafs@tas.service is not active:\n" +
                              self.c.run(["journalctl", "-b", "-u", "ncafs@tas.service", "--no-pager"],
                                         check=False).stdout)
        self.expect_tas("/mnt/tas/agg.nc", user=USER)
        mounts = self.mounts_at("/mnt/fstab")
        if not mounts or mounts[-1][0] != "fuse.ncafs" or not {"nosuid", "nodev"} <= set(mounts[-1][2].split(",")):
            raise TestFailure(f"after boot the fstab line gave {mounts}, expected fuse.ncafs with nosuid,nodev")
        self.expect_tas("/mnt/fstab/agg.nc", user=USER)
        self.c.run(["umount", "/mnt/fstab"])
        wait_until(lambda: not self.mounts_at("/mnt/fstab"), 20, "umount /mnt/fstab")
        log(f"boot: ncafs@tas enabled and active; the fstab line mounted ({mounts[-1][2]}); umount worked")

    def package_lifecycle(self):
        unit = "ncafs@tas.service"
        old = self.main_pid(unit)
        upgrade = self.repacked_deb()
        self.c.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", upgrade], timeout=300)
        new = self.main_pid(unit)
        exe = self.c.run(["readlink", f"/proc/{new}/exe"], check=False).stdout.strip()
        if new in (0, old) or exe != "/usr/bin/ncafs":
            raise TestFailure(f"upgrade: main pid {old} -> {new}, running {exe!r}: not restarted on the new program")
        self.expect_tas("/mnt/tas/agg.nc", user=USER)
        self.c.run(["dpkg", "-r", "ncafs"], timeout=300)
        if self.show(unit, "ActiveState") == "active" or self.mounts_at("/mnt/tas"):
            raise TestFailure(f"after dpkg -r {unit} is {self.show(unit, 'ActiveState')}, /mnt/tas holds "
                              f"{self.mounts_at('/mnt/tas')}")
        running = self.c.run(["sh", "-c", 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = ncafs ] '
                              '&& echo ${p#/proc/}; done; true']).stdout.split()
        if running:
            raise TestFailure(f"after dpkg -r ncafs processes still run: {running}")
        link = "/etc/systemd/system/multi-user.target.wants/ncafs@tas.service"
        if not os.path.islink(self.c.path(link)):
            raise TestFailure(f"{link} (systemctl enable) is gone after dpkg -r: only purge removes it")
        self.c.run(["dpkg", "-P", "ncafs"], timeout=300)
        if os.path.lexists(self.c.path(link)):
            raise TestFailure(f"dpkg -P left {link}")
        log(f"package: upgrade restarted the instance ({old} -> {new}, {exe}); dpkg -r stopped it; "
            "dpkg -P removed the enable link")

    def repacked_deb(self):
        """The same package with a higher version: what an upgrade installs."""
        tree = self.c.path("/root/upgrade")
        run(["dpkg-deb", "-R", self.deb, tree])
        control = os.path.join(tree, "DEBIAN", "control")
        text = open(control).read()
        version = re.search(r"^Version: (\S+)$", text, re.M).group(1)
        with open(control, "w") as f:
            f.write(text.replace(f"Version: {version}", f"Version: {version}+upgrade1"))
        run(["dpkg-deb", "--root-owner-group", "-b", tree, self.c.path("/root/ncafs-upgrade.deb")])
        return "/root/ncafs-upgrade.deb"


def check(argv):
    build = argv[0]
    try:
        nspawn_root.check_host()
    except nspawn_root.SkipTest as why:
        print(f"SKIPPED: the package under systemd (systemd-nspawn) cannot run here: {why}", flush=True)
        sys.exit(77)
    deb = find_deb(build)
    started = time.monotonic()
    root = nspawn_root.ensure_root(build, deb)
    ready = time.monotonic()
    with nspawn_root.Container(root, nspawn_root.make_work_dir()) as container:
        checks = Checks(container, deb)
        checks.make_data()
        container.boot()
        checks.install()
        checks.start_tas()
        checks.reads()
        checks.journal_priorities()
        checks.openat2_used()
        checks.configuration_errors()
        checks.lifecycle()
        checks.remote()
        checks.prepare_boot()
        container.shutdown()
        container.boot()
        checks.after_boot()
        checks.package_lifecycle()
    log(f"time: container root {ready - started:.0f} s, checks {time.monotonic() - ready:.0f} s")


if __name__ == "__main__":
    main(check)
