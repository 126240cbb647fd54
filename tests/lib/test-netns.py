#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""railmon_test.netns_pair (root): the two namespaces are joined (a UDP
datagram from a's address reaches a socket in b), and they are gone after
the block however it was left: normally, by an exception, and by SIGTERM
(meson's timeout) while the block runs in another process; namespaces of
the tag left by a process that is gone are removed on entering, a live
one's are not."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from railmon_test import netns_exec, netns_pair  # noqa: E402

PY = "/usr/bin/python3"
TAG = "rmtn"


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout
    return {x.split(" ")[0] for x in out.splitlines()}


def check(what, ok):
    print(("ok " if ok else "FAIL ") + what)
    return 0 if ok else 1


def joined(net):
    """A datagram from a's address to b's, received in b."""
    rx = subprocess.Popen(netns_exec(net.b, PY, "-c", (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.bind(('%s', 40999))\nprint('ready', flush=True)\ns.settimeout(30)\n"
        "print(s.recvfrom(100)[1][0])") % net.addr_b), stdout=subprocess.PIPE, text=True)
    if rx.stdout.readline().strip() != "ready":
        return False
    subprocess.run(netns_exec(net.a, PY, "-c", (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.sendto(b'x', ('%s', 40999))") % net.addr_b), check=True)
    src = rx.stdout.readline().strip()
    return rx.wait(timeout=30) == 0 and src == net.addr_a


def main():
    if os.geteuid() != 0:
        print("needs root (network namespaces; CI runs as root)")
        return 77
    bad = 0
    with netns_pair(TAG) as net:
        bad += check("both namespaces made: %s %s" % (net.a, net.b), {net.a, net.b} <= namespaces())
        bad += check("a datagram from %s reaches %s in %s" % (net.addr_a, net.addr_b, net.b), joined(net))
        names = (net.a, net.b)
    bad += check("removed after the block", not set(names) & namespaces())

    try:
        with netns_pair(TAG) as net:
            names = (net.a, net.b)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    bad += check("removed after an exception", not set(names) & namespaces())

    # SIGTERM while the block waits (the child says when it is inside)
    child = subprocess.Popen([PY, "-c", (
        "import sys\nsys.path.insert(0, %r)\nfrom railmon_test import netns_pair\n"
        "with netns_pair(%r) as net:\n    print(net.a, net.b, flush=True)\n    sys.stdin.read()\n")
        % (os.path.dirname(os.path.abspath(__file__)), TAG)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    names = child.stdout.readline().split()
    inside = len(names) == 2 and set(names) <= namespaces()
    child.terminate()
    code = child.wait(timeout=30)
    bad += check("SIGTERM inside the block: exit %d, removed" % code,
                 inside and code == 128 + 15 and not set(names) & namespaces())

    # left by a SIGKILLed run (its pid gone) and by a live one
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = subprocess.Popen(["cat"], stdin=subprocess.PIPE)
    stale, other = "%sa%d" % (TAG, gone.pid), "%sb%d" % (TAG, live.pid)
    for ns in (stale, other):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        with netns_pair(TAG):
            left = namespaces()
        bad += check("a gone run's namespace removed, a live one's kept",
                     stale not in left and other in left)
    finally:
        for ns in (stale, other):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        live.stdin.close()
        live.wait()
    print("PASS" if not bad else "FAIL")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
