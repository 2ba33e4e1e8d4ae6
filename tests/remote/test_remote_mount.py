#!/usr/bin/python3
"""Aggregations whose partitions lie on HTTP (nginx) and S3 (s3rver behind a
SigV4-checking proxy) servers, read through real ncafs mounts.

Run as: test_remote_mount.py CASE  (CASES below). Environment: NCAFS_BIN,
NCAFS_NPM_DIR (where s3rver is installed).

The expected values are the master array computed by the generator
(tests/e2e/make_aggregations.py) from the inputs, and `ncrcat` of the
partitions' local copies read by ncdump and netCDF4-python; never our own
output. A case whose server cannot run prints SKIPPED and why, and exits 77.
"""
import errno
import json
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import make_aggregations  # noqa: E402
import servers  # noqa: E402
from test_mount import NCAFS, SKIP, Mount, check, fail, ncdump_variable, read_netcdf4, run_cases  # noqa: E402

BUCKET = "ncafs-integ"
SECRET = "integ-secret"
KEY_ID = "AKIDNCAFSINTEG"


def skip(reason):
    print("SKIPPED: " + reason, flush=True)
    sys.exit(SKIP)


def need_servers(s3=True):
    why = servers.skip_reason_nginx() or (servers.skip_reason_s3rver() if s3 else None)
    if why:
        skip(why)


def use_s3_credentials(work, secret):
    """The mount inherits this environment: only these credentials, no ~/.aws."""
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        del os.environ[k]
    os.environ["HOME"] = work
    os.environ.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=secret)


class Layout:
    """The monthly aggregation (12 partitions) generated under work/gen; its
    partitions spread over local (0-3, under the mount source), HTTP (4-7,
    under the nginx root) and S3 (8-11); ncrcat of all 12 local copies."""

    def __init__(self, work, lat=18, lon=36):
        self.work = work
        self.gen = os.path.join(work, "gen")
        self.info = make_aggregations.monthly(self.gen, "monthly", lat=lat, lon=lon)
        self.parts = sorted(n for n in os.listdir(self.gen) if n.startswith("part_"))
        self.source = os.path.join(work, "src")
        self.www = os.path.join(work, "www")
        for folder in (self.source, self.www):
            os.makedirs(folder)
        for i, name in enumerate(self.parts):
            if i < 4:
                shutil.copy(os.path.join(self.gen, name), os.path.join(self.source, name))
            elif i < 8:
                shutil.copy(os.path.join(self.gen, name), os.path.join(self.www, name))
        self.ncrcat = os.path.join(work, "ncrcat.nc")
        subprocess.run(["ncrcat", "-O", "-h"] + [os.path.join(self.gen, p) for p in self.parts] + [self.ncrcat],
                       check=True)

    def put_s3(self, store):
        for name in self.parts[8:]:
            with open(os.path.join(self.gen, name), "rb") as f:
                store.put(BUCKET, "monthly/" + name, f.read())

    def write_nca(self, name, http_base, file_of=None):
        """NAME.nca under the source: the generator's JSON with remote file names."""
        target = os.path.join(self.source, name + ".nca")
        shutil.copy(os.path.join(self.gen, "monthly.nca"), target)
        with netCDF4.Dataset(target, "a") as ds:
            carrier = ds.variables["tas"]
            spec = json.loads(carrier.nca_array)
            for p in spec["Partitions"]:
                i = self.parts.index(p["subarray"]["file"])
                if i >= 8:
                    p["subarray"]["file"] = "s3://%s/monthly/%s" % (BUCKET, self.parts[i])
                elif i >= 4:
                    p["subarray"]["file"] = "%s/%s" % (http_base, self.parts[i])
                if file_of and i in file_of:
                    p["subarray"]["file"] = file_of[i]
            carrier.nca_array = json.dumps(spec)
        return name + ".nc"


def expect_master(path, layout, what):
    """netCDF4-python and ncdump of the mounted file equal the generator's
    master array and ncrcat of the local copies."""
    got = read_netcdf4(path, "tas")
    check(np.array_equal(got, layout.info["master"]), what + ": netCDF4-python values differ from the master array")
    check(np.array_equal(got, read_netcdf4(layout.ncrcat, "tas")), what + ": values differ from ncrcat")
    check(ncdump_variable(path, "tas") == ncdump_variable(layout.ncrcat, "tas"), what + ": ncdump differs from ncrcat")
    check(np.array_equal(read_netcdf4(path, "time"), read_netcdf4(layout.ncrcat, "time")), what + ": time differs")


