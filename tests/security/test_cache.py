#!/usr/bin/python3
"""A disk cache (cache_dir) that only the daemon touches, attacked for real.

Run as root: test_cache.py. Creates a system user with a unique name (removed
at the end); SOURCE holds NCA aggregations whose partitions nginx serves on
127.0.0.1 (three 256 KiB blocks each, and netCDF-4 partitions read from their
local copies); cache_dir lies in a folder of mode 1777, like /var/tmp.
  (a) cache_dir created first by the other user, or 0777, or a symbolic
      link: the mount (and `ncafs check`) exits 2 naming the folder and why;
  (b) after reads: every folder 0700, every file 0600, all root's, and the
      user can open none of them;
  (c) links planted where the cache's files are (blocks and local copies ->
      root-only files of the same size): never read, the values are the
      inputs'; tmp -> a victim folder holding a 3-hour-old file and meta ->
      another victim folder, swapped in under a running mount whose bound
      forces eviction: nothing deleted or created there; a new mount refuses
      the folder;
  (d) a FIFO planted as every block: the read completes in bounded time with
      the inputs' values.
Names are keyed with the cache's secret: the test finds them by listing the
cache as root (a leaked name). Values are compared with the master array and
ncrcat of the partitions (netCDF4-python, ncdump). Exit 77 with SKIPPED when
not root, without nginx, or when FUSE is unusable.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
import make_aggregations  # noqa: E402
import servers  # noqa: E402
from test_mount import NCAFS, Mount, check, fail, fuse_usable, read_netcdf4  # noqa: E402
from test_remote_mount import Layout, expect_master  # noqa: E402

SKIP = 77
USER = "ncafs-c-%d" % os.getpid()
PYTHON = "/usr/bin/python3"
READ_LIMIT = 60  # seconds: a read blocked on a FIFO would never end

# Runs as the test user: tries to open every path given; prints the ones it could.
CHILD_OPEN = r"""
import os, sys
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        print(p)
    except OSError:
        pass
