#!/usr/bin/python3
"""Checks the systemd unit ncafs@.service.

usage: check_unit.py UNIT_FILE [--verify]

Always: the settings the daemon relies on, and none of the settings that
would put the service in a mount namespace of its own: systemd.exec(5) says
each of them first makes every mount of the unit's namespace a slave, so the
FUSE mount would never propagate to the host (and MountFlags=shared does not
undo that). PrivateDevices= would also hide /dev/fuse.

--verify: also `systemd-analyze verify` an instance of the unit; any message
on its output fails the test (unknown keys are only warnings there). This
needs the ExecStart program to exist, so it is run on the installed unit.
"""

import os
import re
import shutil
import subprocess
import tempfile

from packaging_common import TestFailure, log, main, read_unit, unit_values

# Settings that make systemd set up a file system namespace (exec_needs_mount_namespace).
MOUNT_NAMESPACE_SETTINGS = [
    "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts", "PrivateNetwork",
    "PrivateIPC", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths",
    "BindPaths", "BindReadOnlyPaths", "TemporaryFileSystem", "ProtectKernelTunables",
    "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset",
    "RootDirectory", "RootImage", "MountImages", "ExtensionImages", "ExtensionDirectories",
    "LogNamespace", "NetworkNamespacePath", "IPCNamespacePath", "JoinsNamespaceOf",
]
# Settings that take away what mounting needs: real root with CAP_SYS_ADMIN
# in the initial user namespace.
NON_ROOT_SETTINGS = ["PrivateUsers", "DynamicUser", "User"]
FALSE = ("no", "false", "0", "off", "")


def lint(path):
    entries = read_unit(path)
    problems = []
    for key in MOUNT_NAMESPACE_SETTINGS + NON_ROOT_SETTINGS:
        for value in unit_values(entries, key):
            if key == "User" and value in ("root", "0"):
                continue
            if value.lower() not in FALSE or key in ("ReadWritePaths", "BindPaths", "RootDirectory"):
                problems.append(f"{key}={value}")
    for value in unit_values(entries, "MountFlags"):
        if value != "shared":
            problems.append(f"MountFlags={value}")
    if problems:
        raise TestFailure(f"{path}: {', '.join(problems)}: these run the service in its own mount "
                          "namespace (or without root), where its FUSE mount is invisible to the host")

    def expect(key, test, what):
        values = unit_values(entries, key)
        if not values or not test(" ".join(values)):
            raise TestFailure(f"{path}: {key}= should {what}; it is {values}")

    expect("Type", lambda v: v == "notify", "be notify")
    expect("NotifyAccess", lambda v: v == "main", "be main")
    expect("Restart", lambda v: v == "on-failure", "be on-failure")
    expect("EnvironmentFile", lambda v: v.lstrip("-") == "/etc/ncafs/%i.conf", "be /etc/ncafs/%i.conf")
    expect("ExecStart", lambda v: re.search(r"/ncafs \$\{SOURCE\} \$\{MOUNTPOINT\} .*-f", v) is not None,
           "run ncafs ${SOURCE} ${MOUNTPOINT} in the foreground (-f)")
    expect("NoNewPrivileges", lambda v: v == "yes", "be yes")
    expect("CapabilityBoundingSet", lambda v: "CAP_SYS_ADMIN" in v.split(), "keep CAP_SYS_ADMIN (mount)")
    expect("CapabilityBoundingSet", lambda v: {"CAP_SETUID", "CAP_SETGID"} <= set(v.split()),
           "keep CAP_SETUID and CAP_SETGID (the caller check of allow_other: setfsuid, setgroups)")
    for value in unit_values(entries, "RestrictSUIDSGID"):
        if value.lower() not in FALSE:
            raise TestFailure(f"{path}: RestrictSUIDSGID={value} makes openat2 fail with ENOSYS "
                              "(io/confined_open.cpp then loses RESOLVE_BENEATH)")
    expect("DeviceAllow", lambda v: "/dev/fuse" in v, "allow /dev/fuse")
    expect("SystemCallFilter", lambda v: "@mount" in v.split(), "allow @mount")
    expect("SystemCallFilter", lambda v: {"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"}
           <= set(v.split()), "allow the Landlock system calls")
    expect("ExecStopPost", lambda v: "clear-dead-mount ${SOURCE} ${MOUNTPOINT}" in v,
           "remove the dead mount of this instance left by a crash, and nothing else")
    if unit_values(entries, "WantedBy", section="Install") == []:
        raise TestFailure(f"{path}: no WantedBy= in [Install]: systemctl enable would do nothing")
    log(f"{path}: settings as required, no mount namespace settings")


def verify(path):
    if shutil.which("systemd-analyze") is None:
        raise TestFailure("systemd-analyze is missing (package systemd, see packaging/install-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="ncafs-unit-") as tmp:
        shutil.copy(path, os.path.join(tmp, os.path.basename(path)))
        instance = os.path.join(tmp, "ncafs@verify.service")
        result = subprocess.run(["systemd-analyze", "verify", instance], capture_output=True, text=True,
                                timeout=120)
    output = (result.stdout + result.stderr).strip()
    log(f"$ systemd-analyze verify {instance}: exit {result.returncode}")
    if result.returncode != 0 or output:
        raise TestFailure(f"systemd-analyze verify {os.path.basename(instance)} (from {path}) "
                          f"exited {result.returncode}:\n{output}")
    log("systemd-analyze verify: no messages")


def check(argv):
    path = argv[0]
    if not os.path.exists(path):
        raise TestFailure(f"unit file {path} is missing")
    lint(path)
    if "--verify" in argv[1:]:
        verify(path)


main(check)
