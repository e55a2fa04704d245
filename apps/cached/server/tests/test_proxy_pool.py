"""tsync-cached scaled out as memcached is: a client-side sharded pool behind twemproxy.

Debian's nutcracker (twemproxy 0.5) runs in front of two tsync-cached instances with
ketama distribution and auto_eject_hosts: keys spread over both, a multi-get is split
across them and joined, and when one instance is killed the proxy ejects it and the pool
keeps answering from the survivor. Every process binds 127.0.0.1 and is stopped at the
end; the instances that were not killed must exit 0 on SIGTERM.

Ports: the instances listen on ports the kernel picks (-p -1, reported through
MEMCACHED_PORT_FILENAME). nutcracker takes only fixed ports, so it gets free-looking
ones and is started again on others if they were taken meanwhile; it counts as started
only once its own sockets listen on both (Linux /proc), never because something answers
there.
"""
import os
import re
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
# Generous limits that only turn a hang into a message; nothing here is timed.
HANG_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_instance(tmp_path, name, log):
    """tsync-cached on a port the kernel picks; returns (process, port)."""
    portfile = tmp_path / ("port-" + name)
    p = subprocess.Popen([SERVER, "-l", "127.0.0.1", "-p", "-1", "-t", "2", "-m", "16"],
                         stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, MEMCACHED_PORT_FILENAME=str(portfile)))
    deadline = time.monotonic() + HANG_S
    while not portfile.exists():
        if p.poll() is not None:
            log.seek(0)
            raise RuntimeError("tsync-cached exited %d: %s" % (p.returncode, log.read()))
        assert time.monotonic() < deadline, "tsync-cached %s never listened" % name
        time.sleep(0.01)
    return p, int(re.match(r"TCP INET6?: (\d+)", portfile.read_text()).group(1))


def listening_ports(pid):
    """TCP ports process pid has listening sockets on (its descriptors' socket inodes
    matched against /proc/net/tcp{,6} LISTEN entries)."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return set()
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and fields[9] in inodes:  # TCP_LISTEN
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def start_proxy(tmp_path, backends, eject):
    """nutcracker in front of backends {name: port}; returns (process, proxy port)."""
    for attempt in range(20):
        proxy_port, stats_port = free_port(), free_port()
        conf = tmp_path / "nutcracker.yml"
        # timeout: far beyond any reply of a loaded sanitizer build - only a dead
        # instance (refused or reset at once) is a failure; server_retry_timeout: an
        # ejected instance stays out for the test (a retry of a dead one fails requests)
        conf.write_text(
            "pool:\n"
            "  listen: 127.0.0.1:%d\n"
            "  hash: murmur\n"
            "  distribution: ketama\n"
            "  timeout: 30000\n"
            "  preconnect: true\n"
            "  auto_eject_hosts: %s\n"
            "  server_retry_timeout: 600000\n"
            "  server_failure_limit: 1\n"
            "  servers:\n" % (proxy_port, "true" if eject else "false") +
            "".join("   - 127.0.0.1:%d:1 %s\n" % (port, name)
                    for name, port in sorted(backends.items())))
        chk = subprocess.run([NUTCRACKER, "-t", "-c", str(conf)], capture_output=True,
                             text=True)
        assert chk.returncode == 0, chk.stdout + chk.stderr
        nlog = tmp_path / ("nutcracker-%d.log" % attempt)
        proxy = subprocess.Popen([NUTCRACKER, "-c", str(conf), "-s", str(stats_port), "-a",
                                  "127.0.0.1", "-o", str(nlog), "-v", "4",
                                  "-p", str(tmp_path / "nutcracker.pid")])
        deadline = time.monotonic() + HANG_S
        while proxy.poll() is None and \
                not {proxy_port, stats_port} <= listening_ports(proxy.pid):
            assert time.monotonic() < deadline, "nutcracker never listened"
            time.sleep(0.01)
        if proxy.poll() is None:
            return proxy, proxy_port
        # it exited: a port was taken between free_port() and its bind - others
    raise RuntimeError("nutcracker did not start: %s" % nlog.read_text()[-2000:])


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), HANG_S)
        self.s.settimeout(HANG_S)
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


def make_pool(tmp_path, eject):
    if not SERVER:
        pytest.skip("TSYNC_CACHED not set")
    if not NUTCRACKER:
        pytest.skip("nutcracker (twemproxy) not installed: apt-get install nutcracker")
    procs, logs, ports = {}, [], {}
    proxy = None
    try:
        for name in ("a", "b"):
            log = tempfile.TemporaryFile()
            logs.append(log)
            procs[name], ports[name] = start_instance(tmp_path, name, log)
        proxy, proxy_port = start_proxy(tmp_path, ports, eject)
        yield {"proxy": proxy_port, "ports": ports, "procs": procs}
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(HANG_S)
        for name, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                rc = p.wait(HANG_S)
                assert rc == 0, "tsync-cached %s exited %d" % (name, rc)
        for log in logs:
            log.close()


@pytest.fixture
def pool(tmp_path):
    """The pool, no ejection: a slow reply is waited for, never rerouted."""
    yield from make_pool(tmp_path, eject=False)


@pytest.fixture
def eject_pool(tmp_path):
    """The pool with auto_eject_hosts: an instance that fails once is ejected."""
    yield from make_pool(tmp_path, eject=True)


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


def test_ejection_keeps_the_pool_answering(eject_pool):
    pool = eject_pool
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
    deadline = time.monotonic() + HANG_S
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
        assert time.monotonic() < deadline, "the pool did not recover: %r" % r
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
