#!/usr/bin/env python3
"""bench/cached-net/cached_memeff.py - memory efficiency of tsync-cached against stock memcached at equal -m.

Two workloads, each on a fresh server (-m 16 -t 4 on a free 127.0.0.1 port), servers
interleaved per repeat (memcached, tsync, memcached, tsync, ...) because the development
VM is bimodal; repeat r uses seed --seed + r for both servers.

1. Set storm. 4 client processes each set seeded-random keys (each client its own key
   space of --storm-keyspace/4 keys, so "the last value set" of a key is well defined)
   with random-content values of uniformly random length 1-100 KiB, until --storm-mb MB
   have been sent in all or --storm-seconds have passed. Every reply must be STORED or
   "SERVER_ERROR out of memory..." (each counted; anything else is an error). Then every
   key ever set is read back with multi-gets of --batch keys: retained items and value
   bytes, wrong values (not byte-identical to the last value STORED for the key; must be
   0) and stale values (the last set of the key was refused, the server still returns
   an older value; memcached unlinks the key in that case). Then `stats` (curr_items,
   bytes, evictions, limit_maxbytes) and VmRSS/VmHWM from /proc/PID/status.

2. Zipfian cache-aside. A key space of --zipf-keys keys whose value sizes are drawn once
   from a fixed seeded distribution (70% 100-1000 B, 25% 1-10 KB, 5% 10-100 KB; the
   same for every run); 4 client processes draw keys Zipf(s=--zipf-s) (rank -> key by a
   fixed permutation), get each and set it on a miss, --zipf-requests requests in all.
   Reports the hit ratio (hits/gets) over each client's second half of requests (after
   warm-up), curr_items at the end, evictions, RSS; every hit is checked byte for byte.

Every server is stopped with SIGTERM; its exit status is recorded (must be 0).

Writes DIR/set_storm.csv and DIR/zipf.csv (one row per server per repeat), DIR/summary.md
(medians and tsync/memcached ratios) and DIR/COMMAND-memeff.txt; prints the summary. Exit status
1 when any run saw a wrong value, an unexpected reply, a client error, a server that died
or did not exit 0 on SIGTERM; 0 otherwise.

    python3 bench/cached-net/cached_memeff.py [--tsync build/tsync-cached] [--memcached /usr/bin/memcached]
                                   [--repeats 3] [--scale 1] [--out docs/results/memeff]

At -m 16 the comparison is not one of equal memory: memcached gives every slab class it
uses its first 1 MiB page even past -m, so with values spanning 20-odd classes it maps
about 24 MB; tsync-cached's -m bounds its charge. --scale 4 runs both workloads four
times as large at -m 64, where that first page per class is a small share.
"""
import argparse
import bisect
import csv
import datetime
import hashlib
import itertools
import multiprocessing
import os
import platform
import random
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

CLIENTS = 4
SERVERS = ("memcached", "tsync")
STORM_FIELDS = ["workload", "server", "repeat", "seed", "wall_s", "sets", "mb_sent", "stored",
                "oom", "other_replies", "client_errors", "keys_set", "retained_items",
                "retained_bytes", "wrong", "stale", "curr_items", "bytes", "evictions",
                "limit_maxbytes", "total_malloced", "rss_kb", "hwm_kb", "alive", "exit_rc"]
ZIPF_FIELDS = ["workload", "server", "repeat", "seed", "wall_s", "requests", "gets", "hits",
               "hit_ratio_all", "gets_2nd_half", "hits_2nd_half", "hit_ratio", "sets",
               "stored", "oom", "other_replies", "client_errors", "wrong", "curr_items",
               "bytes", "evictions", "limit_maxbytes", "total_malloced", "rss_kb", "hwm_kb",
               "alive", "exit_rc"]
OOM = b"SERVER_ERROR out of memory"


