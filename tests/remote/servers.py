"""Real servers on 127.0.0.1 for the remote tests, started and stopped here.

Context managers (each yields itself; .url is where clients connect):
  Nginx(root)                     Debian's nginx serving ROOT with byte ranges,
                                  ETag, Last-Modified and If-Match (412).
  S3rver(dir)                     the npm package s3rver (pinned version,
                                  installed on first use under NCAFS_NPM_DIR).
  SigV4Proxy(upstream, key, sec)  checks each request's AWS SigV4 signature
                                  with botocore's signer, 403 on mismatch,
                                  else forwards to upstream.
  FaultProxy(upstream, plan)      forwards, but misbehaves as the plan says.

skip_reason_nginx() / skip_reason_s3rver() say why one cannot run (None when
it can): tests print "SKIPPED: reason" and exit 77.
"""
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
master_process off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log {work}/access.log;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location / {{ }}
  }}
}}
"""


class Nginx:
    """nginx serving `root` on a free port; ranges, ETag and If-Match are
    nginx's own static-file behaviour. One process (master_process off), so
    it can read a root-only temp dir when run as root."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.work = None
        self.process = None
        self.port = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="ncafs-nginx-")
        for attempt in range(5):  # another process may take the free port first
            self.port = free_port()
            conf = os.path.join(self.work, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(work=self.work, port=self.port, root=self.root))
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
