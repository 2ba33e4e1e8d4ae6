#!/usr/bin/python3
"""Identity, outputs, privileges, credentials and names, played by an attacker.

Run as root: test_privileges.py CASE, CASE one of
  groups        a user the test creates reads, through an allow_other mount,
                an aggregation and a reference set of theirs drawing on 0640
                root:root files:
                with 5,001 and with 101 supplementary groups (setpriv
                --groups, none of them 0) it is refused; with a 0640 file of
                a group that is the 5,001st of the caller's (past 4,096) the
                values are served, equal to those written.
  outputs       root writes `export -o`, `export --format kerchunk -o`,
                `aggregate -o` and `aggregate --format kerchunk -o` into a
                folder the user owns where the user planted links to a
                root-only file, and a file of their own: refused, the
                root-only file unchanged; in root's own folder a planted link
                is replaced, not followed; absent targets are written whole
                (netCDF4-python and json read them); /dev/null is written in
                place, not replaced.
  race          the user keeps swapping the target for a link to the root-only
                file, and the private folder for one of their own holding such
                links, while root runs each of the four commands 40 times:
                the root-only file never changes.
  capabilities  after reads through an allow_other mount, every thread of the
                daemon holds exactly the capabilities docs/security.md lists
                (effective within, permitted and bounding equal, inheritable
                and ambient empty), NoNewPrivs 1 and Seccomp 2; the outside
                helper holds CAP_SYS_ADMIN only, under its own filter.
  credentials   with NCAFS_TEST_ALLOW_HDF5_INDIRECTION=1 (the by-name refusal
                of HDF5 indirections off), an HDF5 file whose external storage
                is the daemon's $HOME/.aws/credentials serves none of it (EIO),
                nor with -o sandbox=off (the helper reading values is confined
                to the one file); h5py reading the file unconfined gets the
                credentials (the control).
  names         a netCDF-4 file with a 255-byte name: every listed name fits
                NAME_MAX, `ls -l` and `cp -r` of the folder succeed, one log
                line per name left out; a reference set whose name holds a
                newline (and text that would read as a log line) is neither
                listed nor served, and forges no log line.
Exit 77 with SKIPPED when not root (or, with NCAFS_SKIP_FUSE=1, without FUSE).
"""
import errno
import json
import os
import re
import subprocess
import sys

import h5py
import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from test_mount import NCAFS, Mount, check, fail, run_cases  # noqa: E402
from test_access import CHILD as READER, write_partition, write_single_nca  # noqa: E402

USER = "ncafs-priv-%d" % os.getpid()
PYTHON = "/usr/bin/python3"
FAR_GROUP = 200000  # above every group of the 5,001: the last in the kernel's sorted list
MANY_GROUPS = list(range(100000, 105000))  # 5,000, none of them 0


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def user_ids():
    r = run(["id", "-u", USER])
    check(r.returncode == 0, "id -u %s: %s" % (USER, r.stderr))
    uid = int(r.stdout)
    return uid, int(run(["id", "-g", USER]).stdout)


def as_user(argv, groups):
    """argv run as USER with exactly these supplementary groups (setpriv)."""
    uid, gid = user_ids()
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
            "--groups=" + ",".join(str(g) for g in groups) if groups else "--clear-groups", "--"] + argv


def read_as_user(path, var, groups):
    r = run(as_user([PYTHON, "-c", READER, path, var], groups), cwd="/")
    check(r.returncode == 0, "reader with %d groups failed: %s" % (len(groups), r.stderr[-2000:]))
    return json.loads(r.stdout)


def make_user():
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)


def remove_user():
    subprocess.run(["userdel", USER], capture_output=True)


# ---------------------------------------------------------------- groups