# ---------------------------------------------------------------- servers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process on a free port; stop() sends SIGTERM and returns the exit status."""

    def __init__(self, name, argv, memory, threads):
        self.name = name
        for _ in range(5):
            self.port = free_port()
            cmd = list(argv) + ["-l", "127.0.0.1", "-p", str(self.port), "-t", str(threads),
                                "-m", str(memory)]
            self.log = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
            end = time.time() + 10
            while time.time() < end and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    return
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise RuntimeError("%s did not start: %s" % (name, shlex.join(cmd)))

    def alive(self):
        return self.proc.poll() is None

    def proc_status(self):
        out = {"rss_kb": 0, "hwm_kb": 0}
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        out["rss_kb"] = int(line.split()[1])
                    elif line.startswith("VmHWM:"):
                        out["hwm_kb"] = int(line.split()[1])
        except OSError:
            pass
        return out

    def stats(self):
        """curr_items, bytes, evictions, limit_maxbytes from `stats`, total_malloced from
        `stats slabs` (-1 where the server does not answer them)."""
        out = dict.fromkeys(("curr_items", "bytes", "evictions", "limit_maxbytes",
                             "total_malloced"), -1)
        try:
            with socket.create_connection(("127.0.0.1", self.port), 10) as s:
                s.settimeout(10)
                f = s.makefile("rb")
                for cmd in (b"stats\r\n", b"stats slabs\r\n"):
                    s.sendall(cmd)
                    while True:
                        line = f.readline()
                        if not line or line == b"END\r\n" or not line.startswith(b"STAT "):
                            break
                        _, k, v = line.split(None, 2)
                        k = k.decode()
                        if k in out:
                            out[k] = int(v)
        except (OSError, ValueError):
            pass
        return out

    def stop(self):
        """SIGTERM, up to 20 s to exit; the exit status, or 'timeout' when it had to be killed."""
        rc = self.proc.poll()
        if rc is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "timeout"
        self.log.seek(0)
        self.output = self.log.read().decode(errors="replace")
        self.log.close()
        return rc


def server_memory(name, args):
    """-m for this server: --memory (times --scale), or --tsync-memory for tsync-cached."""
    return args.tsync_memory if name == "tsync" and args.tsync_memory else args.memory


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), 10)
    s.settimeout(30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb", buffering=1 << 20)


def digest(v):
    return hashlib.blake2b(v, digest_size=16).digest()


def count_set_reply(c, r):
    """Counts the reply r to a set in the client counts c: stored, oom or other (the first
    other kept in first_other). True when STORED; an empty reply (the server closed the
    connection) raises ConnectionError after it is counted."""
    if r == b"STORED\r\n":
        c["stored"] += 1
        return True
    if r.startswith(OOM):
        c["oom"] += 1
    else:
        c["other"] += 1
        c["first_other"] = c["first_other"] or r[:80].decode(errors="replace")
        if not r:
            raise ConnectionError("connection closed")
    return False


# ---------------------------------------------------------------- 1. set storm

def storm_client(port, cid, seed, budget, deadline, keyspace):
    """Sets until `budget` bytes of values are sent or `deadline`. Returns counts and, per
    key, [last stored digest or None, length, last attempt stored?, earlier stored digests]."""
    rng = random.Random("storm-%d-%d" % (seed, cid))
    keys = {}
    c = dict(sets=0, sent=0, stored=0, oom=0, other=0, errors=0, first_other="")
    try:
        s, f = connect(port)
        while c["sent"] < budget and time.time() < deadline:
            k = b"s%d:%x" % (cid, rng.randrange(keyspace))
            n = rng.randint(1024, 102400)
            v = rng.randbytes(n)
            s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, n, v))
            r = f.readline()
            c["sets"] += 1
            c["sent"] += n
            e = keys.setdefault(k, [None, 0, False, []])
            stored = count_set_reply(c, r)
            if e[0] is not None:
                e[3].append(e[0])
            if stored:
                e[0], e[1], e[2] = digest(v), n, True
            else:
                e[0], e[2] = None, False
        s.close()
    except (OSError, ValueError) as ex:
        c["errors"] += 1
        c["first_other"] = c["first_other"] or repr(ex)
    return c, keys


def read_back(port, keys, batch):
    """Multi-get every key; (found, bytes, wrong, stale, errors)."""
    found = nbytes = wrong = stale = errors = 0
    kl = sorted(keys)
    try:
        s, f = connect(port)
        for j in range(0, len(kl), batch):
            part = kl[j:j + batch]
            s.sendall(b"get " + b" ".join(part) + b"\r\n")
            seen = set()
            while True:
                line = f.readline()
                if line == b"END\r\n":
                    break
                w = line.split()
                if len(w) != 4 or w[0] != b"VALUE":
                    raise ValueError("unexpected reply %r" % line[:80])
                k, n = w[1], int(w[3])
                data = f.read(n + 2)
                if len(data) != n + 2 or data[-2:] != b"\r\n":
                    raise ValueError("short value for %r" % k)
                v = data[:-2]
                found += 1
                nbytes += n
                e = keys.get(k)
                if e is None or k in seen:
                    wrong += 1
                elif e[2] and e[1] == n and e[0] == digest(v):
                    pass
                elif not e[2] and digest(v) in e[3][-1:]:
                    stale += 1
                else:
                    wrong += 1
                seen.add(k)
        s.close()
    except (OSError, ValueError):
        errors += 1
    return found, nbytes, wrong, stale, errors


