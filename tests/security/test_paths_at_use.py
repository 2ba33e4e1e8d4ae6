#!/usr/bin/python3
"""What another user can learn through a mount with allow_other: sizes and
files swapped after the caller check.

Run as root: test_paths_at_use.py CASE. Creates the users ncafs-h-vic-CASE
and ncafs-h-att-CASE (removed at the end); SOURCE holds vic/ (the victim's, 0700,
with secret.bin and privp.nc, both 0600) and att/ (the attacker's). The
daemon runs as root with -o allow_other; the attacker works as their user
(runuser), stat()s and reads through the mount, and changes links in att/.

  oracle  95 reference sets per byte, each with a coordinate n(3) of i1 whose
          middle chunk is one byte of secret.bin: the .vds view's size must
          not tell which set holds the byte (it does, as a control, where
          only root is served: sizes there may depend on every file);
  zattrs  a set whose global .zattrs names secret.bin, a long file, or
          nothing: equal view sizes;
  chain   a chunk file.bin -> sub/l2 -> ../own.bin, sub/l2 then retargeted
          to secret.bin under the open view;
  rename  a link to secret.bin renamed over direct.bin right after the open;
  late    a chunk path absent at the open, created then as late/d -> secret.bin;
  nca     an NCA partition p.nc -> sub2/l -> ../ownp.nc, swapped to privp.nc;
  shared  the same, while the victim reads the view beside the attacker.
Each swap 40 times; no read may ever return the victim's bytes (EIO and
EACCES are the accepted answers). Exit 77 with SKIPPED when not root.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "reference_set"))
import kerchunk_style as ks  # noqa: E402
import make_aggregations  # noqa: E402
from test_mount import Mount, check, fuse_usable  # noqa: E402

SKIP = 77
# Named per case in main(): ctest runs the cases side by side, and one
# case's clean-up must not remove another's users.
VICTIM = "ncafs-h-victim"
ATTACKER = "ncafs-h-attacker"
PYTHON = "/usr/bin/python3"
TRIES = 40
SECRET = b"Qz7#Kp!m" * 8  # 64 bytes, none of them in OWN
OWN = b"o" * 64
NCA_N = 1 << 18  # values of 4 bytes per partition: 1 MiB

# Runs as the attacker: stat()s paths, prints their sizes (None: no such file).
CHILD_STAT = r"""
import json, os, sys
out = {}
for p in json.loads(sys.argv[1]):
    try:
        out[p] = os.stat(p).st_size
    except OSError as e:
        out[p] = None
print(json.dumps(out))
"""

# Runs as the attacker: TRIES times, opens the view, reads it, makes the swap
# (`before`: the state to start from; `swap`: the change), reads again at
# once and after dropping the pages; prints what every read returned.
CHILD_SWAP = r"""
import json, os, sys, time
spec = json.loads(sys.argv[1])
view, folder = spec["view"], spec["folder"]

def link(target, name):
    tmp = os.path.join(folder, name + ".tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, os.path.join(folder, name))

def remove(name):
    path = os.path.join(folder, name)
    if os.path.lexists(path):
        os.unlink(path)

def apply(steps):
    for step in steps:
        if step[0] == "link":
            os.makedirs(os.path.dirname(os.path.join(folder, step[2])), exist_ok=True)
            link(step[1], step[2])
        elif step[0] == "remove":
            remove(step[1])
        elif step[0] == "touch":  # the file read so far changes: a read tries its path again
            os.utime(os.path.join(folder, step[1]), ns=(time.time_ns(), time.time_ns()))

def read(fd, offset, size=4096):
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, size, offset).hex()
    except OSError as e:
        return "errno %d" % e.errno

results = []
for attempt in range(spec["tries"]):
    apply(spec["before"])
    try:
        fd = os.open(view, os.O_RDONLY)
    except OSError as e:
        results.append({"open": e.errno})
        continue
    first = read(fd, 0)
    apply(spec["swap"])
    # Offsets not read before: neither the kernel's pages nor the daemon's blocks hold them.
    after = [read(fd, (640 + 64 * k) << 10) for k in range(3)]
    time.sleep(0.02)
    after += [read(fd, (832 + 64 * k) << 10) for k in range(2)]
    os.close(fd)
    try:
        with open(view, "rb") as f:
            reopened = f.read().hex()
    except OSError as e:
        reopened = "errno %d" % e.errno
    results.append({"first": first, "after": after, "reopened": reopened})