def case_groups(work):
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "user"))
    os.chmod(src, 0o755)
    secret = np.arange(5, dtype="f4") + np.float32(7777.25)
    write_partition(os.path.join(src, "secret.nc"), secret)
    os.chmod(os.path.join(src, "secret.nc"), 0o640)  # root:root
    grouped = secret - np.float32(1000)
    write_partition(os.path.join(src, "grouped.nc"), grouped)
    os.chown(os.path.join(src, "grouped.nc"), 0, FAR_GROUP)
    os.chmod(os.path.join(src, "grouped.nc"), 0o640)
    write_single_nca(os.path.join(src, "user", "steal.nca"), "../secret.nc", secret)
    with open(os.path.join(src, "secret.bin"), "wb") as f:  # the same bytes, for a reference set
        f.write(secret.astype("<f4").tobytes())
    os.chmod(os.path.join(src, "secret.bin"), 0o640)
    with open(os.path.join(src, "user", "refs.json"), "w") as f:
        json.dump({"version": 1, "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            "tas/.zarray": json.dumps({"zarr_format": 2, "shape": [5], "chunks": [5], "dtype": "<f4",
                                       "fill_value": None, "order": "C", "compressor": None, "filters": None}),
            "tas/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
            "tas/0": ["../secret.bin"]}}, f)
    write_single_nca(os.path.join(src, "user", "mine.nca"), "../grouped.nc", grouped)
    uid, _ = user_ids()
    for name in os.listdir(os.path.join(src, "user")):
        os.chown(os.path.join(src, "user", name), uid, -1)
    secret_be = secret.astype(">f4").tobytes()
    with Mount(src, "allow_other") as m:
        for groups in (MANY_GROUPS + [100], list(range(101000, 101101))):
            check(len(groups) in (5001, 101), "group lists of the wrong size")
            got = read_as_user(os.path.join(src, "secret.nc"), "bytes", groups)
            check(not got["ok"], "the user reads secret.nc directly with %d groups" % len(groups))
            for name in ("steal.nc", "refs.nc"):  # an aggregation, a reference set
                got = read_as_user(m.path("user", name), "bytes", groups)
                check(not got["ok"] and got["errno"] == errno.EACCES,
                      "%d groups: %s drawing on a 0640 root:root file: expected EACCES, got %s"
                      % (len(groups), name, str(got)[:300]))
                check(secret_be not in bytes.fromhex(got.get("hex", "")), "secret bytes served")
        far = MANY_GROUPS + [FAR_GROUP]
        got = read_as_user(m.path("user", "mine.nc"), "tas", far)
        check(got["ok"] and np.array_equal(np.array(got["values"], dtype="f4"), grouped),
              "a group past the 4,096th that grants access: expected the values, got %s" % str(got)[:300])
        got = read_as_user(m.path("user", "mine.nc"), "tas", MANY_GROUPS)
        check(not got["ok"], "mine.nc served without the group that grants it")
        check("refused for uid" in m.log_text(), "no refusal logged:\n" + m.log_text()[-3000:])
        with netCDF4.Dataset(m.path("user", "refs.nc")) as ds:  # root may: the refusals are the check's doing
            check(np.array_equal(np.asarray(ds.variables["tas"][:]), secret), "root reads refs.nc wrongly")
    print("groups: 5,001 and 101 groups refused; the 5,001st group honoured")


# ---------------------------------------------------------------- outputs

VICTIM_TEXT = b"ROOT-ONLY: must never change\n"

# (name, target file name, argv after ncafs, with OWN the partition and OUT the target)
COMMANDS = [
    ("export", "out_export.nc", ["export", "OWN", "-o", "OUT"]),
    ("export kerchunk", "out1.json", ["export", "OWN", "--format", "kerchunk", "-o", "OUT"]),
    ("aggregate", "out_agg.nc", ["aggregate", "--dim", "x", "-o", "OUT", "OWN"]),
    ("aggregate kerchunk", "out2.json", ["aggregate", "--dim", "x", "--format", "kerchunk", "-o", "OUT", "OWN"]),
]


def outputs_setup(work):
    """work/victim.txt (0600 root), user/ (the user's, 0755) holding ownp.nc, rootdir/ (root's, 0755)."""
    victim = os.path.join(work, "victim.txt")
    with open(victim, "wb") as f:
        f.write(VICTIM_TEXT)
    os.chmod(victim, 0o600)
    user_dir = os.path.join(work, "user")
    os.makedirs(user_dir)
    values = np.arange(4, dtype="f4") + np.float32(0.5)
    write_partition(os.path.join(user_dir, "ownp.nc"), values)
    uid, gid = user_ids()
    os.chown(user_dir, uid, gid)
    os.chown(os.path.join(user_dir, "ownp.nc"), uid, gid)
    os.chmod(user_dir, 0o755)
    root_dir = os.path.join(work, "rootdir")
    os.makedirs(root_dir, mode=0o755)
    return victim, user_dir, root_dir, values


