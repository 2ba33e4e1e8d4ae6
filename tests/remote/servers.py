"""Real servers on 127.0.0.1 for the remote tests, started and stopped here.

Context managers (each yields itself; .url is where clients connect):
  Nginx(root, tls=False, locations="", user=None)
                                  Debian's nginx serving ROOT with byte ranges,
                                  ETag, Last-Modified and If-Match (412); with
                                  tls, HTTPS and HTTP/2 with a self-signed
                                  certificate for 127.0.0.1 (.ca_file);
                                  `locations`: more nginx location blocks
                                  (redirects); user: a master process (root)
                                  whose worker runs as that user, as
                                  installed nginx does; .requests(): the
                                  access log.
  S3rver(dir)                     the npm package s3rver (pinned version,
                                  installed on first use under NCAFS_NPM_DIR).
  SigV4Proxy(upstream, key, sec)  checks each request's AWS SigV4 signature
                                  with botocore's signer, 403 on mismatch,
                                  else forwards to upstream.
  FaultProxy(upstream, plan)      forwards, but misbehaves as the plan says.

skip_reason_nginx() / skip_reason_s3rver() say why one cannot run (None when
it can): tests print "SKIPPED: reason" and exit 77.
"""
import collections
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    """A port nobody listens on right now (bind to 0 and release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, process, what, timeout=30.0):
    """Waits until 127.0.0.1:port accepts; raises when process died or timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("%s exited with %d before listening" % (what, process.returncode))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("%s did not listen on port %d within %d s" % (what, port, timeout))


def stop_process(process):
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def skip_reason_nginx():
    if not os.access(NGINX, os.X_OK):
        return "nginx is not installed (Debian package nginx-light or nginx)"
    return None


NGINX_CONF = """
daemon off;
{processes}
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 256; }}
http {{
  log_format proto '$server_protocol $status $request auth=$http_authorization';
  access_log {work}/access.log proto;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port}{tls};
    root {root};
    location / {{ }}
    {locations}
  }}
}}
"""


class Nginx:
    """nginx serving `root` on a free port; ranges, ETag and If-Match are
    nginx's own static-file behaviour. One process (master_process off), so
    it can read a root-only temp dir when run as root; with `user`, a master
    and a worker running as that user."""

    def __init__(self, root, tls=False, locations="", user=None):
        self.root = os.path.abspath(root)
        self.tls = tls
        self.locations = locations
        self.processes = "user %s;" % user if user else "master_process off;"
        self.ca_file = None
        self.work = None
        self.process = None
        self.port = None

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def _certificate(self):
        """A self-signed certificate for IP 127.0.0.1: its own CA file."""
        self.ca_file = os.path.join(self.work, "cert.pem")
        key = os.path.join(self.work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                        "-out", self.ca_file], check=True, capture_output=True)
        return " ssl http2;\n    ssl_certificate %s;\n    ssl_certificate_key %s" % (self.ca_file, key)

    def requests(self):
        """Every request so far: "PROTOCOL STATUS METHOD PATH PROTOCOL auth=AUTHORIZATION"."""
        with open(os.path.join(self.work, "access.log")) as f:
            return [line.strip() for line in f if line.strip()]

    def protocols(self):
        """The protocol of every request so far ("HTTP/2.0", "HTTP/1.1")."""
        return [line.split(" ", 1)[0] for line in self.requests()]

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="ncafs-nginx-")
        tls = self._certificate() if self.tls else ""
        for attempt in range(5):  # another process may take the free port first
            self.port = free_port()
            conf = os.path.join(self.work, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(work=self.work, port=self.port, root=self.root, tls=tls,
                                          processes=self.processes, locations=self.locations))
            self.log = open(os.path.join(self.work, "stderr.log"), "w")
            self.process = subprocess.Popen([NGINX, "-c", conf, "-p", self.work, "-e", os.path.join(self.work, "error.log")],
                                            stdout=self.log, stderr=self.log)
            try:
                wait_listening(self.port, self.process, "nginx")
                return self
            except RuntimeError:
                stop_process(self.process)
                if attempt == 4:
                    self._cleanup()
                    raise
        return self

    def stop(self):
        """Stops the server early (to test what clients do without it)."""
        stop_process(self.process)

    def __exit__(self, *exc):
        stop_process(self.process)
        self._cleanup()
        return False

    def log_text(self):
        try:
            with open(os.path.join(self.work, "error.log")) as f:
                return f.read()
        except OSError:
            return ""

    def _cleanup(self):
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None


# ---------------------------------------------------------------- s3rver