def read_all(path):
    """The whole file by os.pread in 64 KiB steps: bytes, or the errno of the first failed read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks, offset = [], 0
        while True:
            try:
                b = os.pread(fd, 65536, offset)
            except OSError as e:
                return e.errno
            if not b:
                return b"".join(chunks)
            chunks.append(b)
            offset += len(b)
    finally:
        os.close(fd)


def s3_options(signed, extra="", bucket_root="allow_root=s3://%s/monthly" % BUCKET):
    """s3_endpoint= the SigV4 proxy, the test bucket allowed, and `extra`."""
    return ",".join(o for o in ("s3_endpoint=" + signed.url, bucket_root, extra) if o)


def roots(*servers_):
    """allow_root= for each server (they listen on 127.0.0.1: reached only when named)."""
    return ",".join("allow_root=%s/" % s.url for s in servers_)


def case_nca(work):
    """NCA partitions local + HTTP + S3 equal ncrcat; remote=no refuses; a
    wrong S3 secret is EIO with a log line naming the URL."""
    need_servers()
    layout = Layout(work)
    use_s3_credentials(work, SECRET)
    with servers.Nginx(layout.www) as web, servers.S3rver(os.path.join(work, "s3")) as store, \
            servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed:
        layout.put_s3(store)
        name = layout.write_nca("mixed", web.url)
        with Mount(layout.source, s3_options(signed, roots(web))) as m:
            expect_master(m.path(name), layout, "mixed NCA")
            check(signed.rejected == 0, "every S3 request was signed right")
        exported = os.path.join(work, "exported.nc")  # `ncafs export` reads the same partitions
        subprocess.run([NCAFS, "export", os.path.join(layout.source, "mixed.nca"), "-o", exported,
                        "-o", s3_options(signed, roots(web))], check=True, timeout=300)
        expect_master(exported, layout, "ncafs export")
        with Mount(layout.source, s3_options(signed, "remote=no," + roots(web))) as m:
            got = read_all(m.path(name))
            check(got == errno.EIO, "remote=no: reading gives EIO, got %r" % (got if isinstance(got, int) else "bytes"))
            check("remote" in m.log_text() and web.url in m.log_text(), "remote=no is logged with the URL:\n" + m.log_text())
        use_s3_credentials(work, "wrong-secret")
        with Mount(layout.source, s3_options(signed, roots(web))) as m:
            got = read_all(m.path(name))
            check(got == errno.EIO, "wrong S3 secret: EIO expected")
            check("s3://%s/monthly/" % BUCKET in m.log_text() and "403" in m.log_text(),
                  "a log line names the S3 URL and the 403:\n" + m.log_text())


def case_cf(work):
    """A CF-1.13 aggregation written by `ncafs aggregate` over local files,
    whose folders -o rewrite= maps to the HTTP server and the S3 bucket."""
    need_servers()
    layout = Layout(work)
    use_s3_credentials(work, SECRET)
    staged = {"local": layout.source, "http": os.path.join(work, "stage_http"), "s3": os.path.join(work, "stage_s3")}
    for key in ("http", "s3"):
        os.makedirs(staged[key])
    for i, name in enumerate(layout.parts):
        folder = staged["local" if i < 4 else "http" if i < 8 else "s3"]
        if i >= 4:
            shutil.copy(os.path.join(layout.gen, name), os.path.join(folder, name))
    inputs = [os.path.join(staged["local" if i < 4 else "http" if i < 8 else "s3"], n) for i, n in enumerate(layout.parts)]
    agg = os.path.join(layout.source, "cf.nc")
    subprocess.run([NCAFS, "aggregate", "--absolute", "--dim", "time", "-o", agg] + inputs, check=True)
    shutil.rmtree(staged["http"])  # only the servers have these now
    shutil.rmtree(staged["s3"])
    with servers.Nginx(layout.www) as web, servers.S3rver(os.path.join(work, "s3")) as store, \
            servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed:
        layout.put_s3(store)
        options = s3_options(signed, "rewrite=%s=%s,rewrite=%s=s3://%s/monthly,%s" % (
            staged["http"], web.url, staged["s3"], BUCKET, roots(web)))
        with Mount(layout.source, options) as m:
            expect_master(m.path("cf.nc"), layout, "CF-1.13 with rewrites")
        write_direct_uris(agg, os.path.join(layout.source, "cf_direct.nc"), layout, web.url)
        with Mount(layout.source, s3_options(signed, roots(web))) as m:
            expect_master(m.path("cf_direct.nc"), layout, "CF-1.13 with http:// and s3:// URIs")


def write_direct_uris(agg, target, layout, http_base):
    """A copy of the CF-1.13 file `agg` whose fragment URIs name the servers."""
    shutil.copy(agg, target)
    with netCDF4.Dataset(target, "a") as ds:
        for name in ("fragment_uris_tas", "fragment_uris_time"):
            uris = ds.variables[name]
            flat = np.array(uris[...], dtype=object).reshape(-1)
            for k, uri in enumerate(flat):
                i = layout.parts.index(os.path.basename(uri))
                if i >= 8:
                    flat[k] = "s3://%s/monthly/%s" % (BUCKET, layout.parts[i])
                elif i >= 4:
                    flat[k] = "%s/%s" % (http_base, layout.parts[i])
            uris[...] = flat.reshape(uris.shape)


FAULT_PLANS = [[503, 503, 503], ["drop", "ok", "drop"], ["truncate", ("delay", 0.3), 429], [("delay", 1.0)] * 4]


def case_faults(work):
    """A fault-injecting proxy between ncafs and nginx: retried faults give
    the right bytes; an object replaced mid-read gives EIO, never wrong bytes."""
    need_servers(s3=False)
    layout = Layout(work, lat=180, lon=360)  # partitions of 518 KB: more than the first block read at open
    with servers.Nginx(os.path.join(work, "gen")) as web:
        with Mount(layout.source, roots(web)) as m:  # reference: every partition over nginx, no fault proxy
            name = layout.write_nca("reference", web.url, {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(8, 12)})
            expect_master(m.path(name), layout, "nginx reference")
            reference = read_all(m.path(name))
        for plan in FAULT_PLANS:
            with servers.FaultProxy(web.url, plan) as proxy:
                name = layout.write_nca("faulty", proxy.url,
                                        {i: "%s/%s" % (proxy.url, layout.parts[i]) for i in range(8, 12)})
                with Mount(layout.source, roots(proxy)) as m:
                    check(read_all(m.path(name)) == reference, "plan %s: bytes differ from the reference" % plan)
                    check(len(proxy.requests) > 0, "plan %s: the proxy was used" % plan)
        with servers.FaultProxy(web.url, ["ok"] * 2 + ["change_etag"]) as proxy:
            name = layout.write_nca("replaced", proxy.url, {i: "%s/%s" % (proxy.url, layout.parts[i]) for i in range(8, 12)})
            with Mount(layout.source, roots(proxy)) as m:
                got = read_all(m.path(name))
                check(got == errno.EIO or got == reference, "replaced objects: EIO or the right bytes, never others")
                check(got == errno.EIO, "replaced objects: EIO expected (the proxy changed every ETag)")
                check("changed" in m.log_text(), "the change is logged:\n" + m.log_text())


def case_disk_cache(work):
    """cache_dir survives a remount and serves with nginx stopped; netCDF-4
    partitions are read from their local copy."""
    need_servers(s3=False)
    layout = Layout(work)
    cache = os.path.join(work, "cache")
    nc4 = os.path.join(work, "nc4")
    nc4_info = make_aggregations.netcdf4_partitions(nc4, "nc4parts")
    web = servers.Nginx(os.path.join(work, "gen"))
    with web, servers.Nginx(nc4) as web4:
        name = layout.write_nca("cached", web.url, {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(8, 12)})
        shutil.copy(os.path.join(nc4, "nc4parts.nca"), os.path.join(layout.source, "nc4parts.nca"))
        with netCDF4.Dataset(os.path.join(layout.source, "nc4parts.nca"), "a") as ds:
            spec = json.loads(ds.variables["v"].nca_array)
            for p in spec["Partitions"]:
                p["subarray"]["file"] = web4.url + "/" + p["subarray"]["file"]
            ds.variables["v"].nca_array = json.dumps(spec)
        with Mount(layout.source, roots(web, web4)) as m:  # no cache_dir: a netCDF-4 object cannot be read
            check(read_all(m.path("nc4parts.nc")) == errno.EIO, "netCDF-4 partition without cache_dir: EIO")
            check("cache_dir" in m.log_text(), "the log says cache_dir is needed:\n" + m.log_text())
        with Mount(layout.source, "cache_dir=%s,cache_size=64M,%s" % (cache, roots(web, web4))) as m:
            expect_master(m.path(name), layout, "cache_dir, first mount")
            check(np.array_equal(read_netcdf4(m.path("nc4parts.nc"), "v"), nc4_info["master"]),
                  "netCDF-4 partitions from their local copies")
        web.stop()
        with Mount(layout.source, "cache_dir=%s,%s" % (cache, roots(web))) as m:
            expect_master(m.path(name), layout, "cache_dir, nginx stopped")
            for part in layout.parts[8:]:  # one line each: served from the disk cache (not the error as well)
                lines = [l for l in m.log_text().splitlines() if part in l]
                check(len(lines) == 1 and "disk cache" in lines[0], "one log line for %s:\n%s" % (part, m.log_text()))


def case_https(work):
    """https:// partitions are verified against ca_file=; without it, EIO."""
    need_servers(s3=False)
    layout = Layout(work)
    with servers.Nginx(os.path.join(work, "gen"), tls=True) as web:
        name = layout.write_nca("tls", web.url, {i: "%s/%s" % (web.url, layout.parts[i]) for i in range(8, 12)})
        with Mount(layout.source, "ca_file=%s,%s" % (web.ca_file, roots(web))) as m:
            expect_master(m.path(name), layout, "https with ca_file")
        with Mount(layout.source, roots(web)) as m:
            check(read_all(m.path(name)) == errno.EIO, "https without the server's CA: EIO")
            check("certificate" in m.log_text().lower(), "the log names the certificate problem:\n" + m.log_text())


