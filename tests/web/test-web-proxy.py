#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-web-proxy.py RAILMON DASHBOARD_MD - `railmon serve` behind a real nginx
(Debian's nginx-light) as the README's reverse-proxy example deploys it:
TLS terminated by nginx with a certificate made here by openssl, serve on
loopback with --token-file and --per-address 128, the proxy sending
X-Forwarded-Proto.  The nginx configuration is the README's block (read
from docs/dashboard.md, the README's before issue 28), with only paths, ports and the test's timeout changed, so
the documented deployment is the one tested:

- over TLS through nginx: /?token= sets the token cookie with Secure (the
  same request straight to serve over plain HTTP: without), the cookie
  then opens the API; no token: 401;
- slowloris: 40 TLS connections from another address trickling a header
  line a second are closed by nginx's client_header_timeout (3 s here)
  and never reach serve (its own header-timeout count stays 0), while a
  request with the token is answered meanwhile;
- limit_conn: the live stream (/api/live, a long request) 16 times from
  one address is let through, the 17th refused by nginx with a 503.

Every server started here is stopped on every exit path.
"""
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

RAILMON, README = sys.argv[1:3]
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
from railmon_test import free_port, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402
from pg import Postgres  # noqa: E402

TOKEN = "proxy-token-0123456789"
NGINX = "/usr/sbin/nginx"


def check(cond, what, *context):
    if not cond:
        for c in context:
            sys.stderr.write(str(c) + "\n")
        raise AssertionError(what)
    print("ok: " + what)


def readme_nginx():
    """The README's nginx example, as documented."""
    text = open(README).read()
    m = re.search(r"```nginx\n(.*?)```", text, re.S)
    check(m is not None, "the README has its nginx example")
    return m.group(1)


def nginx_conf(tmp, port, serve_port):
    conf = readme_nginx()
    for old, new in (("listen 443 ssl;", "listen 127.0.0.1:%d ssl;" % port),
                     ("/etc/ssl/depot/dashboard.pem", os.path.join(tmp, "cert.pem")),
                     ("/etc/ssl/depot/dashboard.key", os.path.join(tmp, "key.pem")),
                     ("client_header_timeout 10s;", "client_header_timeout 3s;"),
                     ("http://127.0.0.1:8080", "http://127.0.0.1:%d" % serve_port)):
        check(old in conf, "the README's example has %r" % old)
        conf = conf.replace(old, new)
    # what a whole nginx.conf has around the README's http-level block: a foreground master, paths of its own
    return ("daemon off;\nuser root;\npid %s/nginx.pid;\nerror_log %s/error.log;\nevents { worker_connections 512; }\n"
            "http {\naccess_log %s/access.log;\nclient_body_temp_path %s/body;\nproxy_temp_path %s/proxy;\n"
            "fastcgi_temp_path %s/fcgi;\nuwsgi_temp_path %s/uwsgi;\nscgi_temp_path %s/scgi;\n%s}\n"
            % ((tmp,) * 8 + (conf,)))


def tls_context(tmp):
    ctx = ssl.create_default_context(cafile=os.path.join(tmp, "cert.pem"))
    ctx.check_hostname = False  # the certificate names localhost; the test connects to 127.0.0.1
    return ctx


def get(port, path, ctx=None, headers=None, source="127.0.0.1", timeout=30):
    if ctx:
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout, source_address=(source, 0))
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read(), r
    finally:
        c.close()


def test_tls_cookie(port, serve_port, ctx):
    st, _, r = get(port, "/?token=" + TOKEN, ctx)
    cookie = r.getheader("Set-Cookie") or ""
    check(st == 200 and "railmon_token=" in cookie and "; Secure" in cookie,
          "through nginx over TLS: the token cookie is Secure (X-Forwarded-Proto)", st, cookie)
    st, _, r = get(serve_port, "/?token=" + TOKEN)
    check(st == 200 and "; Secure" not in (r.getheader("Set-Cookie") or ""),
          "straight to serve over plain HTTP: not Secure", r.getheader("Set-Cookie"))
    st, body, _ = get(port, "/api/vehicles", ctx, {"Cookie": cookie.split(";")[0]})
    check(st == 200 and b'"vehicles"' in body, "the cookie opens the API through the proxy", st, body[:200])
    st, _, _ = get(port, "/api/vehicles", ctx)
    check(st == 401, "no token through the proxy: 401", st)