"""


def run(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    check(r.returncode == 0, "%s failed: %s" % (" ".join(cmd), r.stderr))


def expect_refused(source, cache, words):
    """The mount and `ncafs check` exit 2 with a message naming the folder and the reason."""
    mnt = tempfile.mkdtemp(prefix="ncafs-mnt-")
    try:
        r = subprocess.run([NCAFS, source, mnt, "-f", "-o", "cache_dir=" + cache], capture_output=True, text=True,
                           timeout=60)
        ok = r.returncode == 2 and cache in r.stderr and all(w in r.stderr for w in words)
        if not ok and os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt])
        check(ok, "cache_dir %s: mount should exit 2 naming it and %s; exit %d: %s" % (cache, words, r.returncode,
                                                                                       r.stderr))
    finally:
        os.rmdir(mnt)
    nca = os.path.join(source, "cached.nca")
    r = subprocess.run([NCAFS, "check", "-o", "cache_dir=" + cache, nca], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and cache in r.stderr, "check with cache_dir %s: exit 2 expected, got %d: %s" % (
        cache, r.returncode, r.stderr))


def case_refused(layout, shared):
    """(a) A folder another user could have prepared is refused."""
    theirs = os.path.join(shared, "theirs")
    run("runuser", "-u", USER, "--", "mkdir", "-m", "0700", theirs)
    expect_refused(layout.source, theirs, ["owned by uid"])
    open_to_all = os.path.join(shared, "open")
    os.mkdir(open_to_all)
    os.chmod(open_to_all, 0o777)
    expect_refused(layout.source, open_to_all, ["writable by its group or by others"])
    link = os.path.join(shared, "link")
    os.symlink(open_to_all, link)
    expect_refused(layout.source, link, ["symbolic link"])
    check(os.listdir(open_to_all) == [] and os.listdir(theirs) == [], "nothing was created in a refused folder")


def cache_tree(cache):
    """Every folder and file below cache (lstat), cache included."""
    found = [(cache, os.lstat(cache))]
    for top, dirs, files in os.walk(cache):
        for n in dirs + files:
            p = os.path.join(top, n)
            found.append((p, os.lstat(p)))
    return found


def case_modes(cache, control):
    """(b) Folders 0700, files 0600, all root's; the user opens nothing but
    `control`, a file all may read (proof that the child can open files)."""
    tree = cache_tree(cache)
    check(len([p for p, st in tree if stat.S_ISREG(st.st_mode)]) > 10, "the cache holds files: %s" % tree[:5])
    for p, st in tree:
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        check(stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode), "%s: neither folder nor file" % p)
        check(stat.S_IMODE(st.st_mode) == want and st.st_uid == 0,
              "%s: mode %o uid %d, expected %o root" % (p, stat.S_IMODE(st.st_mode), st.st_uid, want))
    r = subprocess.run(["runuser", "-u", USER, "--", PYTHON, "-c", CHILD_OPEN, control] + [p for p, _ in tree],
                       capture_output=True, text=True, cwd="/", timeout=60)
    check(r.returncode == 0 and r.stdout.split() == [control], "the user opened cached files: %s %s" % (r.stdout,
                                                                                                      r.stderr))


def read_both(m, layout, nc4_info, what):
    """Both aggregations equal their inputs, read within READ_LIMIT seconds
    (in a thread: a read blocked on a FIFO fails the test, not hangs it)."""
    errors = []

    def read():
        try:
            expect_master(m.path("cached.nc"), layout, what)
            check(np.array_equal(read_netcdf4(m.path("nc4parts.nc"), "v"), nc4_info["master"]),
                  what + ": netCDF-4 partitions differ from the inputs")
        except BaseException as e:  # check() exits: report it from this thread
            errors.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(READ_LIMIT)
    check(not reader.is_alive(), "%s: reads still blocked after %d s" % (what, READ_LIMIT))
    if errors:
        raise errors[0]


def plant(cache, folder, make):
    """Replaces every file in cache/folder by make(path, size); returns the names."""
    names = sorted(os.listdir(os.path.join(cache, folder)))
    for n in names:
        p = os.path.join(cache, folder, n)
        size = os.path.getsize(p)
        os.unlink(p)
        make(p, size)
    check(names, "cache/%s holds files to replace" % folder)
    return names


def case_fifo(m_args, cache, layout, nc4_info):
    """(d) FIFOs in place of every block: reads end, with the inputs' values."""
    names = plant(cache, "blocks", lambda p, size: os.mkfifo(p, 0o600))
    with Mount(*m_args) as m:
        read_both(m, layout, nc4_info, "FIFOs planted as blocks")
        check("not a regular file" in m.log_text(), "the FIFOs are logged:\n" + m.log_text()[-2000:])
    for n in names:
        p = os.path.join(cache, "blocks", n)
        check(not os.path.exists(p) or stat.S_ISREG(os.lstat(p).st_mode), "FIFO %s was replaced or removed" % n)


def case_links(m_args, cache, layout, nc4_info, victims):
    """(c) Symbolic links to root-only files of the same size are never read."""
    secrets = []

    def link_to_secret(p, size):
        target = os.path.join(victims, "secret-%d" % len(secrets))
        with open(target, "wb") as f:
            f.write(b"\x5a" * size)
        os.chmod(target, 0o600)
        secrets.append((target, size))
        os.symlink(target, p)

    plant(cache, "blocks", link_to_secret)
    plant(cache, "objects", link_to_secret)
    with Mount(*m_args) as m:
        read_both(m, layout, nc4_info, "links planted as blocks and local copies")
        check("symbolic link" in m.log_text(), "the links are logged:\n" + m.log_text()[-2000:])
    for target, size in secrets:
        with open(target, "rb") as f:
            check(f.read() == b"\x5a" * size, "%s unchanged" % target)
    check(sorted(os.listdir(victims)) == sorted(os.path.basename(t) for t, _ in secrets),
          "nothing created or deleted beside the link targets: %s" % os.listdir(victims))
    check(not any(os.path.islink(os.path.join(cache, d, n)) for d in ("blocks", "objects")
                  for n in os.listdir(os.path.join(cache, d))), "no planted link is left in the cache")