def case_check(work):
    """`ncafs check` names a missing and a forbidden remote object."""
    need_servers()
    layout = Layout(work)
    use_s3_credentials(work, SECRET)
    with servers.Nginx(layout.www) as web, servers.S3rver(os.path.join(work, "s3")) as store, \
            servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed, \
            servers.FaultProxy(web.url, [403] * 50) as refusing:
        layout.put_s3(store)
        missing, forbidden = web.url + "/no_such_part.nc", refusing.url + "/" + layout.parts[5]
        layout.write_nca("broken", web.url, {4: missing, 5: forbidden})
        layout.write_nca("good", web.url)
        nca = os.path.join(layout.source, "broken.nca")
        options = s3_options(signed, roots(web, refusing))
        done = subprocess.run([NCAFS, "check", "-o", options, nca], capture_output=True, text=True,
                              timeout=300)
        check(done.returncode == 1, "check of a broken aggregation fails: %d %s" % (done.returncode, done.stdout))
        lines = done.stdout.splitlines()
        check(any(missing in l and "missing" in l for l in lines), "the missing object is named:\n" + done.stdout)
        check(any(forbidden in l and "forbidden" in l for l in lines), "the forbidden object is named:\n" + done.stdout)
        check(len(lines) == 2, "only those two problems:\n" + done.stdout)
        good = subprocess.run([NCAFS, "check", "-o", options, os.path.join(layout.source, "good.nca")],
                              capture_output=True, text=True, timeout=300)
        check(good.returncode == 0 and good.stdout.strip() == "ok", "check of the good one: " + good.stdout + good.stderr)
        inspect = subprocess.run([NCAFS, "inspect", nca], capture_output=True, text=True, timeout=60)
        check(inspect.returncode == 0 and missing in inspect.stdout, "inspect lists the URLs without opening them")
        inspect = subprocess.run([NCAFS, "inspect", "-o", roots(web), nca], capture_output=True, text=True, timeout=60)
        lines = inspect.stdout.splitlines()
        check(any("s3://" in l and "(refused: not under an allowed remote root" in l for l in lines) and
              not any(missing in l and "refused" in l for l in lines), "inspect -o marks the URLs no root covers:\n" +
              inspect.stdout + inspect.stderr)


