#!/usr/bin/python3
"""The daemon exits once its mount is gone, with status 0.

Run as: test_exit.py CASE   (CASE: unmount, background, signal, namespace)
  unmount     ncafs -f, a listing and reads (the watch thread, the read
              pools and the partition cache busy), then fusermount3 -u: the
              process exits with 0 and its log ends with "unmounted"
  background  ncafs without -f (daemonized, with its outside helper): after
              fusermount3 -u no process of the mount is left
  signal      ncafs -f ended by SIGTERM (as systemd stops the unit): it
              unmounts and exits with 0
  namespace   a mount namespace made while the mount exists holds a copy
              of it (the kernel's rule, shown first: after fusermount3 -u
              the daemon serves the copy until that namespace ends);
              one made by tests/e2e/private_mounts.py, as the tests that
              boot containers make theirs, holds none: the daemon exits
No timing threshold: each wait is generous (60 s) and only says whether the
process ended. Environment: NCAFS_BIN, NCAFS_SKIP_FUSE=1 (exit 77 where
/dev/fuse is unusable).
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_aggregations  # noqa: E402
import make_realistic  # noqa: E402
from test_mount import NCAFS, check, fail, run_cases  # noqa: E402

WAIT = 60  # seconds: generous, not a threshold


def collection(work):
    src = os.path.join(work, "src")
    make_realistic.write(os.path.join(src, "realistic"))
    make_aggregations.monthly(os.path.join(src, "monthly"))
    return src


def wait_mounted(mnt, process=None):
    deadline = time.time() + WAIT
    while not os.path.ismount(mnt):
        if process is not None and process.poll() is not None:
            fail("ncafs exited with %d before mounting" % process.returncode)
        if time.time() > deadline:
            fail("the mount did not appear within %d s" % WAIT)
        time.sleep(0.05)


def use(mnt):
    """A listing and whole reads: every thread the daemon starts has work."""
    for folder, _, files in os.walk(mnt):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                while f.read(1 << 20):
                    pass


def unmount(mnt):
    r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True, text=True)
    check(r.returncode == 0, "fusermount3 -u failed: " + r.stderr)


def foreground(work, end):
    """ncafs -f, used, then ended by `end(process, mnt)`: returns its exit status, log and mount point."""
    src, mnt = collection(work), tempfile.mkdtemp(prefix="ncafs-mnt-", dir=work)
    log_path = os.path.join(work, "log.txt")
    with open(log_path, "w") as log:
        process = subprocess.Popen([NCAFS, src, mnt, "-f"], stdout=log, stderr=log)
    try:
        wait_mounted(mnt, process)
        use(mnt)
        start = time.time()
        end(process, mnt)
        try:
            code = process.wait(timeout=WAIT)
            print("exited %.2f s after the end of its mount (for information)" % (time.time() - start))
        except subprocess.TimeoutExpired:
            fail("ncafs did not exit within %d s of the end of its mount" % WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
    check(not os.path.ismount(mnt), "the mount is still there after ncafs exited")
    with open(log_path, errors="replace") as f:
        return code, f.read(), mnt


def case_unmount(work):
    code, log, mnt = foreground(work, lambda process, mnt: unmount(mnt))
    check(code == 0, "ncafs exited with %d after fusermount3 -u:\n%s" % (code, log))
    check(log.rstrip().endswith("ncafs: info: unmounted " + mnt), "the last log line is not 'unmounted':\n" + log)


def case_signal(work):
    code, log, _ = foreground(work, lambda process, mnt: process.send_signal(signal.SIGTERM))
    check(code == 0, "ncafs exited with %d after SIGTERM:\n%s" % (code, log))
    check("info: unmounted " in log, "no 'unmounted' line after SIGTERM:\n" + log)


def processes_of(mnt):
    """The processes whose command line names this (unique) mount point."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = f.read().split(b"\0")
            with open("/proc/%s/stat" % entry) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mnt.encode() in args and state != "Z":
            found.append(int(entry))
    return found


def case_background(work):
    src, mnt = collection(work), tempfile.mkdtemp(prefix="ncafs-mnt-", dir=work)
    r = subprocess.run([NCAFS, src, mnt], capture_output=True, text=True, timeout=WAIT)
    check(r.returncode == 0, "ncafs exited with %d: %s" % (r.returncode, r.stderr))
    try:
        wait_mounted(mnt)
        daemons = processes_of(mnt)
        check(daemons, "no process of the mount found")
        use(mnt)
        start = time.time()
        unmount(mnt)
        deadline = start + WAIT
        while processes_of(mnt) and time.time() < deadline:
            time.sleep(0.02)
        print("gone %.2f s after fusermount3 -u (for information)" % (time.time() - start))
        left = processes_of(mnt)
        for pid in left:  # ours (they name our mount point): not left behind
            os.kill(pid, signal.SIGKILL)
        check(not left, "processes %s still ran %d s after fusermount3 -u" % (left, WAIT))
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])


def held_by_namespace(work, prefix, patience):
    """ncafs -f, then a process in a new mount namespace (PREFIX + sleep),
    then fusermount3 -u: whether the daemon was still running PATIENCE
    seconds later, while that process lives."""
    def end(process, mnt):
        holder = subprocess.Popen(prefix + ["sleep", "600"])
        try:
            time.sleep(1)  # the namespace exists once unshare has run
            unmount(mnt)
            try:
                process.wait(timeout=patience)
                end.held = False
            except subprocess.TimeoutExpired:
                end.held = True
        finally:
            holder.kill()
            holder.wait()
    code, log, _ = foreground(work, end)
    check(code == 0, "ncafs exited with %d:\n%s" % (code, log))
    return end.held


def case_namespace(work):
    private = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_mounts.py")
    # Held for as long as the namespace lives: any wait shows it.
    check(held_by_namespace(os.path.join(work, "a"), ["unshare", "-m", "--propagation", "private"], 3),
          "unshare's mount namespace did not hold the mount: this check cannot tell private_mounts.py works")
    check(not held_by_namespace(os.path.join(work, "b"), [sys.executable, private], WAIT),
          "a namespace made by private_mounts.py still held the mount %d s after fusermount3 -u" % WAIT)


CASES = {"unmount": case_unmount, "background": case_background, "signal": case_signal,
         "namespace": case_namespace}

if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-exit-"))
