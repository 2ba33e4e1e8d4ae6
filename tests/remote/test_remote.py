#!/usr/bin/python3
"""remote/ against real servers on 127.0.0.1 (tests/remote/servers.py).

Run as: test_remote.py CASE  (CASES below). Environment: REMOTE_FETCH (the
remote_fetch driver), NCAFS_NPM_DIR (where s3rver is installed).

Every expectation is the file's own bytes read by Python, never our output;
a case whose server cannot run prints SKIPPED and why, and exits 77.
"""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import servers  # noqa: E402
from test_mount import SKIP, check, fail  # noqa: E402

FETCH = os.environ.get("REMOTE_FETCH", "remote_fetch")
BLOCK = 256 * 1024  # remote/store_core.hpp kFetchBlockSize


def skip(reason):
    print("SKIPPED: " + reason, flush=True)
    sys.exit(SKIP)


class Files:
    """A temp dir with random objects; expected bytes come from these files."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ncafs-remote-")
        rng = random.Random(20261124)
        self.data = {
            "big.bin": rng.randbytes(4 * 1024 * 1024 + 12345),
            "small.bin": rng.randbytes(1000),
            "empty.bin": b"",
        }
        self.root = os.path.join(self.dir, "www")
        os.makedirs(self.root)
        for name, data in self.data.items():
            with open(os.path.join(self.root, name), "wb") as f:
                f.write(data)

    def expected(self, name, ranges):
        with open(os.path.join(self.root, name), "rb") as f:
            content = f.read()
        return b"".join(content[o:o + n] for o, n in ranges)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def origin_root(url):
    """allow_root= for the server of an http(s) URL (its origin): the servers
    here listen on 127.0.0.1, reached only when a root names it."""
    if not url.startswith("http"):
        return []
    scheme, rest = url.split("://", 1)
    return ["--allow-root", "%s://%s/" % (scheme, rest.split("/", 1)[0])]


def fetch(url, args=(), ranges=(), env=None):
    """(returncode, stdout, stderr, bytes written or None)."""
    out = tempfile.mktemp(prefix="ncafs-remote-out-")
    cmd = [FETCH, url, "--out", out] + origin_root(url) + list(args) + ["%d:%d" % r for r in ranges]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    data = None
    if os.path.exists(out):
        with open(out, "rb") as f:
            data = f.read()
        os.unlink(out)
    return done.returncode, done.stdout, done.stderr, data


def expect_bytes(files, name, url, ranges, args=(), env=None):
    code, out, err, data = fetch(url, args, ranges, env)
    check(code == 0, "%s %s: exit %d: %s" % (url, list(args), code, err))
    check(data == files.expected(name, ranges), "%s %s %s: bytes differ from the file" % (url, list(args), ranges))
    return out, err


def expect_error(url, args, ranges, words, env=None):
    code, out, err, data = fetch(url, args, ranges, env)
    check(code == 1, "%s %s: expected an error, exit %d" % (url, list(args), code))
    check(data is None, "%s: bytes were written despite the error" % url)
    for w in [url] + list(words):
        check(w in err, "%s: error should mention %r: %s" % (url, w, err))
    return err


SCATTERED = [(0, 10), (BLOCK - 5, 10), (3 * BLOCK, 100), (4 * 1024 * 1024, 12345), (77, 1), (2 * BLOCK + 1, BLOCK)]


def case_nginx(files):
    with servers.Nginx(files.root) as web:
        big = web.url + "/big.bin"
        expect_bytes(files, "big.bin", big, SCATTERED)
        expect_bytes(files, "big.bin", big, SCATTERED, ["--many"])
        expect_bytes(files, "big.bin", big, [(0, len(files.data["big.bin"]))], ["--whole", "65536"])
        expect_bytes(files, "small.bin", web.url + "/small.bin", [(0, 1000), (999, 1)])
        code, out, err, _ = fetch(web.url + "/empty.bin")
        check(code == 0 and "size 0" in out, "empty object: %s %s" % (out, err))
        expect_error(big, [], [(len(files.data["big.bin"]) - 1, 2)], ["beyond the end"])
        expect_error(web.url + "/missing.bin", [], [(0, 1)], ["HTTP 404"])
        check(fetch(big, ["--probe"])[1].startswith("Ok "), "probe of an object")
        check(fetch(web.url + "/missing.bin", ["--probe"])[1].startswith("Missing "), "probe of a missing object")
    port = servers.free_port()
    probe = fetch("http://127.0.0.1:%d/x" % port, ["--probe", "--retries", "0"])[1]
    check(probe.startswith("Unreachable "), "probe of a closed port: " + probe)


def case_merge(files):
    """read_many merges adjacent blocks into one GET; readahead on sequential reads."""
    with servers.Nginx(files.root) as web, servers.FaultProxy(web.url, []) as proxy:
        big = proxy.url + "/big.bin"
        ranges = [(BLOCK + 10, 10), (2 * BLOCK + 10, 10), (3 * BLOCK + 10, 10)]
        expect_bytes(files, "big.bin", big, ranges, ["--many"])
        check(len(proxy.requests) == 2, "open + one merged GET expected, saw %d" % len(proxy.requests))
        del proxy.requests[:]
        size = len(files.data["big.bin"])
        expect_bytes(files, "big.bin", big, [(0, size)], ["--whole", "16384"])
        blocks = (size + BLOCK - 1) // BLOCK
        check(len(proxy.requests) <= blocks // 3, "readahead: %d GETs for %d blocks" % (len(proxy.requests), blocks))


def s3_env(files, secret, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = files.dir  # no ~/.aws of the machine
    if secret is not None:
        env.update(AWS_ACCESS_KEY_ID="AKIDNCAFSTEST", AWS_SECRET_ACCESS_KEY=secret)
    env.update(extra)
    return env


def case_s3(files):
    why = servers.skip_reason_s3rver()
    if why:
        skip(why)
    with servers.S3rver(os.path.join(files.dir, "s3")) as store, \
            servers.SigV4Proxy(store.url, "AKIDNCAFSTEST", "right-secret") as signed:
        store.put("ncafs-bucket", "dir/big object+1.bin", files.data["big.bin"])
        url = "s3://ncafs-bucket/dir/big object+1.bin"
        endpoint = ["--endpoint", signed.url]
        expect_bytes(files, "big.bin", url, SCATTERED, endpoint + ["--many"], s3_env(files, "right-secret"))
        expect_bytes(files, "big.bin", url, SCATTERED, endpoint,
                     s3_env(files, "right-secret", AWS_SESSION_TOKEN="session-token"))
        check(all("x-amz-security-token" in (h.lower() for h in r[2]) for r in signed.requests[-2:]),
              "the session token is sent")
        credentials = os.path.join(files.dir, "credentials")
        with open(credentials, "w") as f:
            f.write("[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n"
                    "[ncafs]\naws_access_key_id = AKIDNCAFSTEST\naws_secret_access_key = right-secret\n")
        expect_bytes(files, "big.bin", url, [(5, 500)], endpoint,
                     s3_env(files, None, AWS_SHARED_CREDENTIALS_FILE=credentials, AWS_PROFILE="ncafs"))
        rejected = signed.rejected
        expect_error(url, endpoint, [(0, 10)], ["HTTP 403", "SignatureDoesNotMatch"], s3_env(files, "wrong-secret"))
        expect_error(url, endpoint, [(0, 10)], ["HTTP 403", "AccessDenied"], s3_env(files, None))
        check(signed.rejected == rejected + 2, "the proxy rejected both requests")
        probe = fetch(url, endpoint + ["--probe"], env=s3_env(files, "wrong-secret"))[1]
        check(probe.startswith("Forbidden "), "probe with a wrong secret: " + probe)
        expect_error("s3://ncafs-bucket/nope.bin", endpoint, [(0, 1)], ["HTTP 404"], s3_env(files, "right-secret"))


def case_tls(files):
    """HTTPS is verified (a self-signed server fails without its CA file) and HTTP/2 is used."""
    with servers.Nginx(files.root, tls=True) as web:
        big = web.url + "/big.bin"
        expect_error(big, [], [(0, 10)], ["certificate"])
        count = len(web.protocols())
        expect_bytes(files, "big.bin", big, SCATTERED, ["--many", "--ca-file", web.ca_file])
        seen = web.protocols()[count:]
        check(seen and all(p == "HTTP/2.0" for p in seen), "HTTP/2 expected: %s" % seen)


def case_threads(files):
    """Eight threads reading the same object at once through one store."""
    with servers.Nginx(files.root) as web:
        threads = 8
        ranges = SCATTERED * 3
        code, out, err, data = fetch(web.url + "/big.bin", ["--threads", str(threads), "--memory-cache", str(BLOCK * 2)],
                                     ranges)
        check(code == 0, "threads: " + err)
        check(data == files.expected("big.bin", ranges) * threads, "threads: bytes differ from the file")


RETRIED = [[503, 503], [429], [500, 502], ["drop"], ["ok", "drop"], ["truncate"], ["ok", "truncate"],
           ["wrong_range"], ["ok", "wrong_range"], [("delay", 0.5)]]


def case_faults(files):
    """Every fault is retried to the right bytes; persistent ones end in a clear error."""
    with servers.Nginx(files.root) as web:
        for plan in RETRIED:
            with servers.FaultProxy(web.url, plan) as proxy:
                expect_bytes(files, "big.bin", proxy.url + "/big.bin", SCATTERED)
                check(len(proxy.requests) > len(plan), "plan %s: no retry seen" % plan)
        for plan, words in (([503] * 10, ["HTTP 503", "after 3 attempts"]), (["drop"] * 10, ["after 3 attempts"]),
                            (["ok"] + ["wrong_range"] * 10, ["wrong Content-Range"]),
                            (["ok"] + ["truncate"] * 10, ["after 3 attempts"]), ([403], ["HTTP 403"])):
            with servers.FaultProxy(web.url, plan) as proxy:
                expect_error(proxy.url + "/big.bin", ["--retries", "2"], SCATTERED, words)
        with servers.FaultProxy(web.url, ["no_range"] * 10) as proxy:
            expect_error(proxy.url + "/big.bin", [], [(0, 10)], ["ignores byte ranges"])
            check(len(proxy.requests) == 1, "a server without ranges is not retried")
        with servers.FaultProxy(web.url, ["no_range"] * 10) as proxy:
            expect_bytes(files, "small.bin", proxy.url + "/small.bin", [(0, 1000), (10, 5)])
        with servers.FaultProxy(web.url, [403]) as proxy:
            expect_error(proxy.url + "/big.bin", [], SCATTERED, ["HTTP 403"])
            check(len(proxy.requests) == 1, "a 403 is not retried")


def case_etag(files):
    """An object replaced between open and a read is an error, never mixed bytes."""
    with servers.Nginx(files.root) as web:
        with servers.FaultProxy(web.url, ["ok", "change_etag"]) as proxy:
            expect_error(proxy.url + "/big.bin", [], [(0, 10), (3 * BLOCK, 10)], ["changed on the server"])
            check(any(h.get("If-Match") for _, _, h in proxy.requests[1:]), "later GETs send If-Match")


def case_disk_cache(files):
    """The disk cache survives a restart of the reader and serves with the server stopped."""
    cache = os.path.join(files.dir, "cache")
    size = len(files.data["big.bin"])
    web = servers.Nginx(files.root)
    with web:
        url = web.url + "/big.bin"
        expect_bytes(files, "big.bin", url, [(0, size)], ["--whole", "100000", "--cache-dir", cache])
        web.stop()
        out, err = expect_bytes(files, "big.bin", url, SCATTERED, ["--cache-dir", cache, "--retries", "1"])
        check("unreachable" in err and "disk cache" in err, "the offline open is logged: " + err)
        expect_error(web.url + "/small.bin", ["--cache-dir", cache, "--retries", "1"], [(0, 1)],
                     ["connect"])
    bounded = os.path.join(files.dir, "bounded")
    with servers.Nginx(files.root) as web2:
        bound = 3 * BLOCK
        expect_bytes(files, "big.bin", web2.url + "/big.bin", [(0, size)],
                     ["--whole", "100000", "--cache-dir", bounded, "--cache-size", str(bound)])
        used = sum(os.path.getsize(os.path.join(bounded, "blocks", f)) for f in os.listdir(os.path.join(bounded, "blocks")))
        check(0 < used <= bound, "disk cache holds %d bytes, bound %d" % (used, bound))


def case_local_copy(files):
    with servers.Nginx(files.root) as web:
        url = web.url + "/big.bin"
        expect_error(url, ["--local-copy"], [], ["no cache_dir"])
        cache = os.path.join(files.dir, "cache")
        expect_error(url, ["--local-copy", "--cache-dir", cache, "--cache-size", "1000000"], [], ["exceed cache_size"])
        code, out, err, _ = fetch(url, ["--local-copy", "--cache-dir", cache])
        check(code == 0, "local_copy: " + err)
        path = out.split("local_copy ", 1)[1].strip()
        with open(path, "rb") as f:
            copy = f.read()
        data = files.data["big.bin"]
        check(copy[:len(data)] == data, "the local copy equals the file")
        # Then its record (remote/cache_entry.hpp): magic, its own name, length, SHA-256.
        record = copy[len(data):]
        check(len(record) == 120 and record[:16] == b"ncafs-entry-v1\n\0", "the copy ends with its record")
        check(record[16:80].decode() == os.path.basename(path), "the record names the entry")
        check(int.from_bytes(record[80:88], "big") == len(data), "the record gives the length")
        check(record[88:] == hashlib.sha256(data).digest(), "the record holds the SHA-256 of the bytes")


CASES = {"nginx": case_nginx, "merge": case_merge, "s3": case_s3, "faults": case_faults, "etag": case_etag,
         "disk_cache": case_disk_cache, "local_copy": case_local_copy, "tls": case_tls, "threads": case_threads}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        fail("usage: test_remote.py {%s}" % "|".join(CASES))
    why = servers.skip_reason_nginx()
    if why:
        skip(why)
    files = Files()
    try:
        CASES[sys.argv[1]](files)
    finally:
        files.cleanup()
    print("PASS " + sys.argv[1])


if __name__ == "__main__":
    main()
