#!/usr/bin/env python3
"""Differential tester: the same seeded random requests to stock memcached 1.6.18 and to
tsync-cached, replies compared byte for byte.

Each sequence runs on a fresh connection to each server after `flush_all`; every request
is followed by `mn` and its reply read up to `MN` (a request that closes the connection
reads as <closed>, and the next one reconnects). Requests are valid and malformed
classic ASCII and meta commands over a small key space, so hits, misses, CAS conflicts,
non-numeric increments and every error path come up. Before comparing, what legitimately
differs is normalised: CAS values (numbered per server in order of appearance), the
version string, TTLs within a second, and the differences docs/cached.md lists as
intended (ALLOWED below: each normalisation that changed a reply is counted under its
name). Any other difference is printed with the seed, the sequence, the request and both
replies, and makes the exit status 1.

    mc_diff.py --tsync BIN [--memcached BIN] [--seed N] [--sequences N] [--requests N]
"""
import argparse
import base64
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

# class -> why the difference is intended (docs/cached.md, "Protocols")
ALLOWED = {
    "incr padding": "decr that shortens a number: memcached pads the stored value with "
                    "spaces in place, tsync stores the short number",
    "incr in place": "memcached updates a number in place (same item: its length with the "
                     "padding, its fetched bit); tsync publishes a new item, so later "
                     "commands on the key see the new length (mg s, an append after the "
                     "number, an incr of a number that padding and an append made "
                     "\"9 5\") and not fetched (mg h0)",
    "me fields": "me prints exp, cas and size of tsync's item (memcached also la, fetch, "
                 "cls and its own item size); the key, and ME against EN, are compared",
    "incr of 2^63 or more": "memcached's safe_strtoull looks for a '-' in a stored number of "
                            "2^63 or more with strchr, past the value's end into whatever the "
                            "item's memory holds next, so its answer (the number or "
                            "non-numeric) is not a function of the requests; tsync reads the "
                            "number",
}

NON_NUMERIC = b"CLIENT_ERROR cannot increment or decrement non-numeric value"


def big_number_quirk(toks, rm, rt):
    """incr/decr where memcached answered non-numeric and tsync a number whose previous
    value (recomputed from tsync's reply) was 2^63 or more (ALLOWED above)."""
    if len(toks) < 3 or toks[0] not in (b"incr", b"decr") or not rm.startswith(NON_NUMERIC):
        return False
    try:
        d, r = int(toks[2]), int(rt.split(b"\r\n")[0])
    except ValueError:
        return False
    if toks[0] == b"incr":
        return (r - d) % 2**64 >= 2**63
    return r + d >= 2**63 or (r == 0 and d >= 2**63)

KEYS = [b"k%d" % i for i in range(6)] + [b"n0", b"n1", b"a:b", b"x" * 250]


def start(argv):
    """Start a server on a port the kernel picks (-p -1): memcached, and tsync-cached
    after it, write "TCP INET: <port>" to $MEMCACHED_PORT_FILENAME once they listen, so
    no free port is guessed (another process may take a guessed one before the bind)."""
    # stderr to a file, never a pipe: after "verbosity 2" a server logs every command
    log = tempfile.TemporaryFile()
    tmp = tempfile.TemporaryDirectory()
    portfile = os.path.join(tmp.name, "port")
    p = subprocess.Popen(argv + ["-p", "-1", "-l", "127.0.0.1", "-t", "4", "-m", "64"],
                         stdout=subprocess.DEVNULL, stderr=log,
                         env=dict(os.environ, MEMCACHED_PORT_FILENAME=portfile))
    p.log, p.tmp = log, tmp
    deadline = time.monotonic() + 120  # a hang fails with a message; no speed is asserted
    while not os.path.exists(portfile):
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            p.wait()
            log.seek(0)
            raise RuntimeError("%s did not start: %s" % (argv[0], log.read()[-2000:]))
        time.sleep(0.01)
    with open(portfile) as f:
        p.port = int(re.match(r"TCP INET6?: (\d+)", f.readline()).group(1))
    return p