S3RVER_VERSION = "3.7.1"  # pinned: its behaviour is what the tests expect
S3RVER_KEY = S3RVER_SECRET = "S3RVER"  # s3rver's built-in account


def npm_dir():
    """Where the pinned s3rver is installed (under the build tree when run by ctest)."""
    return os.environ.get("NCAFS_NPM_DIR") or os.path.join(tempfile.gettempdir(), "ncafs-npm")


def s3rver_bin():
    return os.path.join(npm_dir(), "node_modules", ".bin", "s3rver")


def npm_install_once(prefix, spec, installed):
    """npm install --prefix PREFIX SPEC, unless an earlier install finished
    (its stamp file) and installed() finds it; None or why it failed. One
    process installs at a time (a lock file in PREFIX): tests running beside
    wait for it instead of starting a program npm has half unpacked."""
    stamp = os.path.join(prefix, ".installed-" + spec.replace("/", "_"))
    if os.path.exists(stamp) and installed():
        return None
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "node and npm are not installed (Debian packages nodejs, npm)"
    os.makedirs(prefix, exist_ok=True)
    with open(os.path.join(prefix, ".install-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(stamp) and installed():
            return None
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, spec],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not installed():
            return "npm install %s failed: %s" % (spec, done.stderr.strip()[-500:])
        open(stamp, "w").close()
    return None


def install_s3rver():
    """The pinned s3rver under NPM_DIR; None or why it could not be installed."""
    return npm_install_once(npm_dir(), "s3rver@" + S3RVER_VERSION, lambda: os.access(s3rver_bin(), os.X_OK))


def skip_reason_s3rver():
    try:
        import botocore  # noqa: F401
    except ImportError:
        return "python3-botocore is not installed"
    return install_s3rver()


def botocore_client(endpoint, access_key=S3RVER_KEY, secret=S3RVER_SECRET, region="us-east-1"):
    import botocore.config
    import botocore.session
    session = botocore.session.get_session()
    return session.create_client("s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
                                 aws_secret_access_key=secret,
                                 config=botocore.config.Config(s3={"addressing_style": "path"}))


class S3rver:
    """s3rver (pinned npm package) on a free port with its data in `directory`;
    put() stores an object through its S3 API (botocore)."""

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)
        self.process = None
        self.port = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        why = install_s3rver()
        if why:
            raise RuntimeError(why)
        os.makedirs(self.directory, exist_ok=True)
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([s3rver_bin(), "-d", self.directory, "-a", "127.0.0.1", "-p", str(self.port),
                                         "--silent", "--no-vhost-buckets"], stdout=self.log, stderr=self.log)
        try:
            wait_listening(self.port, self.process, "s3rver", timeout=60)
        except RuntimeError as e:
            stop_process(self.process)
            self.log.seek(0)
            raise RuntimeError("%s; its output:\n%s" % (e, self.log.read().decode(errors="replace")[-2000:]))
        self.client = botocore_client(self.url)
        return self

    def put(self, bucket, key, data):
        try:
            self.client.create_bucket(Bucket=bucket)
        except self.client.exceptions.BucketAlreadyOwnedByYou:
            pass
        except Exception as e:  # s3rver answers BucketAlreadyExists for an existing one
            if "BucketAlready" not in str(e):
                raise
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def stop(self):
        stop_process(self.process)

    def __exit__(self, *exc):
        stop_process(self.process)
        return False


# ---------------------------------------------------------------- proxies

class _Proxy:
    """A threaded HTTP/1.1 (keep-alive) server on a free port whose handler
    calls self.handle(handler); forward() relays a request upstream."""

    def __init__(self, upstream):
        self.upstream = upstream.rstrip("/")
        self.server = None
        self.requests = []  # (method, path, headers) of every request seen

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        import http.server
        import threading
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                proxy.requests.append((self.command, self.path, dict(self.headers)))
                proxy.handle(self)

            do_HEAD = do_PUT = do_GET

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        return False

    def forward(self, handler, drop_headers=()):
        """(status, headers list, body) of the request sent upstream."""
        import http.client
        import urllib.parse
        target = urllib.parse.urlsplit(self.upstream)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in drop_headers}
        headers["Host"] = target.netloc
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            conn.request(handler.command, handler.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            return answer.status, [(k, v) for k, v in answer.getheaders()
                                   if k.lower() not in ("connection", "transfer-encoding", "keep-alive")], data
        finally:
            conn.close()

    @staticmethod
    def reply(handler, status, headers, body, send_body=True):
        handler.send_response(status)
        for k, v in headers:
            if k.lower() != "content-length":
                handler.send_header(k, v)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if send_body and handler.command != "HEAD":
            handler.wfile.write(body)


def s3_error(code, message):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>"
            % (code, message)).encode()


