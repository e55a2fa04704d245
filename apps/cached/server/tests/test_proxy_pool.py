"""tsync-cached scaled out as memcached is: a client-side sharded pool behind twemproxy.

Debian's nutcracker (twemproxy 0.5) runs in front of two tsync-cached instances with
ketama distribution and auto_eject_hosts: keys spread over both, a multi-get is split
across them and joined, and when one instance is killed the proxy ejects it and the pool
keeps answering from the survivor. Every process binds 127.0.0.1 on a free port and is
stopped at the end; the instances that were not killed must exit 0 on SIGTERM.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SERVER = os.environ.get("TSYNC_CACHED", "")
NUTCRACKER = shutil.which("nutcracker") or (
    "/usr/sbin/nutcracker" if os.path.exists("/usr/sbin/nutcracker") else None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("process exited with %d" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nothing listens on %d" % port)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), 5)
        self.s.settimeout(5)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed")
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def cmd(self, data):
        self.s.sendall(data)
        return self.line()

    def get_multi(self, keys):
        self.s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        got = {}
        while True:
            ln = self.line()
            if ln == b"END":
                return got
            _, k, _flags, n = ln.split()
            got[k] = self.exact(int(n) + 2)[:-2]

    def curr_items(self):
        self.s.sendall(b"stats\r\n")
        n = None
        while True:
            ln = self.line()
            if ln == b"END":
                return n
            if ln.startswith(b"STAT curr_items "):
                n = int(ln.split()[2])

    def close(self):
        self.s.close()


@pytest.fixture
def pool(tmp_path):
    if not SERVER:
        pytest.skip("TSYNC_CACHED not set")
    if not NUTCRACKER:
        pytest.skip("nutcracker (twemproxy) not installed: apt-get install nutcracker")
    procs, logs = {}, []
    ports = {}
    for name in ("a", "b"):
        port = free_port()
        log = tempfile.TemporaryFile()
        logs.append(log)
        p = subprocess.Popen([SERVER, "-l", "127.0.0.1", "-p", str(port), "-t", "2",
                              "-m", "16"], stdout=log, stderr=subprocess.STDOUT)
        wait_port(port, p)
        procs[name], ports[name] = p, port
    proxy_port, stats_port = free_port(), free_port()
    conf = tmp_path / "nutcracker.yml"
    conf.write_text(
        "pool:\n"
        "  listen: 127.0.0.1:%d\n"
        "  hash: murmur\n"
        "  distribution: ketama\n"
        "  timeout: 400\n"
        "  preconnect: true\n"
        "  auto_eject_hosts: true\n"
        "  server_retry_timeout: 2000\n"
        "  server_failure_limit: 1\n"
        "  servers:\n"
        "   - 127.0.0.1:%d:1 a\n"
        "   - 127.0.0.1:%d:1 b\n" % (proxy_port, ports["a"], ports["b"]))
    chk = subprocess.run([NUTCRACKER, "-t", "-c", str(conf)], capture_output=True, text=True)
    assert chk.returncode == 0, chk.stdout + chk.stderr
    nlog = tmp_path / "nutcracker.log"
    proxy = subprocess.Popen([NUTCRACKER, "-c", str(conf), "-s", str(stats_port), "-a",
                              "127.0.0.1", "-o", str(nlog), "-v", "4",
                              "-p", str(tmp_path / "nutcracker.pid")])
    wait_port(proxy_port, proxy)
    env = {"proxy": proxy_port, "ports": ports, "procs": procs}
    try:
        yield env
    finally:
        proxy.terminate()
        proxy.wait(10)
        for name, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                rc = p.wait(20)
                assert rc == 0, "tsync-cached %s exited %d" % (name, rc)
        for log in logs:
            log.close()


def test_keys_spread_over_both_and_read_back(pool):
    px = Conn(pool["proxy"])
    keys = [b"pool:%d" % i for i in range(200)]
    for k in keys:
        assert px.cmd(b"set %s 0 0 %d\r\nv-%s\r\n" % (k, len(k) + 2, k)) == b"STORED"
    for k in keys:
        assert px.get_multi([k]) == {k: b"v-" + k}
    a, b = Conn(pool["ports"]["a"]), Conn(pool["ports"]["b"])
    on_a, on_b = a.get_multi(keys), b.get_multi(keys)
    assert on_a and on_b, "ketama put every key on one instance"
    assert not set(on_a) & set(on_b), "a key on both instances"
    assert set(on_a) | set(on_b) == set(keys)
    assert a.curr_items() == len(on_a) and b.curr_items() == len(on_b)
    for c in (px, a, b):
        c.close()


def test_multiget_across_instances(pool):
    px = Conn(pool["proxy"])
    keys = [b"mg:%d" % i for i in range(64)]
    for k in keys:
        assert px.cmd(b"set %s 7 0 3\r\nabc\r\n" % k) == b"STORED"
    a = Conn(pool["ports"]["a"])
    assert 0 < len(a.get_multi(keys)) < len(keys), "the multi-get must span both"
    got = px.get_multi(keys + [b"mg:missing1", b"mg:missing2"])
    assert got == {k: b"abc" for k in keys}
    px.close()
    a.close()


def test_commands_through_the_proxy(pool):
    px = Conn(pool["proxy"])
    assert px.cmd(b"set c:1 0 0 2\r\n10\r\n") == b"STORED"
    assert px.cmd(b"add c:1 0 0 1\r\nx\r\n") == b"NOT_STORED"
    assert px.cmd(b"replace c:1 0 0 2\r\n20\r\n") == b"STORED"
    assert px.cmd(b"append c:1 0 0 1\r\n0\r\n") == b"STORED"
    assert px.cmd(b"incr c:1 5\r\n") == b"205"
    assert px.cmd(b"decr c:1 10\r\n") == b"195"
    assert px.cmd(b"prepend c:1 0 0 1\r\n1\r\n") == b"STORED"
    assert px.get_multi([b"c:1"]) == {b"c:1": b"1195"}
    assert px.cmd(b"delete c:1\r\n") == b"DELETED"
    assert px.cmd(b"delete c:1\r\n") == b"NOT_FOUND"
    assert px.cmd(b"incr c:1 1\r\n") == b"NOT_FOUND"
    px.close()


def test_ejection_keeps_the_pool_answering(pool):
    px = Conn(pool["proxy"])
    keys = [b"ej:%d" % i for i in range(100)]
    for k in keys:
        assert px.cmd(b"set %s 0 0 1\r\nx\r\n" % k) == b"STORED"
    b = Conn(pool["ports"]["b"])
    on_b = set(b.get_multi(keys))
    b.close()
    survivors = [k for k in keys if k not in on_b]
    assert on_b and survivors, (len(on_b), len(survivors))
    pool["procs"]["b"].kill()
    pool["procs"]["b"].wait()
    # the proxy ejects b after its first failure; until then a request may fail
    deadline = time.time() + 10
    new = [b"after:%d" % i for i in range(100)]
    i = 0
    while i < len(new):
        try:
            r = px.cmd(b"set %s 0 0 2\r\nok\r\n" % new[i])
        except (ConnectionError, socket.timeout, OSError):
            px.close()
            px = Conn(pool["proxy"])
            r = None
        if r == b"STORED":
            i += 1
            continue
        assert time.time() < deadline, "the pool did not recover: %r" % r
        time.sleep(0.05)
    a = Conn(pool["ports"]["a"])
    before = a.curr_items()
    assert before >= len(survivors) + len(new)
    # every key set after the ejection lives on the survivor, and reads through the proxy
    assert a.get_multi(new) == {k: b"ok" for k in new}
    assert px.get_multi(new) == {k: b"ok" for k in new}
    assert px.get_multi(survivors) == {k: b"x" for k in survivors}
    a.close()
    px.close()