class Peer:
    def __init__(self, port):
        self.port = port
        self.s = None
        self.cas = {}  # key -> this server's last CAS seen for it

    def connect(self):
        if self.s:
            self.s.close()
        self.s = socket.create_connection(("127.0.0.1", self.port), 60)
        # every request of the fixed seeds is answered (mn ends each): no reply in 60 s
        # is a hang, not a slow server on a loaded machine
        self.s.settimeout(60)

    def talk(self, req):
        """Send req then mn; the reply bytes before MN, or ... + <closed> / <timeout>."""
        if self.s is None:
            self.connect()
        req = re.sub(rb"\{CAS:([^}]*)\}", lambda m: b"%d" % self.cas.get(m.group(1), 987654),
                     req)
        try:
            self.s.sendall(req + b"mn\r\n")
        except OSError:
            self.s = None
            return b"<closed>"
        out = b""
        while not out.endswith(b"MN\r\n"):
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                self.s = None
                return out + b"<timeout>"
            except OSError:
                d = b""
            if not d:
                self.s = None
                return out + b"<closed>"
            out += d
        out = out[:-4]
        for m in re.finditer(rb"VALUE (\S+) \d+ \d+ (\d+)\r\n", out):
            self.cas[m.group(1)] = int(m.group(2))
        return out


def normalise(reply, casmap, used):
    reply = re.sub(rb"^VERSION .*$", b"VERSION x", reply, flags=re.M)
    me = re.sub(rb"^(ME \S+) .*$", rb"\1 #", reply, flags=re.M)
    if me != reply:
        used.add("me fields")
        reply = me

    def cas(m):
        v = int(m.group(2))
        casmap.setdefault(v, len(casmap) + 1)
        return m.group(1) + b"#%d" % casmap[v]
    reply = re.sub(rb"(VALUE \S+ \d+ \d+ )(\d+)", cas, reply)
    reply = re.sub(rb"(?<=[ ])(c)(\d+)(?=[ \r])", lambda m: b"c#" if m.group(2) != b"0"
                   else b"c0", reply)
    reply = re.sub(rb"(?<=[ ])t(\d+)(?=[ \r])", b"t#", reply)   # TTL left: seconds tick
    reply = re.sub(rb"(?<=[ ])l(\d+)(?=[ \r])", b"l#", reply)   # idle time: tick
    padded = re.sub(rb"(VALUE \S+ \d+ )(\d+)((?: #\d+)?\r\n)([^\r\n]*?\d) +\r\n",
                    lambda m: m.group(1) + b"%d" % len(m.group(4)) + m.group(3) + m.group(4)
                    + b"\r\n", reply)
    if padded != reply:
        used.add("incr padding")
    return padded