class SigV4Proxy(_Proxy):
    """Checks every request's AWS SigV4 signature by recomputing it with
    botocore's signer (S3SigV4Auth, same canonical request S3 builds: the
    signed headers as sent, the path as sent, the declared payload hash);
    403 SignatureDoesNotMatch / InvalidAccessKeyId / AccessDenied when it
    fails, else forwards the request (unsigned) to upstream."""

    def __init__(self, upstream, access_key, secret, region="us-east-1"):
        super().__init__(upstream)
        self.access_key, self.secret, self.region = access_key, secret, region
        self.rejected = 0

    def verdict(self, handler):
        """None when the signature is right, else (code, message)."""
        import re
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        auth = handler.headers.get("Authorization", "")
        m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, ?"
                         r"SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})", auth)
        if not m:
            return ("AccessDenied", "no AWS4-HMAC-SHA256 Authorization header")
        key, day, region, signed, signature = m.groups()
        if key != self.access_key:
            return ("InvalidAccessKeyId", "unknown access key " + key)
        if region != self.region:
            return ("AuthorizationHeaderMalformed", "region %s, expected %s" % (region, self.region))
        stamp = handler.headers.get("x-amz-date", "")
        if not stamp.startswith(day) or "x-amz-date" not in signed.split(";") or "host" not in signed.split(";"):
            return ("AccessDenied", "x-amz-date and host must be signed")
        headers = {h: handler.headers.get(h, "") for h in signed.split(";")}
        request = AWSRequest(method=handler.command, url="http://" + handler.headers.get("Host", "") + handler.path,
                             headers=headers)
        request.context["timestamp"] = stamp
        signer = S3SigV4Auth(Credentials(self.access_key, self.secret), "s3", self.region)
        if "x-amz-content-sha256" not in headers:
            return ("InvalidRequest", "x-amz-content-sha256 must be signed")
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if expected != signature:
            return ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided")
        return None

    def handle(self, handler):
        problem = self.verdict(handler)
        if problem:
            self.rejected += 1
            self.reply(handler, 403, [("Content-Type", "application/xml")], s3_error(*problem))
            return
        status, headers, body = self.forward(handler, drop_headers=("authorization",))
        self.reply(handler, status, headers, body)


class FaultProxy(_Proxy):
    """Forwards to upstream, misbehaving on successive requests as `plan`
    says (then behaving). Actions:
      "ok"            forward unchanged
      ("delay", s)    wait s seconds, then forward
      503 / 429 / 5xx-like int   answer that status
      "drop"          close the connection without an answer
      "truncate"      announce the whole body, send half, close
      "wrong_range"   shift the Content-Range by one byte (body unchanged)
      "no_range"      forward without the Range header (a 200 with everything)
      "change_etag"   from now on the object "was replaced": every answer
                      carries a new ETag and If-Match on the old one gets 412
    """

    def __init__(self, upstream, plan):
        super().__init__(upstream)
        self.plan = collections.deque(plan)  # popped from the left per request: O(1), however long
        self.changed = False
        import threading
        self.lock = threading.Lock()

    def next_action(self):
        with self.lock:
            return self.plan.popleft() if self.plan else "ok"

    def handle(self, handler):
        action = self.next_action()
        if action == "change_etag":
            self.changed, action = True, "ok"
        if isinstance(action, int):
            self.reply(handler, action, [("Retry-After", "0")], b"fault injected")
            return
        if action == "drop":
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if isinstance(action, tuple) and action[0] == "delay":
            time.sleep(action[1])
        if self.changed and handler.headers.get("If-Match") not in (None, '"replaced"'):
            self.reply(handler, 412, [], b"precondition failed")
            return
        status, headers, body = self.forward(handler, drop_headers=("range",) if action == "no_range" else ())
        if self.changed:
            headers = [(k, '"replaced"' if k.lower() == "etag" else v) for k, v in headers]
        if action == "wrong_range":
            headers = [(k, self.shifted(v) if k.lower() == "content-range" else v) for k, v in headers]
        if action == "truncate":
            self.reply(handler, status, headers, body, send_body=False)
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        self.reply(handler, status, headers, body)

    @staticmethod
    def shifted(content_range):
        import re
        m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range)
        if not m:
            return content_range
        first, last, total = map(int, m.groups())
        return "bytes %d-%d/%d" % (first + 1, last + 1, total + 1)