def expect_refused(m, path, words, what):
    """Reading `path` is EIO and the log names each of `words` (the URL, the rule)."""
    got = read_all(path)
    check(got == errno.EIO, "%s: EIO expected, got %s" % (what, got if isinstance(got, int) else "bytes"))
    for w in words:
        check(w in m.log_text(), "%s: the log should name %r:\n%s" % (what, w, m.log_text()))


def redirecting_nginx(root, target):
    """nginx serving `root`, where /out/NAME redirects to target/NAME, /in/NAME
    to its own /NAME, and the S3 path /BUCKET/KEY to target/BUCKET/KEY."""
    return servers.Nginx(root, locations=(
        "location /out/ { rewrite ^/out/(.*)$ %s/$1 redirect; }\n"
        "    location /in/ { rewrite ^/in/(.*)$ /$1 redirect; }\n"
        "    location /%s/ { rewrite ^/(.*)$ %s/$1 redirect; }" % (target.url, BUCKET, target.url)))


def case_policy(work):
    """Remote roots (allow_root=URL): a bucket outside them is EIO and no
    request for it is made (so none is signed); 127.0.0.1 and a name that
    resolves to it are refused unless a root names the host; a redirect to
    another server is refused, one within the root followed; with
    allow_other, a root for any host stops the mount, and an unprivileged
    user cannot read a private object through a steal.nca."""
    need_servers()
    layout = Layout(work)
    use_s3_credentials(work, SECRET)
    try:
        refused = subprocess.run([NCAFS, layout.source, layout.www, "-f", "-o", "allow_other,allow_root=https://"],
                                 capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-u", "-z", layout.www])
        fail("allow_other with allow_root=https:// (any host) mounted")
    check(refused.returncode == 2 and "allow_other" in refused.stderr, "allow_other with allow_root=https:// "
          "(any host) must not mount: %d %s" % (refused.returncode, refused.stderr))
    with servers.Nginx(layout.www) as other, redirecting_nginx(layout.www, other) as web, \
            servers.S3rver(os.path.join(work, "s3")) as store, servers.SigV4Proxy(store.url, KEY_ID, SECRET) as signed:
        layout.put_s3(store)
        name = layout.write_nca("mixed", web.url)
        by_name = layout.write_nca("by_name", "http://localhost:%d" % web.port)
        out = layout.write_nca("out", web.url + "/out")
        inside = layout.write_nca("inside", web.url + "/in")
        with Mount(layout.source, s3_options(signed, roots(web), "allow_root=s3://other-bucket/")) as m:
            expect_refused(m, m.path(name), ["s3://%s/monthly/" % BUCKET, "allow_root"], "a bucket not allowed")
            check(not any(BUCKET in path for _, path, _ in signed.requests),
                  "no request (signed or not) for a bucket not allowed: %s" % signed.requests)
        with Mount(layout.source, s3_options(signed, "allow_root=http://,allow_root=https://")) as m:
            expect_refused(m, m.path(name), [web.url + "/part_", "loopback"], "127.0.0.1 under a root for any host")
            expect_refused(m, m.path(by_name), ["http://localhost:%d/part_" % web.port, "loopback"],
                           "a name resolving to 127.0.0.1 under a root for any host")
        with Mount(layout.source, s3_options(signed, "allow_root=http://localhost:%d/" % web.port)) as m:
            expect_refused(m, m.path(name), [web.url + "/part_", "not under an allowed remote root"],
                           "127.0.0.1 under a root naming another host")
        seen_other = len(other.requests())
        with Mount(layout.source, s3_options(signed, roots(web))) as m:
            expect_master(m.path(name), layout, "roots naming the servers")
            expect_master(m.path(inside), layout, "a redirect within the root")
            expect_refused(m, m.path(out), [web.url + "/out/part_", "redirect", other.url], "a redirect to another port")
        check(len(other.requests()) == seen_other, "the redirect target was never asked: %s" % other.requests())
        check(signed.rejected == 0 and all("Authorization" in h for _, _, h in signed.requests), "S3 requests signed")
        check(not any("AWS4" in line for line in web.requests()), "no credentials sent to nginx")
        # A signed request's redirect is not followed, even into an allowed root.
        with Mount(layout.source, "s3_endpoint=%s,allow_root=s3://%s/monthly,%s" % (web.url, BUCKET,
                                                                                  roots(web, other))) as m:
            expect_refused(m, m.path(name), ["s3://%s/monthly/" % BUCKET, "signed request is never redirected"],
                           "a redirect of a signed request")
        check(any(" 302 " in l and "auth=AWS4-HMAC-SHA256" in l for l in web.requests()), "the S3 request was signed")
        check(len(other.requests()) == seen_other, "no request followed the signed redirect: %s" % other.requests())
        steal_by_unprivileged_user(work, layout, web, store, signed)


# Runs as the test user: the errno of the first failed read of the whole
# file, else the values of one variable (netCDF4-python).
READER = r"""
import json, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    offset = 0
    while True:
        b = os.pread(fd, 65536, offset)
        if not b:
            break
        offset += len(b)
    os.close(fd)
except OSError as e:
    print(json.dumps({"errno": e.errno}))
    sys.exit(0)
import netCDF4, numpy
with netCDF4.Dataset(sys.argv[1]) as ds:
    print(json.dumps({"values": numpy.asarray(ds.variables[sys.argv[2]][:]).ravel().tolist()}))
"""


def steal_by_unprivileged_user(work, layout, web, store, signed):
    """allow_other mount by root allowing one bucket prefix: a user who writes
    steal.nca naming a private object (anonymous GET: 403) gets EIO, and no
    request for it is made; the same user reads an allowed aggregation."""
    if os.geteuid() != 0:
        print("SKIPPED (part): the steal.nca check needs root (a user and allow_other)", flush=True)
        return
    private = "s3://private-bucket/secret/%s" % layout.parts[8]
    with open(os.path.join(layout.gen, layout.parts[8]), "rb") as f:
        store.put("private-bucket", "secret/" + layout.parts[8], f.read())
    anonymous = subprocess.run(["curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}",
                                signed.url + "/private-bucket/secret/" + layout.parts[8]], capture_output=True, text=True)
    check(anonymous.stdout == "403", "an anonymous GET of the private object is refused: " + anonymous.stdout)
    user = "ncrp%d" % os.getpid()
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    try:
        os.chmod(work, 0o755)
        steal = layout.write_nca("steal", web.url, {8: private})
        shutil.chown(os.path.join(layout.source, "steal.nca"), user)  # written by the user, as far as ncafs knows
        asked = len(signed.requests)
        with Mount(layout.source, "allow_other," + s3_options(signed, roots(web))) as m:
            def read_as_user(name):
                r = subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", READER, m.path(name), "tas"],
                                   capture_output=True, text=True, cwd="/", timeout=120)
                check(r.returncode == 0, "reader as %s: %s" % (user, r.stderr))
                return json.loads(r.stdout)
            got = read_as_user(steal)
            check(got.get("errno") == errno.EIO, "steal.nca as an unprivileged user: EIO expected, got %s" % str(got)[:200])
            check(private in m.log_text() and "allow_root" in m.log_text(), "the refusal is logged:\n" + m.log_text())
            got = read_as_user("mixed.nc")
            check(np.array_equal(np.array(got.get("values", []), dtype=layout.info["master"].dtype),
                                 layout.info["master"].ravel()), "the user reads an allowed aggregation")
        check(not any("private-bucket" in path for _, path, _ in signed.requests[asked:]),
              "no request for the private bucket")
    finally:
        subprocess.run(["userdel", user], capture_output=True)


CASES = {"policy": case_policy, "nca": case_nca, "cf": case_cf, "faults": case_faults, "disk_cache": case_disk_cache, "https": case_https,
         "check": case_check}


if __name__ == "__main__":
    sys.exit(run_cases(CASES, "ncafs-remote-mount-"))