def gen(rng):
    """One request (bytes)."""
    k = rng.choice(KEYS[:-1])
    kk = rng.choice(KEYS)
    val = rng.choice([b"1", b"42", b"007", b"abc", b"12 x", b"", b"hello world", b"18446744073709551615",
                      b"-5", b"+3", b"9" * 20])
    noreply = b" noreply" if rng.random() < 0.1 else b""
    num = rng.choice([b"0", b"1", b"+5", b"-0", b"-1", b"abc", b"4294967296", b"4294967301",
                      b"0000000000000000000000009", b"2147483648", b"", b"1x", b"18446744073709551616"])
    # an expiry must not fall due while a sequence runs (the servers' seconds tick apart):
    # TTLs are 0, none, already past, or 100 s and more
    exp = rng.choice([b"0", b"+100", b"-0", b"-1", b"abc", b"4294967396", b"2147483648",
                      b"000000000000000000000100", b"", b"1x", b"4294967295"])
    r = rng.random()
    if r < 0.30:  # classic valid
        c = rng.choice(["get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend",
                        "cas", "delete", "incr", "decr", "touch", "verbosity", "version",
                        "flush_all"])
        if c in ("get", "gets"):
            return b"%s %s\r\n" % (c.encode(), b" ".join(rng.sample(KEYS[:-1], rng.randint(1, 3))))
        if c in ("gat", "gats"):
            return b"%s %d %s\r\n" % (c.encode(), rng.choice([0, 100, -1]), b" ".join(rng.sample(KEYS[:-1], rng.randint(1, 3))))
        if c == "cas":
            return b"cas %s %d 0 %d {CAS:%s}%s\r\n%s\r\n" % (k, rng.randint(0, 9), len(val), k, noreply, val)
        if c in ("set", "add", "replace", "append", "prepend"):
            return b"%s %s %d %d %d%s\r\n%s\r\n" % (c.encode(), kk, rng.randint(0, 3), rng.choice([0, 0, 100, -1]),
                                                 len(val), noreply, val)
        if c == "delete":
            return b"delete %s%s\r\n" % (k, noreply)
        if c in ("incr", "decr"):
            return b"%s %s %d%s\r\n" % (c.encode(), k, rng.choice([1, 5, 100, 2**64 - 1]), noreply)
        if c == "touch":
            return b"touch %s %d%s\r\n" % (k, rng.choice([0, 100]), noreply)
        if c == "verbosity":
            return b"verbosity %d%s\r\n" % (rng.randint(0, 2), noreply)
        if c == "version":
            return b"version\r\n"
        return rng.choice([b"flush_all\r\n", b"flush_all 0\r\n", b"flush_all noreply\r\n"])
    if r < 0.55:  # meta valid (and flags a command ignores)
        c = rng.choice(["mg", "ms", "md", "ma", "me"])
        if c == "me":  # extra tokens ignored; b decodes; the key shown as stored
            return rng.choice([b"me %s\r\n" % k, b"me %s x\r\n" % k, b"me %s b x\r\n" % k,
                               b"me %s b\r\n" % base64.b64encode(k)])
        flags = {"mg": "vkcfsthlOqTNuER", "ms": "cCFTIkOqMs", "md": "qCITkOv", "ma": "NJDTMqtcvOk"}[c]
        fl = []
        for f in rng.sample(flags, rng.randint(0, 4)):
            # T and N: past, absolute and in token order with R (R before T compares the
            # TTL the item had); C that never matches (an empty value is non-numeric
            # first); an opaque too long, found by mg and ma after they acted
            tok = {"T": b"T%d" % rng.choice([0, 60, 0, 60, 300, -1, 2147483647]),
                   "N": b"N%d" % rng.choice([30, 30, 30, -1]), "R": b"R%d" % rng.choice([30, 200]),
                   "C": rng.choice([b"C{CAS:%s}" % k] * 3 + [b"C99999999"]), "F": b"F%d" % rng.randint(0, 9),
                   "O": rng.choice([b"Oop%d" % rng.randint(0, 9)] * 5 + [b"O" + b"x" * 33]),
                   "J": b"J%d" % rng.randint(0, 9), "D": b"D%d" % rng.randint(1, 9),
                   "M": b"M" + rng.choice([b"S", b"E", b"A", b"P", b"R", b"I", b"D", b"+", b"-", b"s"]),
                   "E": b"E5"}.get(f, f.encode())
            fl.append(tok)
        if c == "ms":
            return b"ms %s %d %s\r\n%s\r\n" % (k, len(val), b" ".join(fl), val)
        return b"%s %s %s\r\n" % (c.encode(), k, b" ".join(fl))
    if r < 0.70:  # numbers as memcached's strtol/strtoul read them
        c = rng.choice([0, 1, 2, 3, 4, 5])
        if c == 0:
            return b"set %s %s 0 1\r\nz\r\n" % (k, num)
        if c == 1:
            return b"set %s 0 %s 1\r\nz\r\n" % (k, exp)
        if c == 2:
            return b"incr %s %s\r\n" % (k, num)
        if c == 3:
            return b"touch %s %s\r\n" % (k, exp)
        if c == 4:
            return b"verbosity %s\r\n" % num
        return b"mg %s T%s v\r\n" % (k, exp)
    # malformed
    return rng.choice([
        b"bogus\r\n", b"GET / HTTP/1.0\r\n", b"PUT /x HTTP/1.1\r\n", b"gxx HTTP/1.0\r\n",
        b"get " + b"y" * 251 + b"\r\n", b"set k 0 0\r\n", b"set k 0 0 1 noreply extra\r\nz\r\n",
        b"set k 0 0 2\r\nabc\r\n", b"delete k 5\r\n", b"delete k 0 noreply\r\n", b"incr\r\n",
        b"mg\r\n", b"mg k s s\r\n", b"mg k ?\r\n", b"ms k\r\n", b"ms k x\r\n", b"ms k 2 Mxx\r\nhi\r\n",
        b"ma k MX\r\n", b"md k C\r\n", b"mg k O" + b"o" * 33 + b"\r\n", b"me\r\n", b"mx k\r\n",
        b"get k\x00junk\r\n", b"flush_all x\r\n", b"flush_all 0 junk\r\n", b"stats nonsense\r\n",
        b"slabs automove 7\r\n", b"slabs automove x\r\n", b"quit extra\r\n", b"\r\n", b" \r\n",
        b"set k 0 0 2147483647\r\n", b"touch k\r\n", b"gat k\r\n", b"verbosity\r\n",
        b"ms k 2 " + b" ".join(b"O%d" % i for i in range(30)) + b"\r\nhi\r\n",
        b"mg " + b"k" * 251 + b" v\r\n", b"mg k b\r\n", b"mg azE= b v k\r\n",
        # memcached's undocumented alias of get
        b"bget k0 k1\r\n",
        # 19 tokens are the most a meta line may have: past them, before anything else
        b"mg k " + b" ".join(b"%c" % c for c in b"abcdefghijklmnopq") + b"\r\n",
        b"mg k " + b" ".join(b"O%d" % i for i in range(18)) + b"\r\n",
        b"ma k " + b" ".join(b"%c" % c for c in b"abcdefghijklmnopqr") + b"\r\n",
        b"ms k 1 " + b" ".join(b"O%d" % i for i in range(17)) + b"\r\nz\r\n",
        # a line memcached never sees the end of (past its 16 KiB read buffer)
        b"bogus " + b"a" * 17000 + b"\r\n",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsync", default=os.environ.get("TSYNC_CACHED", "build/tsync-cached"))
    ap.add_argument("--memcached", default=os.environ.get("MEMCACHED", "/usr/bin/memcached"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=40)
    ap.add_argument("--requests", type=int, default=250)
    ap.add_argument("--show", type=int, default=10, help="differences printed at most")
    a = ap.parse_args()
    mc_argv = [a.memcached, "-U", "0"] + (["-u", "root"] if os.geteuid() == 0 else [])
    mc = start(mc_argv)
    try:
        ts = start([a.tsync])
    except BaseException:
        mc.kill()
        mc.wait()
        raise
    pm, pt = mc.port, ts.port
    diffs, used_total, sent = [], {}, 0
    try:
        for sq in range(a.sequences):
            rng = random.Random(a.seed * 1000003 + sq)
            peers = [Peer(pm), Peer(pt)]
            for p in peers:
                p.connect()
                p.talk(b"flush_all\r\n")
            casmaps = [{}, {}]
            bumped = set()  # keys incremented since their last store
            padded = set()  # ... and appended to since: memcached's padding inside
            for i in range(a.requests):
                req = gen(rng)
                sent += 1
                used = set()
                rm = normalise(peers[0].talk(req), casmaps[0], set())
                rt = normalise(peers[1].talk(req), casmaps[1], used)
                for u in used:
                    used_total[u] = used_total.get(u, 0) + 1
                toks = req.split(b"\r\n")[0].split()
                if len(toks) > 2 and toks[0][:1] == b"m" and b"b" in toks[2:]:
                    try:  # a base64 key: track the key itself
                        toks[1] = base64.b64decode(toks[1], validate=True)
                    except ValueError:
                        pass
                if len(toks) > 1 and toks[0] in (b"incr", b"decr", b"ma"):
                    bumped.add(toks[1])
                elif len(toks) > 1 and toks[0] in (b"set", b"delete") and \
                        rm.startswith((b"STORED", b"DELETED")):
                    # only a store or delete that happened ends the number's history (a
                    # refused "set k0 abc 0 1" leaves the padded number in place)
                    bumped.discard(toks[1])
                    padded.discard(toks[1])
                if len(toks) > 1 and toks[1] in bumped and (
                        toks[0] in (b"append", b"prepend") or
                        (toks[0] == b"ms" and (b"MA" in toks or b"MP" in toks))):
                    # memcached's padding is now inside a longer value: a later incr
                    # reads the number before the space ("9 5" is 9 there, 95 here)
                    padded.add(toks[1])
                if rm != rt and big_number_quirk(toks, rm, rt):
                    used_total["incr of 2^63 or more"] = used_total.get("incr of 2^63 or more",
                                                                        0) + 1
                elif rm != rt and (toks[:1] not in ([b"incr"], [b"decr"]) or toks[1:2] and
                                 toks[1] in padded) and any(t in bumped for t in toks[1:]):
                    used_total["incr in place"] = used_total.get("incr in place", 0) + 1
                elif rm != rt:
                    diffs.append((sq, i, req, rm, rt))
            for p in peers:
                if p.s:
                    p.s.close()
    finally:
        for p in (mc, ts):
            p.send_signal(signal.SIGTERM)
        rc_ts = ts.wait(120)
        mc.wait(120)
        ts.log.seek(0)
        err = ts.log.read()
        for p in (mc, ts):
            p.tmp.cleanup()
    print("mc_diff: seed %d: %d sequences, %d requests, %d differences" %
          (a.seed, a.sequences, sent, len(diffs)))
    for name, n in sorted(used_total.items()):
        print("  intended (%s): %d - %s" % (name, n, ALLOWED[name]))
    for sq, i, req, rm, rt in diffs[:a.show]:
        print("DIFF seed %d sequence %d request %d: %r\n  memcached: %r\n  tsync:     %r" %
              (a.seed, sq, i, req[:200], rm[:300], rt[:300]))
    if rc_ts != 0 or b"Sanitizer" in err or b"runtime error" in err:
        print("tsync-cached exit %d, stderr: %r" % (rc_ts, err[-2000:]))
        return 1
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