def on_server(name, argv, args, work):
    """work(srv) -> (row, notes) on a fresh server; the row gets the server's stats, RSS,
    liveness, exit status on SIGTERM and the wall time. Returns (row, notes, output)."""
    t0 = time.time()
    srv = Server(name, argv, server_memory(name, args), args.threads)
    try:
        row, notes = work(srv)
        row.update(srv.stats())
        row.update(srv.proc_status())
        row["alive"] = int(srv.alive())
    finally:
        rc = srv.stop()
    row["exit_rc"] = rc
    row["wall_s"] = round(time.time() - t0, 1)
    return row, notes, srv.output


def run_storm(name, argv, args, seed, pool):
    def work(srv):
        deadline = time.time() + args.storm_seconds
        budget = int(args.storm_mb * 1e6 / CLIENTS)
        res = pool.starmap(storm_client, [(srv.port, c, seed, budget, deadline,
                                           max(1, args.storm_keyspace // CLIENTS))
                                          for c in range(CLIENTS)])
        keys = {}
        row = dict(workload="set_storm", server=name, seed=seed, sets=0, mb_sent=0.0, stored=0,
                   oom=0, other_replies=0, client_errors=0)
        notes = []
        for c, k in res:
            keys.update(k)
            row["sets"] += c["sets"]
            row["mb_sent"] += c["sent"] / 1e6
            row["stored"] += c["stored"]
            row["oom"] += c["oom"]
            row["other_replies"] += c["other"]
            row["client_errors"] += c["errors"]
            if c["first_other"]:
                notes.append(c["first_other"])
        row["mb_sent"] = round(row["mb_sent"], 1)
        found, nbytes, wrong, stale, err = read_back(srv.port, keys, args.batch)
        row.update(keys_set=len(keys), retained_items=found, retained_bytes=nbytes,
                   wrong=wrong, stale=stale)
        row["client_errors"] += err
        return row, notes

    return on_server(name, argv, args, work)


# ---------------------------------------------------------------- 2. zipfian cache-aside

ZIPF = {}  # filled in the parent before the pool forks: sizes, perm, cum_weights, buf


def zipf_setup(nkeys, s):
    rng = random.Random("zipf-sizes")
    sizes = []
    for _ in range(nkeys):
        u = rng.random()
        if u < 0.70:
            sizes.append(rng.randint(100, 1000))
        elif u < 0.95:
            sizes.append(rng.randint(1001, 10000))
        else:
            sizes.append(rng.randint(10001, 100000))
    perm = list(range(nkeys))
    random.Random("zipf-perm").shuffle(perm)
    cum = list(itertools.accumulate(1.0 / (i ** s) for i in range(1, nkeys + 1)))
    buf = random.Random("zipf-buf").randbytes((1 << 20) + 100000)
    ZIPF.update(sizes=sizes, perm=perm, cum=cum, buf=buf)


def zipf_value(k):
    n = ZIPF["sizes"][k]
    head = b"%08d" % k
    off = (k * 7919) % (1 << 20)
    return head + ZIPF["buf"][off:off + n - len(head)]


def zipf_client(port, cid, seed, nreq):
    rng = random.Random("zipf-req-%d-%d" % (seed, cid))
    cum, perm = ZIPF["cum"], ZIPF["perm"]
    total = cum[-1]
    nk = len(cum)
    c = dict(gets=0, hits=0, gets2=0, hits2=0, sets=0, stored=0, oom=0, other=0, wrong=0,
             errors=0, first_other="")
    half = nreq // 2
    try:
        s, f = connect(port)
        for i in range(nreq):
            k = perm[min(bisect.bisect_left(cum, rng.random() * total), nk - 1)]
            key = b"z:%d" % k
            s.sendall(b"get %s\r\n" % key)
            line = f.readline()
            hit = False
            if line.startswith(b"VALUE "):
                n = int(line.split()[3])
                data = f.read(n + 2)
                end = f.readline()
                if end != b"END\r\n" or len(data) != n + 2:
                    raise ValueError("bad get reply for %r" % key)
                hit = True
                if data[:-2] != zipf_value(k):
                    c["wrong"] += 1
            elif line != b"END\r\n":
                raise ValueError("unexpected get reply %r" % line[:80])
            c["gets"] += 1
            c["hits"] += hit
            if i >= half:
                c["gets2"] += 1
                c["hits2"] += hit
            if not hit:
                v = zipf_value(k)
                s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(v), v))
                r = f.readline()
                c["sets"] += 1
                count_set_reply(c, r)
        s.close()
    except (OSError, ValueError) as ex:
        c["errors"] += 1
        c["first_other"] = c["first_other"] or repr(ex)
    return c