print(json.dumps(results))
"""


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    check(r.returncode == 0, "%s failed: %s" % (" ".join(cmd), r.stderr))


def as_attacker(script, *args, timeout=240):
    r = subprocess.run(["runuser", "-u", ATTACKER, "--", PYTHON, "-c", script] + list(args),
                       capture_output=True, text=True, cwd="/", timeout=timeout)
    check(r.returncode == 0, "child as %s failed: %s" % (ATTACKER, r.stderr))
    return json.loads(r.stdout)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def make_source(work):
    """SOURCE with vic/ (0700: secret.bin, privp.nc, both 0600) and att/ (the attacker's)."""
    src = os.path.join(work, "src")
    vic, att = os.path.join(src, "vic"), os.path.join(src, "att")
    os.makedirs(vic)
    os.makedirs(att)
    with open(os.path.join(vic, "secret.bin"), "wb") as f:
        f.write(SECRET)
    with open(os.path.join(vic, "long.json"), "w") as f:
        json.dump({"k%d" % i: "v" * 50 for i in range(40)}, f)
    with open(os.path.join(vic, "short.json"), "w") as f:
        json.dump({"k": 1}, f)
    write_partition(os.path.join(vic, "privp.nc"), np.full(NCA_N, 4242.5, "f4"))
    for name in os.listdir(vic):
        os.chmod(os.path.join(vic, name), 0o600)
    run("chown", "-R", VICTIM, vic)
    os.chmod(vic, 0o700)
    with open(os.path.join(att, "own.bin"), "wb") as f:
        f.write(OWN)
    write_partition(os.path.join(att, "ownp.nc"), np.full(NCA_N, -7.0, "f4"))
    os.chmod(src, 0o755)
    return src, vic, att


def give_to_attacker(att):
    run("chown", "-R", "-h", ATTACKER, att)
    os.chmod(att, 0o755)


def write_partition(path, values):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", len(values))
        ds.createVariable("tas", "f4", ("x",), fill_value=False)[:] = values


CHUNKS = 16384  # of 64 bytes: a view of 1 MiB of data


def chunk_set(path, chunk_ref, late_ref=None):
    """A reference set with v(x) of CHUNKS chunks of 64 i1, each at chunk_ref (those of the second half at
    late_ref, when given: the first read, at the start, does not meet them)."""
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": ks.zarray([64 * CHUNKS], [64], "|i1", fill=0),
            "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]})}
    for i in range(CHUNKS):
        refs["v/%d" % i] = late_ref if late_ref and i >= CHUNKS // 2 else chunk_ref
    write_json(path, ks.version1(refs))


def oracle_set(path, secret_path, offset, guess):
    """n(3) of i1: inline guess-2, one byte of the secret, inline guess+2; v(n, m) as the data."""
    def inline(value):
        return "base64:" + __import__("base64").b64encode(bytes([value & 0xFF])).decode()
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "n/.zarray": ks.zarray([3], [1], "|i1"), "n/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["n"]}),
            "n/0": inline(guess - 2), "n/1": [secret_path, offset, 1], "n/2": inline(guess + 2),
            "m/.zarray": ks.zarray([2], [2], "|i1"), "m/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["m"]}),
            "m/0": "base64:AAE=",
            "v/.zarray": ks.zarray([3, 2], [3, 2], "<f4", fill=0), "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["n", "m"]})}
    write_json(path, ks.version1(refs))


def recovered(sizes, guesses):
    """The guess whose view size differs from all others' (the oracle's answer), or None."""
    counts = {}
    for g in guesses:
        counts.setdefault(sizes[g], []).append(g)
    odd = [gs[0] for gs in counts.values() if len(gs) == 1]
    return odd[0] if len(odd) == 1 and len(counts) == 2 else None


def case_oracle(work):
    src, vic, att = make_source(work)
    guesses = list(range(32, 127))  # 95 printable bytes
    for offset in (0, 1):
        for g in guesses:
            oracle_set(os.path.join(att, "o%d_%d.json" % (offset, g)), "../vic/secret.bin", offset, g)
    give_to_attacker(att)
    # Control: served to root alone, the sizes may depend on every file, and do.
    with Mount(src) as m:
        for offset in (0, 1):
            sizes = {g: os.stat(m.path("att", "o%d_%d.vds" % (offset, g))).st_size for g in guesses}
            check(recovered(sizes, guesses) == SECRET[offset],
                  "control: the oracle should find byte %d (%r) without allow_other" % (offset, SECRET[offset]))
    with Mount(src, "allow_other") as m:
        paths = [m.path("att", "o%d_%d.vds" % (offset, g)) for offset in (0, 1) for g in guesses]
        got = as_attacker(CHILD_STAT, json.dumps(paths))
        for offset in (0, 1):
            sizes = {g: got[m.path("att", "o%d_%d.vds" % (offset, g))] for g in guesses}
            check(len(set(sizes.values())) == 1 and None not in sizes.values(),
                  "byte %d: the .vds sizes differ by the victim's byte: %s" % (offset, sorted(set(sizes.values()))))
            check(recovered(sizes, guesses) is None, "byte %d recovered through stat()" % offset)
        # The set is still served to whoever may read what it names: root reads the values.
        with netCDF4.Dataset(m.path("att", "o0_%d.nc" % SECRET[0])) as ds:
            n = np.asarray(ds.variables["n"][:])
        check(n.tolist() == [SECRET[0] - 2, SECRET[0], SECRET[0] + 2], "root reads n: %s" % n.tolist())


def case_zattrs(work):
    src, vic, att = make_source(work)
    base = {".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": ks.zarray([4], [4], "<f4", fill=0), "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]})}
    # Names of one length: the .ncs header records the name.
    for name, target in (("zs", "../vic/short.json"), ("zl", "../vic/long.json"), ("za", "../vic/none.json")):
        refs = dict(base)
        refs[".zattrs"] = [target]
        write_json(os.path.join(att, name + ".json"), ks.version1(refs))
    give_to_attacker(att)
    with Mount(src, "allow_other") as m:
        names = ["zs", "zl", "za"]
        paths = [m.path("att", n + ext) for n in names for ext in (".nc", ".ds", ".ncs", ".vds")]
        got = as_attacker(CHILD_STAT, json.dumps(paths))
        for ext in (".nc", ".ds", ".ncs", ".vds"):
            sizes = [got[m.path("att", n + ext)] for n in names]
            check(len(set(sizes)) == 1, "%s sizes tell the victim's file: %s" % (ext, dict(zip(names, sizes))))
        log = m.log_text()
    check("metadata is read from the reference set itself only" in log, "no log line names the refusal:\n" + log[-2000:])
    # ds_values=cf sizes a .ds view from every value: not shown for a set drawing on other files.
    chunk_set(os.path.join(att, "cf.json"), ["../vic/secret.bin", 0, 64])
    with Mount(src, "allow_other,ds_values=cf") as m:
        got = as_attacker(CHILD_STAT, json.dumps([m.path("att", "cf.ds"), m.path("att", "cf.nc"), m.path("att", "zs.ds")]))
        check(got[m.path("att", "cf.ds")] is None and got[m.path("att", "cf.nc")] is not None,
              "ds_values=cf: cf.ds shown (or cf.nc not): %s" % got)
        check(got[m.path("att", "zs.ds")] is not None, "ds_values=cf: zs.ds (no other file) not shown: %s" % got)


def check_no_victim_bytes(results, secret_hex, own_hex, what, own_first=True):
    served_own = 0
    for i, r in enumerate(results):
        check("open" not in r, "%s try %d: the open failed (%s)" % (what, i, r))
        served_own += own_hex in r["first"]
        for got in r["after"] + [r["reopened"]]:
            check(secret_hex not in got, "%s try %d: the victim's bytes were served" % (what, i))
    check(not own_first or served_own == len(results),
          "%s: the attacker's own bytes were served before the swap only %d of %d times" % (what, served_own, len(results)))


def swap_case(work, layout, spec, secret_hex, own_hex, what, own_first=True):
    src, vic, att = make_source(work)
    view = layout(att)
    give_to_attacker(att)
    with Mount(src, "allow_other") as m:
        spec = dict(spec, view=m.path("att", view), folder=att, tries=TRIES)
        results = as_attacker(CHILD_SWAP, json.dumps(spec))
        check(m.alive(), "the daemon is up")
        log = m.log_text()
    check_no_victim_bytes(results, secret_hex, own_hex, what, own_first)
    # The daemon met the swapped file and refused it (not only a cache answering).
    check("than the one checked for the caller" in log or "created after the caller check" in log,
          "%s: no log line of a refused swap:\n%s" % (what, log[-3000:]))


def case_chain(work):
    def layout(att):
        os.makedirs(os.path.join(att, "sub"))
        os.symlink("sub/l2", os.path.join(att, "file.bin"))
        os.symlink("../own.bin", os.path.join(att, "sub", "l2"))
        chunk_set(os.path.join(att, "chain.json"), ["file.bin", 0, 64])
        return "chain.nc"
    swap_case(work, layout, {"before": [["link", "../own.bin", "sub/l2"]],
                             "swap": [["link", "../../vic/secret.bin", "sub/l2"], ["touch", "own.bin"]]},
              SECRET.hex(), OWN.hex(), "chain (sub/l2 retargeted)")


def case_rename(work):
    def layout(att):
        os.symlink("own.bin", os.path.join(att, "direct.bin"))
        chunk_set(os.path.join(att, "direct.json"), ["direct.bin", 0, 64])
        return "direct.nc"
    swap_case(work, layout, {"before": [["link", "own.bin", "direct.bin"]],
                             "swap": [["link", "../vic/secret.bin", "direct.bin"]]},
              SECRET.hex(), OWN.hex(), "rename (a link renamed over direct.bin)")


def case_late(work):
    def layout(att):
        chunk_set(os.path.join(att, "late.json"), ["own.bin", 0, 64], ["late/d", 0, 64])
        return "late.nc"
    swap_case(work, layout, {"before": [["remove", "late/d"]],
                             "swap": [["link", "../../vic/secret.bin", "late/d"]]},
              SECRET.hex(), OWN.hex(), "late (a chunk created after the open)")


def case_nca(work):
    def layout(att):
        os.makedirs(os.path.join(att, "sub2"))
        os.symlink("sub2/l", os.path.join(att, "p.nc"))
        os.symlink("../ownp.nc", os.path.join(att, "sub2", "l"))
        write_single_partition_nca(os.path.join(att, "agg.nca"), "p.nc")
        return "agg.nc"
    victim = np.full(8, 4242.5, ">f4").tobytes().hex()
    own = np.full(8, -7.0, ">f4").tobytes().hex()
    swap_case(work, layout, {"before": [["link", "../ownp.nc", "sub2/l"]],
                             "swap": [["link", "../../vic/privp.nc", "sub2/l"], ["touch", "ownp.nc"]]},
              victim, own, "nca (partition chain swapped)")


# Runs as a user and answers commands from stdin, one JSON line each:
# "open PATH", "read OFFSET DROP" (DROP 1: the pages dropped first), "close",
# "link TARGET NAME" (in FOLDER, by rename).
AGENT = r"""
import json, os, sys
folder, fd = sys.argv[1], None
for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[0] == "open":
            fd = os.open(cmd[1], os.O_RDONLY)
            out = "ok"
        elif cmd[0] == "read":
            if cmd[2] == "1":
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            out = os.pread(fd, 4096, int(cmd[1])).hex()
        elif cmd[0] == "close":
            os.close(fd)
            out = "ok"
        elif cmd[0] == "link":
            tmp = os.path.join(folder, cmd[2] + ".tmp")
            os.symlink(cmd[1], tmp)
            os.replace(tmp, os.path.join(folder, cmd[2]))
            out = "ok"
    except OSError as e:
        out = "errno %d" % e.errno
    print(json.dumps(out), flush=True)
"""


class Agent:
    """A process of `user` that opens, reads and links on command (AGENT)."""

    def __init__(self, user, folder):
        self.process = subprocess.Popen(["runuser", "-u", user, "--", PYTHON, "-c", AGENT, folder],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")

    def __call__(self, *words):
        self.process.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def end(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def case_shared(work):
    """The victim reads the attacker's aggregation beside them while the attacker swaps its partition to
    the victim's file: the pages both share never hold the victim's values for the attacker."""
    src, vic, att = make_source(work)
    os.makedirs(os.path.join(att, "sub2"))
    os.symlink("sub2/l", os.path.join(att, "p.nc"))
    os.symlink("../ownp.nc", os.path.join(att, "sub2", "l"))
    write_single_partition_nca(os.path.join(att, "agg.nca"), "p.nc")
    give_to_attacker(att)
    victim_hex = np.full(8, 4242.5, ">f4").tobytes().hex()
    far = [(640 + 64 * k) << 10 for k in range(4)]
    with Mount(src, "allow_other") as m:
        view = m.path("att", "agg.nc")
        attacker, victim = Agent(ATTACKER, att), Agent(VICTIM, att)
        try:
            victim_saw = 0
            for attempt in range(TRIES):
                check(attacker("link", "../ownp.nc", "sub2/l") == "ok", "relink")
                check(attacker("open", view) == "ok" and victim("open", view) == "ok", "opens")
                attacker("read", 0, 0)
                victim("read", 0, 0)
                attacker("link", "../../vic/privp.nc", "sub2/l")
                for off in far:  # the victim meets the swap; then opens again and reads its own values
                    victim("read", off, 1)
                victim("close")
                victim("open", view)
                victim_saw += sum(victim_hex in victim("read", off, 0) for off in far)
                for off in far:
                    for drop in (0, 1):
                        got = attacker("read", off, drop)
                        check(victim_hex not in got, "shared try %d: the attacker read the victim's values" % attempt)
                victim("close")
                attacker("close")
        finally:
            attacker.end()
            victim.end()
    check(victim_saw > 0, "the victim never read its own values through the swapped aggregation")


def write_single_partition_nca(path, partition):
    partitions = [{"index": [0], "location": [[0, NCA_N - 1]], "format": "netCDF",
                   "subarray": {"file": partition, "ncvar": "tas", "shape": [NCA_N]}}]
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.Conventions = "CF-1.5 NCA"
        ds.createDimension("x", NCA_N)
        carrier = ds.createVariable("tas", "f4", (), fill_value=False)
        carrier.cf_role = "nca_variable"
        carrier.nca_dimensions = "x"
        carrier.nca_array = make_aggregations._nca_json(["x"], ["x"], [1], partitions)


CASES = {"shared": case_shared, "oracle": case_oracle, "zattrs": case_zattrs, "chain": case_chain, "rename": case_rename,
         "late": case_late, "nca": case_nca}


def name_identities(case):
    global VICTIM, ATTACKER
    VICTIM, ATTACKER = "ncafs-h-vic-" + case, "ncafs-h-att-" + case


def cleanup_identities():
    for user in (VICTIM, ATTACKER):
        subprocess.run(["userdel", user], capture_output=True)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: test_paths_at_use.py {%s}" % "|".join(CASES))
        return 2
    not_here = "not root (the test creates users and mounts with allow_other)" if os.geteuid() else fuse_usable()
    if not_here:
        print("SKIPPED: test_paths_at_use.py: " + not_here)
        return SKIP
    name_identities(sys.argv[1])
    cleanup_identities()
    for user in (VICTIM, ATTACKER):
        run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user)
    work = tempfile.mkdtemp(prefix="ncafs-h-paths-")
    os.chmod(work, 0o755)
    try:
        CASES[sys.argv[1]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        cleanup_identities()
    print("PASS: " + sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