def case_swapped_folders(layout, cache, victims, servers_roots):
    """(c) tmp and meta swapped for links under a running mount: nothing
    outside the cache is deleted or created; a new mount refuses them."""
    tmp_victim, meta_victim = os.path.join(victims, "tmp-victim"), os.path.join(victims, "meta-victim")
    os.makedirs(tmp_victim)
    os.makedirs(meta_victim)
    old = os.path.join(tmp_victim, "three-hours-old")
    with open(old, "w") as f:
        f.write("precious")
    os.utime(old, (time.time() - 3 * 3600,) * 2)
    # A bound below the data read: eviction (and the clean-up of tmp/) runs during the reads.
    with Mount(layout.source, "cache_dir=%s,cache_size=1M,%s" % (cache, servers_roots)) as m:
        for sub, victim in (("tmp", tmp_victim), ("meta", meta_victim)):
            os.rename(os.path.join(cache, sub), os.path.join(cache, sub + ".away"))
            os.symlink(victim, os.path.join(cache, sub))
        for name in os.listdir(os.path.join(cache, "blocks")):
            os.unlink(os.path.join(cache, "blocks", name))  # the reads write blocks again
        expect_master(m.path("cached.nc"), layout, "tmp and meta swapped for links")
    check(os.path.exists(old), "the old file in the folder tmp linked to was not deleted")
    check(os.listdir(tmp_victim) == ["three-hours-old"], "nothing created in tmp's victim: %s" % os.listdir(tmp_victim))
    check(os.listdir(meta_victim) == [], "nothing created in meta's victim: %s" % os.listdir(meta_victim))
    check(os.listdir(os.path.join(cache, "blocks")), "blocks were written through the folders' descriptors")
    expect_refused(layout.source, cache, ["symbolic link"])
    check(os.path.exists(old) and os.listdir(meta_victim) == [], "the refused mount touched no victim")


def write_aggregations(work, layout, web, web4):
    """cached.nca (partitions 4-11 on web) and nc4parts.nca (all on web4) in SOURCE."""
    layout.write_nca("cached", web.url, {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(8, 12)})
    nca = os.path.join(layout.source, "nc4parts.nca")
    shutil.copy(os.path.join(work, "nc4", "nc4parts.nca"), nca)
    with netCDF4.Dataset(nca, "a") as ds:
        spec = json.loads(ds.variables["v"].nca_array)
        for p in spec["Partitions"]:
            p["subarray"]["file"] = web4.url + "/" + p["subarray"]["file"]
        ds.variables["v"].nca_array = json.dumps(spec)


def cleanup_user():
    subprocess.run(["userdel", USER], capture_output=True)


def main():
    if os.geteuid() != 0:
        print("SKIPPED: test_cache.py must run as root (it creates a user and checks root's cache)")
        return SKIP
    why = fuse_usable() or servers.skip_reason_nginx()
    if why:
        print("SKIPPED: " + why)
        return SKIP
    run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER)
    work = tempfile.mkdtemp(prefix="ncafs-cache-")
    os.chmod(work, 0o755)
    try:
        shared = os.path.join(work, "shared")  # like /var/tmp
        victims = os.path.join(work, "victims")
        os.makedirs(victims)
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        nc4_info = make_aggregations.netcdf4_partitions(os.path.join(work, "nc4"), "nc4parts")
        layout = Layout(work, lat=180, lon=360)  # partitions of 518 KB: three blocks each
        with servers.Nginx(os.path.join(work, "gen")) as web, servers.Nginx(os.path.join(work, "nc4")) as web4:
            write_aggregations(work, layout, web, web4)
            case_refused(layout, shared)
            cache = os.path.join(shared, "cache")
            servers_roots = ",".join("allow_root=%s/" % s.url for s in (web, web4))  # on 127.0.0.1: named
            m_args = (layout.source, "cache_dir=%s,cache_size=64M,%s" % (cache, servers_roots))
            with Mount(*m_args) as m:
                read_both(m, layout, nc4_info, "first reads")
            control = os.path.join(layout.gen, layout.parts[0])
            case_modes(cache, control)
            case_fifo(m_args, cache, layout, nc4_info)
            case_links(m_args, cache, layout, nc4_info, victims)
            case_modes(cache, control)
            case_swapped_folders(layout, cache, victims, servers_roots)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        cleanup_user()
    print("PASS: the disk cache is the daemon's alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
