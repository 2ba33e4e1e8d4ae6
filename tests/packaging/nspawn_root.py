"""A Debian 12 container booted by systemd-nspawn, for the tests that need a
real systemd as PID 1 (tests/packaging/nspawn_systemd.py).

The root is debootstrapped once (minbase plus systemd and what the package
and the tests need) into CACHE/nspawn-root and reused; each run boots it
through an overlay whose upper layer is a temporary directory, so the cached
root is never changed. The container:
- runs systemd 252 as PID 1 on cgroup v2 (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1),
  in a cgroup of its own below the host's cgroup2 mount;
- may load the BPF programs of DeviceAllow= and IPAddressDeny=
  (SYSTEMD_SECCOMP=0: nspawn's own seccomp filter refuses bpf(2); and
  --capability=all);
- sees /dev/fuse (--bind=/dev/fuse);
- has a network namespace with only its loopback (--private-network), so a
  server in it may use a fixed port without meeting the host's.
It is not registered with systemd-machined (--register=no --keep-unit): the
host's PID 1 need not be systemd. Commands run inside through nsenter.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from packaging_common import TestFailure, log, run

PRIVATE_MOUNTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e", "private_mounts.py")

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# systemd as init, D-Bus for systemctl, fuse3 for mount.fuse3 and
# fusermount3, netcdf-bin for ncdump, busybox for the HTTP server of remote
# partitions (httpd; a tenth of python3's size), strace to see which system
# calls the daemon makes. The
# package's own dependencies are added from its Depends field.
BASE_PACKAGES = ["systemd", "systemd-sysv", "dbus", "fuse3", "netcdf-bin", "busybox", "strace"]
COMPLETE = ".ncafs-root-complete"


class SkipTest(Exception):
    """This machine cannot run the container; the message says why."""


def cgroup2_root():
    """Where the host's cgroup v2 hierarchy is mounted (pure v2, or the
    unified part of a hybrid setup), or None."""
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(path, "cgroup.controllers")):
            return path
    return None


def check_host():
    if os.geteuid() != 0:
        raise SkipTest("not root: debootstrap and systemd-nspawn need root")
    for program in ("debootstrap", "systemd-nspawn", "nsenter"):
        if shutil.which(program) is None:
            raise SkipTest(f"{program} is missing (packaging/install-deps.sh installs debootstrap and "
                           "systemd-container)")
    if not os.path.exists("/dev/fuse"):
        raise SkipTest("/dev/fuse is missing on this machine")
    if cgroup2_root() is None:
        raise SkipTest("no cgroup v2 hierarchy on this machine (neither /sys/fs/cgroup nor "
                       "/sys/fs/cgroup/unified): systemd 252 in the container needs one")


def package_dependencies(deb):
    """The package names of the .deb's Depends (first alternative each)."""
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    names = []
    for clause in depends.split(","):
        name = clause.split("|")[0].strip().split(" ")[0].split(":")[0]
        if name:
            names.append(name)
    return names


def installed_in(root, package):
    result = subprocess.run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f=${Status}", package],
                            capture_output=True, text=True)
    return result.stdout.endswith("install ok installed")


def ensure_root(cache, deb):
    """CACHE/nspawn-root, debootstrapped now if it is not complete or lacks a
    dependency of DEB (the container has no network to fetch it)."""
    root = os.path.join(cache, "nspawn-root")
    packages = BASE_PACKAGES + [p for p in package_dependencies(deb) if p not in BASE_PACKAGES]
    if os.path.exists(os.path.join(root, COMPLETE)):
        missing = [p for p in packages if not installed_in(root, p)]
        if not missing:
            log(f"container root: reusing {root}")
            return root
        log(f"container root: {root} lacks {missing}: debootstrapping it again")
    partial = root + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    debs = os.path.join(cache, "nspawn-debs")  # downloaded .debs, kept for the next debootstrap
    os.makedirs(debs, exist_ok=True)
    started = time.monotonic()
    run(["debootstrap", "--variant=minbase", f"--cache-dir={debs}", "--include=" + ",".join(packages),
         SUITE, partial, MIRROR], timeout=1800)
    # No getty on the console: nobody logs in.
    for unit in ("console-getty.service", "getty@tty1.service", "systemd-networkd-wait-online.service"):
        os.symlink("/dev/null", os.path.join(partial, "etc/systemd/system", unit))
    with open(os.path.join(partial, COMPLETE), "w") as f:
        f.write(" ".join(packages) + "\n")
    os.rename(partial, root)
    log(f"container root: debootstrapped {root} in {time.monotonic() - started:.0f} s")
    return root