def run_command(argv, own, out):
    return run([NCAFS] + [own if a == "OWN" else out if a == "OUT" else a for a in argv])


def victim_intact(victim, what):
    with open(victim, "rb") as f:
        check(f.read() == VICTIM_TEXT, "%s: the root-only file was changed" % what)
    check(os.stat(victim).st_mode & 0o777 == 0o600, "%s: the root-only file's mode changed" % what)


def check_output(path, own, what):
    """A regular file of root's: a reference set naming tas, an export's copy of
    OWN, or a CF aggregation (its Conventions attribute)."""
    st = os.lstat(path)
    check(os.path.isfile(path) and not os.path.islink(path) and st.st_uid == 0,
          "%s: the output is not a regular file of root's" % what)
    if path.endswith(".json"):
        with open(path) as f:
            refs = json.load(f)
        check(refs.get("version") == 1 and any(k.startswith("tas/") for k in refs.get("refs", {})),
              "%s: the reference set lacks tas: %s" % (what, str(refs)[:300]))
    elif what.startswith("export"):
        with open(path, "rb") as a, open(own, "rb") as b:
            check(a.read() == b.read(), what + ": the copy differs from the file exported")
    else:
        with netCDF4.Dataset(path) as ds:
            check("CF-1.13" in getattr(ds, "Conventions", ""), what + ": not a CF-1.13 aggregation")


def plant_link(victim, target, owner=None):
    if os.path.lexists(target):
        os.unlink(target)
    os.symlink(victim, target)
    if owner is not None:
        os.lchown(target, owner, -1)


def case_outputs(work):
    victim, user_dir, root_dir, _ = outputs_setup(work)
    own = os.path.join(user_dir, "ownp.nc")
    uid, _ = user_ids()
    for name, target, argv in COMMANDS:
        out = os.path.join(user_dir, target)
        plant_link(victim, out, uid)
        r = run_command(argv, own, out)
        check(r.returncode != 0 and "symbolic link" in r.stderr,
              "%s into a planted link: expected a refusal, got %d: %s" % (name, r.returncode, r.stderr[-500:]))
        victim_intact(victim, name + " (planted link)")
        check(os.path.islink(out), name + ": the planted link was replaced though refused")
        os.unlink(out)
        with open(out, "wb") as f:
            f.write(b"the user's own")
        os.chown(out, uid, -1)
        r = run_command(argv, own, out)
        check(r.returncode != 0 and "uid %d" % uid in r.stderr,
              "%s over the user's file: expected a refusal, got %d: %s" % (name, r.returncode, r.stderr[-500:]))
        os.unlink(out)
        r = run_command(argv, own, out)
        check(r.returncode == 0, "%s to an absent target failed: %s" % (name, r.stderr[-500:]))
        check_output(out, own, name)
        # In root's own folder a link at the target is replaced, never followed.
        mine = os.path.join(root_dir, target)
        plant_link(victim, mine)
        r = run_command(argv, own, mine)
        check(r.returncode == 0, "%s over a link in root's folder failed: %s" % (name, r.stderr[-500:]))
        victim_intact(victim, name + " (link in root's folder)")
        check_output(mine, own, name + " in root's folder")
    # A device is written in place, never replaced by a file.
    r = run([NCAFS, "export", own, "-o", "/dev/null"])
    check(r.returncode == 0 and os.path.exists("/dev/null") and not os.path.isfile("/dev/null"),
          "export -o /dev/null: %d %s" % (r.returncode, r.stderr[-500:]))
    check(not [n for n in os.listdir("/dev") if n.startswith(".null.")], "a private folder was made in /dev")
    # ...but not a FIFO the user made in their folder, when root writes.
    fifo = os.path.join(user_dir, "pipe.nc")
    os.mkfifo(fifo)
    os.chown(fifo, uid, -1)
    r = run([NCAFS, "export", own, "-o", fifo])
    check(r.returncode != 0 and "FIFO" in r.stderr, "export -o the user's FIFO: %d %s" % (r.returncode, r.stderr))
    os.unlink(fifo)
    leftovers = [n for n in os.listdir(user_dir) if n.startswith(".")]
    check(not leftovers, "private folders left behind: %s" % leftovers)
    print("outputs: planted links and the user's files refused, links in root's folder replaced, outputs whole")


