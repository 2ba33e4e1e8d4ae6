#!/usr/bin/python3
"""Runs the ExecStart= of the installed ncafs@.service the way systemd would
for an instance whose /etc/ncafs/NAME.conf this test writes, with
NOTIFY_SOCKET pointing at a datagram socket the test owns, under the unit's
NoNewPrivileges= and CapabilityBoundingSet= (applied with setpriv). Checks:
- READY=1 arrives from the main PID (NotifyAccess=main), and only once the
  mount is there: at its arrival the mountpoint is a fuse.ncafs mount that
  answers and serves the aggregation (read with ncdump);
- on SIGTERM (systemctl stop) STOPPING=1 arrives, the daemon exits with 0
  and the mount is gone;
- after a crash (SIGKILL) ExecStopPost= removes the dead mount.
PID 1 here need not be systemd, so systemd itself is not involved; the unit's
syntax is checked by check_unit.py (systemd-analyze verify).

usage: deb_service.py   (as root, after deb_build_install.py)
"""

import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import time

from packaging_common import (TestFailure, check_virtual_file, expand_command_line, expand_specifiers,
                              force_unmount, installed_unit_path, log, main, mount_entry,
                              read_environment_file, read_unit, require_file, require_root, run,
                              stat_in_subprocess, temporary_tree, unit_values)

READY_TIMEOUT = 60
STOP_TIMEOUT = 30


class NotifySocket:
    """A bound AF_UNIX datagram socket with SO_PASSCRED, as systemd's."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(path)

    def receive(self, timeout):
        """(message, sender pid) or None after TIMEOUT seconds."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return None
        data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _, _ = struct.unpack("iII", payload[:12])
        return data.decode(errors="replace"), pid

    def close(self):
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def capability_wrapper(entries):
    """setpriv arguments that apply the unit's NoNewPrivileges= and
    CapabilityBoundingSet= to the command, as systemd does before exec."""
    wrapper = ["setpriv"]
    if any(v.lower() in ("yes", "true", "1", "on") for v in unit_values(entries, "NoNewPrivileges")):
        wrapper.append("--no-new-privs")
    bounding = " ".join(unit_values(entries, "CapabilityBoundingSet")).split()
    if bounding:
        caps = ",".join("+" + c.lower().removeprefix("cap_") for c in bounding)
        wrapper.append(f"--bounding-set=-all,{caps}")
    return wrapper + ["--"]


def service_environment(entries, instance):
    env = {}
    for value in unit_values(entries, "Environment"):
        for assignment in expand_command_line(value, {}):
            key, _, val = assignment.partition("=")
            env[key] = val
    for path in unit_values(entries, "EnvironmentFile"):
        optional = path.startswith("-")
        path = expand_specifiers(path.lstrip("-"), instance)
        if os.path.exists(path):
            env.update(read_environment_file(path))
        elif not optional:
            raise TestFailure(f"EnvironmentFile {path} does not exist")
    return env


