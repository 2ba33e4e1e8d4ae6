#!/usr/bin/python3
"""No setuid program and no device runs through an ncafs mount, however it
was made.

usage: nosuid_mounts.py NCAFS_BINARY

SOURCE holds a setuid-root copy of /usr/bin/id (whoever writes SOURCE is
hostile). It is mounted twice with allow_other: through mount.fuse3, which
adds dev,suid for root (`mount -t fuse PROGRAM#SOURCE`, the form of type
fuse.ncafs that names the program by path: mount(8) resets PATH for helpers,
and this program is not installed; tests/packaging/nspawn_systemd.py mounts
the installed type fuse.ncafs from fstab), and by the command line asking
for suid,dev itself. Each time a user made for the test (unique name,
removed afterwards) runs MOUNT/id: its effective uid must be its own, stat
must show no setuid bit, and /proc/self/mountinfo must say nosuid,nodev.
The same program run directly from SOURCE first shows that the setuid bit
works here at all, so that the checks through the mount can fail.
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid

from packaging_common import TestFailure, force_unmount, log, main, mount_entry, require_root, run, wait_until


def make_user():
    name = "ncafs-suid-" + uuid.uuid4().hex[:8]
    run(["useradd", "--no-create-home", "--no-user-group", "--shell", "/usr/sbin/nologin", name])
    return name


def effective_uid(user, program):
    """`PROGRAM -u` (id: the effective uid) run as USER, without supplementary groups."""
    result = run(["setpriv", "--reuid", user, "--regid", "nogroup", "--clear-groups", program, "-u"], timeout=60)
    return int(result.stdout.strip())


def check_mount(mountpoint, user, user_uid, how):
    entry = mount_entry(mountpoint)
    if entry is None or entry[0] != "fuse.ncafs":
        raise TestFailure(f"{how}: no fuse.ncafs mount at {mountpoint}: {entry}")
    with open("/proc/self/mountinfo") as f:
        line = next(l for l in f if l.split()[4] == mountpoint)
    flags = set(line.split()[5].split(","))
    if not {"nosuid", "nodev"} <= flags:
        raise TestFailure(f"{how}: the mount's flags are {sorted(flags)}, expected nosuid and nodev:\n{line}")
    program = os.path.join(mountpoint, "id")
    mode = os.stat(program).st_mode
    if mode & (stat.S_ISUID | stat.S_ISGID):
        raise TestFailure(f"{how}: {program} shows mode {stat.filemode(mode)}: a setuid/setgid bit")
    euid = effective_uid(user, program)
    if euid != user_uid:
        raise TestFailure(f"{how}: {user} running {program} got effective uid {euid}, expected {user_uid}")
    log(f"{how}: flags {','.join(sorted(flags & {'nosuid', 'nodev', 'ro'}))}, mode {stat.filemode(mode)}, "
        f"{user} runs {program} with euid {euid}")


def mount_and_check(command, env, mountpoint, user, user_uid, how):
    run(command, env=env, timeout=60)
    try:
        wait_until(lambda: mount_entry(mountpoint) is not None, 20, f"the mount at {mountpoint}")
        check_mount(mountpoint, user, user_uid, how)
    finally:
        subprocess.run(["umount", mountpoint], capture_output=True)
        wait_until(lambda: mount_entry(mountpoint) is None, 20, f"{mountpoint} to be unmounted")


def setuid_scratch_parent():
    """A world-traversable scratch folder whose file system honours setuid
    bits: the temporary folder, else /var/tmp (/tmp is often a nosuid tmpfs:
    Debian 13's default, hardened hosts, systemd-nspawn containers)."""
    for parent in dict.fromkeys((tempfile.gettempdir(), "/var/tmp")):
        if os.path.isdir(parent) and not os.statvfs(parent).f_flag & os.ST_NOSUID:
            return parent
    print("SKIPPED: the temporary folder and /var/tmp are both on nosuid file systems: no setuid program "
          "runs here at all, so the test cannot show what the mount does", flush=True)
    sys.exit(77)


def check(argv):
    binary = os.path.abspath(argv[0])
    require_root()
    if not os.access(binary, os.X_OK):
        raise TestFailure(f"the ncafs program is missing ({binary})")
    root = tempfile.mkdtemp(prefix="ncafs-nosuid-", dir=setuid_scratch_parent())
    user = None
    source, mountpoint = (os.path.join(root, d) for d in ("source", "mnt"))
    try:
        os.chmod(root, 0o755)
        for d in (source, mountpoint):
            os.mkdir(d, 0o755)
        shutil.copy("/usr/bin/id", os.path.join(source, "id"))
        os.chmod(os.path.join(source, "id"), 0o6755)  # setuid and setgid root
        env = dict(os.environ)
        user = make_user()
        user_uid = int(run(["id", "-u", user]).stdout)

        direct = effective_uid(user, os.path.join(source, "id"))
        if direct != 0:
            raise TestFailure(f"the setuid copy of id run directly from {source} gave euid {direct}, not 0: "
                              "this machine ignores setuid bits there, so the test cannot show "
                              "what the mount does")
        log(f"control: {user} running {source}/id directly gets euid 0")

        mount_and_check(["mount", "-t", "fuse", f"{binary}#{source}", mountpoint, "-o", "ro,allow_other"], env,
                        mountpoint, user, user_uid, "mount -t fuse (mount.fuse3, which adds dev,suid)")
        mount_and_check([binary, source, mountpoint, "-o", "allow_other,suid,dev"], env,
                        mountpoint, user, user_uid, "ncafs -o suid,dev")
    finally:
        force_unmount(mountpoint)
        if user:
            subprocess.run(["userdel", user], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


main(check)