# ---------------------------------------------------------------- race

# Runs as the user in their folder: swaps each target for a link to the
# victim, takes over root's private folders (renamed away, replaced by one
# holding links under every name the commands write there), until stop exists.
ATTACKER = r"""
import os, random, sys, threading, time
folder, victim, stop = sys.argv[1], sys.argv[2], sys.argv[3]
targets = sys.argv[4:]
inner = targets + ["export", "references.json", "aggregation.nc"]
counts = {"swaps": 0, "takeovers": 0}

def swap_targets():
    tmp = os.path.join(folder, "tmp-link")
    while not os.path.exists(stop):
        for t in targets:  # the links are there for a moment...
            try:
                os.symlink(victim, tmp)
                os.replace(tmp, os.path.join(folder, t))
                counts["swaps"] += 1
            except OSError:
                pass
        time.sleep(random.random() * 0.002)
        for t in targets:  # ...then absent, or root's output, for longer
            try:
                os.unlink(os.path.join(folder, t))
            except OSError:
                pass
        time.sleep(random.random() * 0.02)

def take_over_private_folders():
    n = 0
    while not os.path.exists(stop):
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if not entry.startswith(".") or entry.startswith(".stash"):
                continue
            try:
                if os.lstat(path).st_uid == os.getuid():
                    continue
                n += 1
                os.rename(path, os.path.join(folder, ".stash-%d" % n))
                os.mkdir(path)
                for name in inner:
                    os.symlink(victim, os.path.join(path, name))
                counts["takeovers"] += 1
            except OSError:
                pass

threads = [threading.Thread(target=swap_targets), threading.Thread(target=take_over_private_folders)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(counts["swaps"], counts["takeovers"])
"""