def run_zipf(name, argv, args, seed, pool):
    def work(srv):
        per = args.zipf_requests // CLIENTS
        res = pool.starmap(zipf_client, [(srv.port, c, seed, per) for c in range(CLIENTS)])
        tot = {k: sum(r[k] for r in res) for k in res[0] if k != "first_other"}
        notes = [r["first_other"] for r in res if r["first_other"]]
        row = dict(workload="zipf", server=name, seed=seed, requests=per * CLIENTS,
                   gets=tot["gets"], hits=tot["hits"],
                   hit_ratio_all=round(tot["hits"] / max(1, tot["gets"]), 4),
                   gets_2nd_half=tot["gets2"], hits_2nd_half=tot["hits2"],
                   hit_ratio=round(tot["hits2"] / max(1, tot["gets2"]), 4),
                   sets=tot["sets"], stored=tot["stored"], oom=tot["oom"],
                   other_replies=tot["other"], client_errors=tot["errors"], wrong=tot["wrong"])
        return row, notes

    return on_server(name, argv, args, work)


# ---------------------------------------------------------------- report

def med(rows, server, field):
    """The median of a numeric column over one server's rows (None without any)."""
    return tp.median(r[field] for r in rows
                     if r["server"] == server and isinstance(r[field], (int, float)))


def table(rows, cols):
    """cols: [(header, field, decimals)]; one row per server (medians) and the ratio row."""
    m = {s: [med(rows, s, c[1]) for c in cols] for s in SERVERS}
    body = [[s] + [tp.fmt(v, ".%df" % c[2]) for v, c in zip(m[s], cols)] for s in SERVERS]
    body.append(["**tsync / memcached**"] + ["**%s**" % tp.fmt(tp.ratio(t, mc))
                                             for t, mc in zip(m["tsync"], m["memcached"])])
    return tp.md_table(["server"] + [c[0] for c in cols], body, "l" + "r" * len(cols))