def wait_for(notify, proc, wanted, timeout, log_path):
    """Receives datagrams until one contains the line WANTED; returns
    (message, sender pid, mount entry at arrival)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = notify.receive(0.2)
        if got is not None:
            message, pid = got
            entry_at_arrival = mount_entry_now[0]()
            log(f"notify socket: {message!r} from pid {pid}")
            if wanted in message.split("\n"):
                return message, pid, entry_at_arrival
        elif proc.poll() is not None and wanted == "READY=1":
            raise TestFailure(f"the daemon exited with {proc.returncode} before sending READY=1; "
                              f"its output:\n{open(log_path).read()}")
    raise TestFailure(f"no {wanted} on NOTIFY_SOCKET within {timeout} s (does the daemon call "
                      f"ncafs::notify_service?); its output:\n{open(log_path).read()}")


mount_entry_now = [None]


def start(command, notify_path, log_path):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "NOTIFY_SOCKET": notify_path, "LANG": "C.UTF-8"}
    log("starting: " + " ".join(command))
    out = open(log_path, "w")
    return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def run_service(entries, instance, mountpoint, source, workdir):
    exec_start = unit_values(entries, "ExecStart")
    if len(exec_start) != 1:
        raise TestFailure(f"expected one ExecStart=, got {exec_start}")
    env = service_environment(entries, instance)
    command = expand_command_line(expand_specifiers(exec_start[0], instance), env)
    if "-f" not in command:
        raise TestFailure(f"ExecStart must run ncafs in the foreground (-f) for Type=notify: {command}")
    if not os.access(command[0], os.X_OK):
        raise TestFailure(f"ExecStart program {command[0]} is missing")
    full = capability_wrapper(entries) + command
    notify = NotifySocket(os.path.join(workdir, "notify"))
    log_path = os.path.join(workdir, "daemon.log")
    mount_entry_now[0] = lambda: mount_entry(mountpoint)
    proc = start(full, notify.path, log_path)
    try:
        # 1. READY=1, from the main PID, once the mount is up.
        _, pid, entry = wait_for(notify, proc, "READY=1", READY_TIMEOUT, log_path)
        if pid != proc.pid:
            raise TestFailure(f"READY=1 came from pid {pid}, not from the main pid {proc.pid}: "
                              "NotifyAccess=main would ignore it")
        if entry is None or entry[0] != "fuse.ncafs":
            raise TestFailure(f"READY=1 arrived before the mount existed (mount entry at arrival: {entry})")
        stat_in_subprocess(mountpoint)
        check_virtual_file(os.path.join(mountpoint, "agg.nc"))
        log("READY=1 arrived after the mount was up, and the mount answers")

        # 2. SIGTERM: STOPPING=1, exit 0, mount gone.
        proc.send_signal(signal.SIGTERM)
        wait_for(notify, proc, "STOPPING=1", STOP_TIMEOUT, log_path)
        try:
            status = proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"the daemon did not exit within {STOP_TIMEOUT} s of SIGTERM") from None
        if status != 0:
            raise TestFailure(f"after SIGTERM the daemon exited with {status}, expected 0:\n"
                              f"{open(log_path).read()}")
        if mount_entry(mountpoint) is not None:
            raise TestFailure(f"after SIGTERM {mountpoint} is still mounted")
        log("SIGTERM: STOPPING=1 sent, exit status 0, mount gone")
    finally:
        if proc.poll() is None:
            proc.kill()  # our own child only
            proc.wait()
        force_unmount(mountpoint)
        notify.close()
    return env, full


def crash_cleanup(entries, instance, env, command, mountpoint, workdir):
    """SIGKILL leaves a dead FUSE mount; ExecStopPost= must remove it."""
    notify = NotifySocket(os.path.join(workdir, "notify2"))
    log_path = os.path.join(workdir, "daemon2.log")
    proc = start(command, notify.path, log_path)
    try:
        wait_for(notify, proc, "READY=1", READY_TIMEOUT, log_path)
        proc.kill()
        proc.wait()
        if mount_entry(mountpoint) is None:
            log("SIGKILL left no mount behind (nothing for ExecStopPost= to do)")
        for line in unit_values(entries, "ExecStopPost"):
            stop_post = expand_command_line(expand_specifiers(line, instance), env)
            run(stop_post, check=not line.startswith("-"), timeout=60)
        if mount_entry(mountpoint) is not None:
            raise TestFailure(f"after a crash and ExecStopPost= {mountpoint} is still mounted")
        log("crash: ExecStopPost= removed the dead mount")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        force_unmount(mountpoint)
        notify.close()


def check(argv):
    require_root()
    require_file("/usr/bin/ncafs", "the installed ncafs program (run deb_build_install.py first)")
    unit = installed_unit_path()
    entries = read_unit(unit)
    for key, expected in (("Type", "notify"), ("NotifyAccess", "main"), ("Restart", "on-failure")):
        if unit_values(entries, key) != [expected]:
            raise TestFailure(f"{unit}: expected {key}={expected}, got {unit_values(entries, key)}")
    env_files = [expand_specifiers(p.lstrip("-"), "X") for p in unit_values(entries, "EnvironmentFile")]
    if env_files != ["/etc/ncafs/X.conf"]:
        raise TestFailure(f"{unit}: EnvironmentFile should be /etc/ncafs/%i.conf, is {env_files}")

    root, source, mountpoint = temporary_tree("ncafs-pkg-service-")
    instance = f"pkgtest{os.getpid()}"
    config = f"/etc/ncafs/{instance}.conf"
    try:
        with open(config, "w") as f:
            f.write(f"# written by tests/packaging/deb_service.py\nSOURCE={source}\n"
                    f"MOUNTPOINT={mountpoint}\nOPTIONS=ro,allow_other\n")
        env, command = run_service(entries, instance, mountpoint, source, root)
        crash_cleanup(entries, instance, env, command, mountpoint, root)
    finally:
        if os.path.exists(config):
            os.unlink(config)
        force_unmount(mountpoint)
        if mount_entry(mountpoint) is None:
            shutil.rmtree(root, ignore_errors=True)


main(check)