def case_race(work):
    victim, user_dir, _, _ = outputs_setup(work)
    own = os.path.join(user_dir, "ownp.nc")
    os.chmod(own, 0o644)
    stop = os.path.join(work, "stop")
    attacker = subprocess.Popen(as_user([PYTHON, "-c", ATTACKER, user_dir, victim, stop] + [t for _, t, _ in COMMANDS],
                                        []), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    outcomes = {}
    try:
        for name, target, argv in COMMANDS:
            out = os.path.join(user_dir, target)
            for attempt in range(40):
                r = run_command(argv, own, out)
                outcomes.setdefault(name, []).append(r.returncode)
                victim_intact(victim, "%s, try %d" % (name, attempt + 1))
                check("AddressSanitizer" not in r.stderr and r.returncode in (0, 1),
                      "%s, try %d: %s" % (name, attempt + 1, r.stderr[-1000:]))
    finally:
        open(stop, "w").close()
        stdout, stderr = attacker.communicate(timeout=60)
    check(attacker.returncode == 0, "the attacker failed: " + stderr[-1000:])
    swaps, takeovers = (int(x) for x in stdout.split())
    check(swaps > 0 and takeovers > 0, "the attacker never swapped a target or took over a private folder: "
          "the race did not run")
    check(any(0 in v for v in outcomes.values()), "no command succeeded under the race: %s" % outcomes)
    victim_intact(victim, "after the race")
    print("race: %d swaps, %d private folders taken over; root-only file intact; exits %s"
          % (swaps, takeovers, {k: "%d ok of %d" % (v.count(0), len(v)) for k, v in outcomes.items()}))


# ---------------------------------------------------------------- capabilities

def documented_capabilities():
    """The CAP_ names of the table under "### Capabilities while serving" in docs/security.md."""
    with open(os.path.join(REPO, "docs", "security.md")) as f:
        text = f.read()
    at = text.find("### Capabilities while serving")
    check(at >= 0, "docs/security.md has no section 'Capabilities while serving'")
    section = text[at:text.find("\n#", at + 4)]
    names = re.findall(r"^\| `(CAP_[A-Z_]+)`", section, re.M)
    check(names, "no capability listed in docs/security.md")
    return names


def capability_numbers():
    numbers = {}
    with open("/usr/include/linux/capability.h") as f:
        for m in re.finditer(r"#define (CAP_[A-Z_]+)\s+(\d+)\s*$", f.read(), re.M):
            numbers[m.group(1)] = int(m.group(2))
    return numbers


def status_of(path):
    fields = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def check_restricted(status, kept, what):
    eff, prm, bnd = (int(status[k], 16) for k in ("CapEff", "CapPrm", "CapBnd"))
    check(prm == kept and bnd == kept and eff & ~kept == 0,
          "%s: CapEff %x CapPrm %x CapBnd %x, documented %x" % (what, eff, prm, bnd, kept))
    check(int(status["CapInh"], 16) == 0 and int(status.get("CapAmb", "0"), 16) == 0,
          "%s: inheritable or ambient capabilities left" % what)
    check(status["NoNewPrivs"] == "1" and status["Seccomp"] == "2",
          "%s: NoNewPrivs %s Seccomp %s" % (what, status["NoNewPrivs"], status["Seccomp"]))


def helper_of(pid, name="ncafs-outside"):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                st = status_of("/proc/%s/status" % entry)
            except OSError:
                continue
            if st.get("PPid") == str(pid) and st.get("Name") == name:
                return int(entry)
    fail("no %s process of the daemon %d" % (name, pid))


def case_capabilities(work):
    numbers = capability_numbers()
    names = documented_capabilities()
    kept = sum(1 << numbers[n] for n in names)
    src = os.path.join(work, "src")
    os.makedirs(src)
    os.chmod(src, 0o755)
    values = np.arange(6, dtype="f4")
    write_partition(os.path.join(src, "a.nc"), values)
    write_single_nca(os.path.join(src, "agg.nca"), "a.nc", values)
    with Mount(src, "allow_other") as m:
        got = read_as_user(m.path("agg.nc"), "tas", [])
        check(got["ok"] and got["values"] == values.tolist(), "the user's read failed: %s" % got)
        with netCDF4.Dataset(m.path("agg.nc")) as ds:
            check(np.array_equal(np.asarray(ds.variables["tas"][:]), values), "root's read failed")
        check("agg.nc" in os.listdir(m.path()), "listing: %s" % sorted(os.listdir(m.path())))
        pid = m.process.pid
        threads = os.listdir("/proc/%d/task" % pid)
        check(len(threads) > 1, "the daemon runs no thread besides its main one")
        for tid in threads:
            check_restricted(status_of("/proc/%d/task/%s/status" % (pid, tid)), kept, "daemon thread " + tid)
        helper = helper_of(pid)
        check_restricted(status_of("/proc/%d/status" % helper), 1 << numbers["CAP_SYS_ADMIN"], "outside helper")
        # The zygote of the netCDF-4 helpers: CAP_DAC_READ_SEARCH only (its helpers reopen their file).
        zygote = helper_of(pid, "ncafs-helpers")
        check_restricted(status_of("/proc/%d/status" % zygote), 1 << numbers["CAP_DAC_READ_SEARCH"], "helper zygote")
        check(", ".join(n[4:].lower() for n in names) in m.log_text(),
              "the serving line does not name the capabilities kept:\n" + m.log_text()[-2000:])
    print("capabilities: %d threads hold %s only, NoNewPrivs, Seccomp 2; the helper CAP_SYS_ADMIN"
          % (len(threads), ", ".join(names)))


# ---------------------------------------------------------------- credentials

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY-" + os.urandom(6).hex()


def case_credentials(work):
    home = os.path.join(work, "home")
    os.makedirs(os.path.join(home, ".aws"), mode=0o700)
    credentials = os.path.join(home, ".aws", "credentials")
    text = "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = %s\n" % SECRET_KEY
    with open(credentials, "w") as f:
        f.write(text)
    os.chmod(credentials, 0o600)
    src = os.path.join(work, "src")
    os.makedirs(src)
    size = len(text)
    with h5py.File(os.path.join(src, "creds.nc4"), "w") as f:
        f.create_dataset("x", shape=(size,), dtype="u1", external=[(credentials, 0, size)])
    os.environ["HOME"] = home
    os.environ["NCAFS_TEST_ALLOW_HDF5_INDIRECTION"] = "1"
    secret = SECRET_KEY.encode()
    with Mount(src) as m:
        for view in ("nc", "ds", "ncs"):
            try:
                with open(m.path("creds." + view), "rb") as f:
                    data = f.read()
                fail("creds.%s was served (%d bytes) though its external storage is the credentials file"
                     % (view, len(data)))
            except OSError as e:
                check(e.errno == errno.EIO, "creds.%s: expected EIO, got %s" % (view, e))
    # The control: the file does reach the credentials when HDF5 reads it unconfined.
    with h5py.File(os.path.join(src, "creds.nc4"), "r") as f:
        check(secret in f["x"][:].tobytes(), "the control did not reach the credentials; the test cannot fail")
    # Without the daemon's sandbox the values are still read by a helper
    # confined to the one file: the external storage stays closed.
    with Mount(src, "sandbox=off") as m:
        try:
            with open(m.path("creds.nc"), "rb") as f:
                check(secret not in f.read(), "sandbox=off: the credentials were served through a helper")
        except OSError as e:
            check(e.errno == errno.EIO, "sandbox=off: expected EIO, got %s" % e)
    print("credentials: the AWS credentials file is closed to the serving daemon and to its helpers")


# ---------------------------------------------------------------- names

LONG_NAME = "n" * 252 + ".nc"  # 255 bytes: its views (.ncs, .vds, .classic.nc) would not fit
FORGED = "serving SOURCE at MNT"
ODD_NAME = "evil\nncafs: " + FORGED + "\x1b[2J.json"


def case_names(work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    with netCDF4.Dataset(os.path.join(src, LONG_NAME), "w", format="NETCDF4") as ds:
        ds.createDimension("x", 3)
        ds.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
    import base64
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "a/.zarray": json.dumps({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4",
                                     "fill_value": None, "order": "C", "compressor": None, "filters": None}),
            "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["p"]}),
            "a/0": "base64:" + base64.b64encode(np.array([5, 6], "<i4").tobytes()).decode()}
    for name in (ODD_NAME, "refs.json"):
        with open(os.path.join(src, name), "w") as f:
            json.dump({"version": 1, "refs": refs}, f)
    with Mount(src) as m:
        names = os.listdir(m.path())
        check(LONG_NAME in names, "the 255-byte file is not listed: %s" % names)
        check(all(len(n.encode()) <= 255 for n in names), "a listed name exceeds NAME_MAX: %s"
              % [len(n.encode()) for n in names])
        check("refs.nc" in names, "the view of refs.json is missing: %s" % names)
        check(not any(re.search(r"[\x00-\x1f\x7f]", n) for n in names), "a name with a control character is listed")
        for tool in (["ls", "-l", m.path()], ["cp", "-r", m.path(), os.path.join(work, "copy")]):
            r = run(tool)
            check(r.returncode == 0, "%s failed: %s" % (tool[0], r.stderr[-1000:]))
        for name in (ODD_NAME, ODD_NAME[:-5] + ".nc"):
            check(not os.path.exists(m.path(name)), "a name with a newline is served: %r" % name)
        log = m.log_text()
    check(all("evil\\x0a" in line for line in log.splitlines() if FORGED in line),
          "a file name forged a log line:\n" + log[-3000:])
    long_lines = [line for line in log.splitlines() if "n" * 252 in line and "not shown" in line]
    check(len(long_lines) == len(set(long_lines)) and long_lines, "not one log line per long name:\n" + log[-3000:])
    check(any("control character" in line and "\\x0a" in line for line in log.splitlines()),
          "no escaped log line names the odd file:\n" + log[-3000:])
    print("names: %d long view names left out, each logged once; the newline name neither listed nor served"
          % len(long_lines))


CASES = {"groups": case_groups, "outputs": case_outputs, "race": case_race, "capabilities": case_capabilities,
         "credentials": case_credentials, "names": case_names}


def with_user(case):
    """The case run while the test's user exists."""
    def run_case(work):
        make_user()
        try:
            case(work)
        finally:
            remove_user()
    return run_case


def main():
    return run_cases({name: with_user(case) for name, case in CASES.items()}, "ncafs-priv-",
                     root_because="it creates a user and mounts with allow_other")


if __name__ == "__main__":
    sys.exit(main())