def summary(storm, zipf, args, repeats):
    lines = ["# Memory efficiency at %s: tsync-cached against memcached"
             % ("unequal -m" if args.tsync_memory else "equal -m"), "",
             "Medians of %d repeats, servers interleaved (memcached, tsync, ...), each run on a "
             "fresh server with `-m %d -t %d`%s. Raw rows: `set_storm.csv`, `zipf.csv`; "
             "machine and command: `COMMAND-memeff.txt`."
             % (repeats, args.memory, args.threads,
                " (tsync-cached: `-m %d`)" % args.tsync_memory if args.tsync_memory else ""),
             ""]
    if storm:
        lines += ["## Set storm", "",
                  "%d clients set random 1-100 KiB values (random content) on %d random keys "
                  "until %g MB are sent or %g s pass, then every key ever set is read back "
                  "(multi-gets of %d). Retained = still readable at the end. Wrong = not "
                  "byte-identical to the last value stored (must be 0); OOM = `SERVER_ERROR out "
                  "of memory` replies to sets." % (CLIENTS, args.storm_keyspace, args.storm_mb,
                                                   args.storm_seconds, args.batch), ""]
        lines += table(storm, [("items retained", "retained_items", 0),
                               ("value bytes retained", "retained_bytes", 0),
                               ("curr_items", "curr_items", 0),
                               ("stats bytes", "bytes", 0),
                               ("total_malloced", "total_malloced", 0),
                               ("RSS KB", "rss_kb", 0), ("peak RSS KB", "hwm_kb", 0),
                               ("MB sent", "mb_sent", 1), ("OOM replies", "oom", 0),
                               ("wrong", "wrong", 0), ("stale", "stale", 0)])
        lines.append("")
    if zipf:
        lines += ["## Zipfian cache-aside", "",
                  "%d clients, %d requests in all, keys Zipf(s=%g) over %d keys (value sizes "
                  "fixed: 70%% 100-1000 B, 25%% 1-10 KB, 5%% 10-100 KB); get, set on a miss. Hit "
                  "ratio = hits/gets over each client's second half of requests."
                  % (CLIENTS, args.zipf_requests // CLIENTS * CLIENTS, args.zipf_s,
                     args.zipf_keys), ""]
        lines += table(zipf, [("hit ratio (2nd half)", "hit_ratio", 4),
                              ("hit ratio (all)", "hit_ratio_all", 4),
                              ("items at end", "curr_items", 0),
                              ("stats bytes", "bytes", 0),
                              ("total_malloced", "total_malloced", 0),
                              ("evictions", "evictions", 0),
                              ("RSS KB", "rss_kb", 0), ("peak RSS KB", "hwm_kb", 0),
                              ("OOM replies", "oom", 0), ("wrong", "wrong", 0)])
        lines.append("")
    lines += ["`stats bytes`, `total_malloced` (`stats slabs`) and `limit_maxbytes` are each "
              "server's own accounting, not necessarily comparable: memcached gives every slab "
              "class it uses its first 1 MB page even past -m, so its total_malloced can exceed "
              "-m when values span many size classes.", ""]
    bad = [r for r in storm + zipf if problems(r)]
    lines.append("Problems: " + ("none (no wrong value, no unexpected reply, every server exited "
                                 "0 on SIGTERM)." if not bad else "; ".join(
                                     "%s %s repeat %d: %s" % (r["workload"], r["server"],
                                                              r["repeat"], ", ".join(problems(r)))
                                     for r in bad)))
    return "\n".join(lines) + "\n"