class Container:
    """The booted container (a context manager): run() executes inside."""

    def __init__(self, root, work):
        self.root = root
        self.work = work
        self.merged = os.path.join(work, "merged")
        self.upper = os.path.join(work, "upper")
        self.name = f"ncafs-test-{os.getpid()}"
        self.cgroup = None
        self.process = None
        self.leader = None
        self.boots = 0
        for d in (self.merged, self.upper, os.path.join(work, "overlay-work")):
            os.makedirs(d, exist_ok=True)
        run(["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={root},upperdir={self.upper},workdir={os.path.join(work, 'overlay-work')}", self.merged])

    def path(self, inside):
        """The host path of the container path INSIDE."""
        return os.path.join(self.merged, inside.lstrip("/"))

    def boot(self):
        self.boots += 1
        self.cgroup = os.path.join(cgroup2_root(), f"{self.name}-{self.boots}")
        os.mkdir(self.cgroup)
        procs = os.path.join(self.cgroup, "cgroup.procs")

        def enter_cgroup():  # in the child, before exec: nspawn keeps this cgroup (--keep-unit)
            with open(procs, "w") as f:
                f.write("0")

        env = dict(os.environ, SYSTEMD_NSPAWN_UNIFIED_HIERARCHY="1", SYSTEMD_SECCOMP="0")
        # Started without the FUSE mounts of tests running beside: a copy in the
        # container's namespace would keep their daemons alive after their unmount.
        command = [sys.executable, PRIVATE_MOUNTS, "systemd-nspawn", "--quiet", "--directory", self.merged, "--boot", "--register=no",
                   "--keep-unit", f"--machine={self.name}", "--bind=/dev/fuse", "--capability=all",
                   "--private-network", "--console=passive"]
        log("$ " + " ".join(command))
        self.console = open(os.path.join(self.work, f"console-{self.boots}.log"), "w")
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=self.console,
                                        stderr=subprocess.STDOUT, preexec_fn=enter_cgroup)
        self.leader = self._wait_for_leader()
        # systemctl needs systemd's private socket, which appears a moment
        # after exec; before it, is-system-running says "offline" at once.
        deadline = time.monotonic() + 60
        while self.run(["test", "-S", "/run/systemd/private"], check=False, quiet=True).returncode != 0:
            if time.monotonic() > deadline:
                raise TestFailure("the container's systemd opened no /run/systemd/private within 60 s")
            time.sleep(0.2)
        result = self.run(["systemctl", "is-system-running", "--wait"], check=False, timeout=120)
        state = result.stdout.strip()
        if state not in ("running", "degraded"):
            raise TestFailure(f"the container's systemd is {state!r} after booting")
        if state == "degraded":
            failed = self.run(["systemctl", "--failed", "--no-legend", "--plain"], check=False).stdout
            log(f"container booted degraded; failed units:\n{failed}")
        log(f"container {self.name}: systemd is {state} (boot {self.boots})")

    def _wait_for_leader(self):
        """The PID (host's view) of the container's PID 1: nspawn's child."""
        children = f"/proc/{self.process.pid}/task/{self.process.pid}/children"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise TestFailure(f"systemd-nspawn exited with {self.process.returncode}:\n"
                                  f"{open(self.console.name).read()}")
            try:
                pids = open(children).read().split()
            except OSError:
                pids = []
            for pid in pids:
                try:
                    if open(f"/proc/{pid}/comm").read().strip() == "systemd":
                        return int(pid)
                except OSError:
                    pass
            time.sleep(0.1)
        raise TestFailure("the container's init did not start within 60 s")

    def run(self, args, check=True, timeout=120, user=None, quiet=False):
        """ARGS inside the container (every namespace of its PID 1), as root
        or, with USER=(uid, gid), with those ids and no supplementary groups."""
        prefix = ["nsenter", f"--target={self.leader}", "--mount", "--uts", "--ipc", "--net", "--pid",
                  "--cgroup", "--root", "--wd=/", "env", "-i",
                  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
        if user is not None:
            prefix += ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]
        if quiet:
            return subprocess.run(prefix + list(args), capture_output=True, text=True, timeout=timeout)
        return run(prefix + list(args), check=check, timeout=timeout)

    def shutdown(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            if self.leader is not None:
                self.run(["systemctl", "poweroff", "--no-block"], check=False, timeout=30)
            try:
                self.process.wait(60 if self.leader is not None else 1)
            except subprocess.TimeoutExpired:
                log("the container did not power off within 60 s: killing it")
        self._kill_all()  # whatever is left (nothing after a clean poweroff)
        self.process.wait()
        self.console.close()
        self.process = None
        self.leader = None
        self._remove_cgroup()

    def _kill_all(self):
        """SIGKILL to every process of the container and to nspawn (cgroup.kill)."""
        with open(os.path.join(self.cgroup, "cgroup.kill"), "w") as f:
            f.write("1")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
                open(os.path.join(d, "cgroup.procs")).read().strip() for d, _, _ in os.walk(self.cgroup)):
            time.sleep(0.1)

    def _remove_cgroup(self):
        # Left-over child cgroups go first (rmdir of a cgroup with children fails).
        for directory, _, _ in sorted(os.walk(self.cgroup), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(directory)
            except OSError as e:
                log(f"cannot remove cgroup {directory}: {e}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        subprocess.run(["umount", "-l", self.merged], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)


def make_work_dir():
    return tempfile.mkdtemp(prefix="ncafs-nspawn-")