def test_slowloris(port, ctx):
    closed, opened = [], []
    mu = threading.Lock()

    def slow(k):
        raw = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.2", 0))
        s = ctx.wrap_socket(raw)
        t0 = time.monotonic()
        with mu:
            opened.append(k)
        try:
            s.sendall(b"GET /api/vehicles HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while True:
                s.sendall(b"X-Slow: %d\r\n" % k)
                s.settimeout(1)
                try:
                    s.recv(4096)
                except socket.timeout:
                    continue  # nothing from nginx in the second: trickle on
                break  # nginx answered (408) or closed
        except OSError:
            pass
        with mu:
            closed.append(time.monotonic() - t0)
        s.close()

    threads = [threading.Thread(target=slow, args=(k,), daemon=True) for k in range(40)]
    for t in threads:
        t.start()
    wait_for("40 slow connections open", lambda: len(opened) == 40, 30)
    t0 = time.monotonic()
    st, body, _ = get(port, "/api/vehicles", ctx, {"Authorization": "Bearer " + TOKEN})
    dt = time.monotonic() - t0
    check(st == 200 and len(closed) < 40, "a request with the token answered (%.3f s) while 40 slow connections "
          "trickle headers" % dt, st, body[:200], len(closed))
    wait_for("every slow connection closed", lambda: len(closed) == 40, 30)
    check(max(closed) < 15, "closed by nginx's client_header_timeout (3 s), the slowest after %.1f s" % max(closed),
          sorted(closed)[-3:])


def test_limit_conn(port, ctx):
    streams = []
    try:
        for k in range(16):
            c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
            c.request("GET", "/api/live", headers={"Authorization": "Bearer " + TOKEN})
            r = c.getresponse()
            check(r.status == 200, "live stream %d of 16 from one address let through" % (k + 1), r.status)
            streams.append(c)
        st, _, _ = get(port, "/api/live", ctx, {"Authorization": "Bearer " + TOKEN})
        check(st == 503, "the 17th from that address refused by nginx's limit_conn (503)", st)
    finally:
        for c in streams:
            c.close()


def main():
    tmp = tempfile.mkdtemp(prefix="web-proxy-")
    pg = Postgres()
    srv = nginx = None
    try:
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        pg.psql("INSERT INTO vehicles (name) VALUES ('emu1')")
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                            "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                            "-keyout", os.path.join(tmp, "key.pem"), "-out", os.path.join(tmp, "cert.pem")],
                           capture_output=True, text=True)
        check(r.returncode == 0, "a self-signed certificate", r.stderr)
        path = os.path.join(tmp, "token")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(TOKEN + "\n")
        # behind a proxy every client comes from its address: the proxy limits each client (README)
        srv = start_peer([RAILMON, "serve", "--db", pg.url, "--listen", "127.0.0.1:0", "--token-file", path,
                          "--per-address", "128"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = srv.stdout.readline()
        check("port " in line, "railmon serve started", line)
        serve_port = int(line.split("port ")[1].split()[0])
        port = free_port()
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(tmp, port, serve_port))
        r = subprocess.run([NGINX, "-t", "-c", conf], capture_output=True, text=True)
        check(r.returncode == 0, "nginx takes the README's configuration", r.stderr)
        nginx = start_peer([NGINX, "-c", conf], stderr=subprocess.PIPE, text=True)
        ctx = tls_context(tmp)

        def up():
            try:
                return get(port, "/api/vehicles", ctx, timeout=5)[0] == 401
            except OSError:
                return False
        wait_for("nginx listening", up, 30)
        test_tls_cookie(port, serve_port, ctx)
        test_slowloris(port, ctx)
        test_limit_conn(port, ctx)
        stop_peer(nginx)
        nginx = None
        stop_peer(srv)
        err = srv.stderr.read()
        srv = None
        check(" 0 connections closed without a whole request within the header timeout" in err,
              "no slow connection reached serve", err)
    finally:
        if nginx:
            stop_peer(nginx)
        if srv:
            stop_peer(srv)
        stop_peers()
        pg.fini()
        shutil.rmtree(tmp, ignore_errors=True)
    print("web-proxy: all checks passed")


main()