def problems(r):
    p = []
    for f in ("wrong", "other_replies", "client_errors"):
        if r.get(f):
            p.append("%s=%d" % (f, r[f]))
    if not r.get("alive"):
        p.append("server died during the run")
    if r.get("exit_rc") != 0:
        p.append("exit status on SIGTERM %s" % r.get("exit_rc"))
    return p


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def command_txt(args, started, elapsed):
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2")
    here = os.path.dirname(os.path.abspath(__file__))
    return "\n".join([
        "command:   %s" % shlex.join(["python3"] + sys.argv),
        "cwd:       %s" % os.getcwd(),
        "git HEAD:  %s" % sh("git -C %s rev-parse HEAD" % shlex.quote(here)),
        "git dirty: %s files modified or untracked" % sh(
            "git -C %s status --porcelain | wc -l" % shlex.quote(here)),
        "tsync:     %s (%s; mtime %s)" % (
            args.tsync, sh("%s -V" % shlex.quote(args.tsync)),
            datetime.datetime.fromtimestamp(os.path.getmtime(args.tsync), datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ") if os.path.exists(args.tsync) else "?"),
        "memcached: %s (%s)" % (args.memcached, sh("%s -V" % shlex.quote(args.memcached))),
        "uname -a:  %s" % sh("uname -a"),
        "cpu:       %s x %s" % (cpu, os.cpu_count()),
        "python:    %s" % platform.python_version(),
        "date:      %s" % started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "elapsed:   %.0f s" % elapsed,
        "loadavg:   %s (at the end; other processes share the machine)" % sh(
            "cat /proc/loadavg"),
    ]) + "\n"


def write_csv(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--tsync", default=os.environ.get("TSYNC_CACHED", "build/tsync-cached"),
                    help="tsync-cached binary (env TSYNC_CACHED)")
    ap.add_argument("--memcached", default="/usr/bin/memcached", help="stock memcached binary")
    ap.add_argument("--out", default="docs/results/memeff", help="output directory")
    ap.add_argument("--repeats", type=int, default=3, help="repeats per server and workload")
    ap.add_argument("--seed", type=int, default=1, help="repeat r uses seed SEED+r")
    ap.add_argument("--memory", type=int, default=16, help="-m of both servers, MB")
    ap.add_argument("--threads", type=int, default=4, help="-t of both servers")
    ap.add_argument("--workloads", default="storm,zipf", help="comma list: storm, zipf")
    ap.add_argument("--storm-mb", type=float, default=200, help="MB of values to send in all")
    ap.add_argument("--storm-seconds", type=float, default=20, help="storm time limit")
    ap.add_argument("--storm-keyspace", type=int, default=8000,
                    help="distinct keys the storm draws from (split over the clients)")
    ap.add_argument("--batch", type=int, default=100, help="keys per multi-get on read-back")
    ap.add_argument("--zipf-keys", type=int, default=100000, help="Zipfian key space")
    ap.add_argument("--zipf-s", type=float, default=0.99, help="Zipf exponent")
    ap.add_argument("--zipf-requests", type=int, default=400000, help="requests in all")
    ap.add_argument("--scale", type=int, default=1,
                    help="multiply --memory, --storm-mb, --storm-keyspace, --zipf-keys and "
                         "--zipf-requests by this: the same workloads at a larger -m, where "
                         "memcached's first page per slab class is a smaller share of its memory")
    ap.add_argument("--tsync-memory", type=int, default=0,
                    help="-m of tsync-cached only, MB, not scaled (default: the same as "
                         "memcached's); to compare at equal RSS rather than at equal -m")
    args = ap.parse_args(argv)
    if args.scale < 1:
        ap.error("--scale: a positive integer")
    args.memory *= args.scale
    args.storm_mb *= args.scale
    args.storm_keyspace *= args.scale
    args.zipf_keys *= args.scale
    args.zipf_requests *= args.scale
    work = [w for w in args.workloads.split(",") if w]
    if any(w not in ("storm", "zipf") for w in work) or not work:
        ap.error("--workloads: storm, zipf")
    for b in (args.tsync, args.memcached):
        if not os.access(b, os.X_OK):
            ap.error("not an executable: %s" % b)

    mc = [args.memcached, "-U", "0"] + (["-u", "root"] if os.geteuid() == 0 else [])
    argvs = {"memcached": mc, "tsync": [args.tsync]}
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.time()
    if "zipf" in work:
        zipf_setup(args.zipf_keys, args.zipf_s)
    storm, zipf = [], []
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(CLIENTS) as pool:
        for r in range(args.repeats):
            seed = args.seed + r
            for name in SERVERS:
                for w, fn, rows in (("storm", run_storm, storm), ("zipf", run_zipf, zipf)):
                    if w not in work:
                        continue
                    row, notes, out = fn(name, argvs[name], args, seed, pool)
                    row["repeat"] = r
                    rows.append(row)
                    if w == "storm":
                        msg = ("%d/%d items, %d B retained (curr_items %d), %d wrong, %d stale, "
                               "%d OOM of %d sets, %.0f MB sent"
                               % (row["retained_items"], row["keys_set"], row["retained_bytes"],
                                  row["curr_items"], row["wrong"], row["stale"], row["oom"],
                                  row["sets"], row["mb_sent"]))
                    else:
                        msg = ("hit ratio %.4f (all %.4f), %d items, %d evictions, %d wrong, "
                               "%d OOM of %d sets" % (row["hit_ratio"], row["hit_ratio_all"],
                                                      row["curr_items"], row["evictions"],
                                                      row["wrong"], row["oom"], row["sets"]))
                    print("%-5s %-9s repeat %d: %s, RSS %d KB, exit %s, %.1f s"
                          % (w, name, r, msg, row["rss_kb"], row["exit_rc"], row["wall_s"]),
                          file=sys.stderr, flush=True)
                    for p in problems(row):
                        print("      problem: %s" % p, file=sys.stderr)
                    for n in sorted(set(notes))[:3]:
                        print("      first unexpected reply/error: %s" % n, file=sys.stderr)
                    if problems(row) and out.strip():
                        print("      server output (tail): %s" % out.strip()[-500:],
                              file=sys.stderr)
    text = summary(storm, zipf, args, args.repeats)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    if storm:
        write_csv(os.path.join(args.out, "set_storm.csv"), STORM_FIELDS, storm)
    if zipf:
        write_csv(os.path.join(args.out, "zipf.csv"), ZIPF_FIELDS, zipf)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "COMMAND-memeff.txt"), "w") as f:
        f.write(command_txt(args, started, time.time() - t0))
    return 1 if any(problems(r) for r in storm + zipf) else 0


if __name__ == "__main__":
    sys.exit(main())
