#!/usr/bin/env python3
"""bench/cached-net/cached_net.py - tsync-cached against stock memcached over the network.

Starts tsync-cached and Debian's memcached with the same -t and -m on 127.0.0.1, drives
each with the same load from memcaslap (libmemcached-tools): 16-byte keys, 32-byte
values, get/set mixes 90/10 and 80/20, for --seconds per run; runs alternate between the
two servers (A B A B ...) so drift in machine load hits both; each server is restarted for
every run. Reports, per mix, the median over --runs of throughput (ops/s), mean get and
set latency (us) and the 99th percentile of all requests (an upper bound: memcaslap
histograms latencies in power-of-two buckets), and the ratios tsync-cached / memcached.

Writes CSV (one row per run) and a Markdown table of medians to --out DIR (or only prints
the table without --out). Machine and command go to DIR/COMMAND.txt.

  bench/cached-net/cached_net.py --server build/tsync-cached --threads 1 --memory 64 \\
      --runs 5 --seconds 5 --out docs/results/cache/net

--server-cpus / --client-cpus pin the servers and memcaslap with taskset (on a small
machine, keeping the load generator off the server's cores is what makes runs
comparable).
"""
import argparse
import csv
import datetime
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

MIXES = {"90/10": 0.1, "80/20": 0.2}
FIELDS = ["server", "mix", "run", "threads", "memory_mb", "conns", "ops_per_s",
          "get_avg_us", "set_avg_us", "p99_us_le"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def start(kind, args, port):
    pin = ["taskset", "-c", args.server_cpus] if args.server_cpus else []
    if kind == "tsync-cached":
        cmd = [args.server, "-p", str(port), "-l", "127.0.0.1", "-t", str(args.threads),
               "-m", str(args.memory), "-c", "4096"]
    else:
        cmd = [args.memcached, "-p", str(port), "-l", "127.0.0.1", "-U", "0",
               "-t", str(args.threads), "-m", str(args.memory), "-c", "4096"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]
    proc = subprocess.Popen(pin + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_port(port, proc):
        proc.kill()
        raise RuntimeError("%s did not start: %s" % (kind, " ".join(cmd)))
    return proc


def parse_caslap(out):
    """Throughput, mean get/set latency, p99 bucket bound from memcaslap's output."""
    m = re.search(r"Run time: [\d.]+s Ops: (\d+) TPS: (\d+)", out)
    if not m:
        raise RuntimeError("memcaslap output not understood:\n" + out[-2000:])
    tps = int(m.group(2))

    def block(name):
        i = out.rfind(name + " Statistics (")
        return out[i:] if i >= 0 else ""

    def avg(name):
        mm = re.search(r"Avg:\s+(\d+)", block(name))
        return float(mm.group(1)) if mm else float("nan")

    # "Log2 Dist:" rows "  k:  c_k c_k+1 c_k+2 c_k+3": c_i counts latencies below 2^i us
    tot = block("Total")
    buckets = {}
    for row in re.finditer(r"^\s+(\d+):((?:\s+\d+)+)\s*$", tot, re.M):
        base = int(row.group(1))
        for j, c in enumerate(row.group(2).split()):
            buckets[base + j] = buckets.get(base + j, 0) + int(c)
    n = sum(buckets.values())
    p99 = float("nan")
    if n:
        acc = 0
        for b in sorted(buckets):
            acc += buckets[b]
            if acc >= 0.99 * n:
                p99 = float(2 ** b)
                break
    return tps, avg("Get"), avg("Set"), p99


def run_one(kind, mix, args, cfgdir):
    port = free_port()
    proc = start(kind, args, port)
    try:
        cfg = os.path.join(cfgdir, "mix.cfg")
        with open(cfg, "w") as f:
            f.write("key\n16 16 1\nvalue\n32 32 1\ncmd\n0 %.2f\n1 %.2f\n"
                    % (MIXES[mix], 1 - MIXES[mix]))
        pin = ["taskset", "-c", args.client_cpus] if args.client_cpus else []
        cmd = pin + [args.memcaslap, "-s", "127.0.0.1:%d" % port, "-F", cfg,
                     "-t", "%ds" % args.seconds, "-T", str(args.client_threads),
                     "-c", str(args.conns), "-S", "%ds" % args.seconds]
        out = subprocess.run(cmd, capture_output=True, text=True,
                             timeout=args.seconds * 4 + 30).stdout
        return parse_caslap(out)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def machine():
    def sh(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    return ("nproc:     %s\ncpu:       %s\nkernel:    %s\nmemcached: %s\nmemcaslap: %s\n"
            "loadavg:   %s (at the end; other processes share the machine)\n"
            % (os.cpu_count(), cpu, platform.platform(), sh("memcached -V"),
               sh("memcaslap -V 2>&1 | head -1"), sh("cat /proc/loadavg")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default="build/tsync-cached", help="tsync-cached binary")
    ap.add_argument("--memcached", default=shutil.which("memcached") or "memcached")
    ap.add_argument("--memcaslap", default=shutil.which("memcaslap") or "memcaslap")
    ap.add_argument("--threads", type=int, default=1, help="-t of both servers")
    ap.add_argument("--memory", type=int, default=64, help="-m of both servers, MiB")
    ap.add_argument("--conns", type=int, default=32, help="memcaslap -c (concurrency)")
    ap.add_argument("--client-threads", type=int, default=1, help="memcaslap -T")
    ap.add_argument("--seconds", type=int, default=5, help="seconds per run")
    ap.add_argument("--runs", type=int, default=5, help="runs per server and mix")
    ap.add_argument("--mixes", default="90/10,80/20")
    ap.add_argument("--server-cpus", default="", help="taskset list for the servers")
    ap.add_argument("--client-cpus", default="", help="taskset list for memcaslap")
    ap.add_argument("--out", default="", help="directory for CSV, table, COMMAND.txt")
    args = ap.parse_args(argv)
    mixes = [m for m in args.mixes.split(",") if m]
    for m in mixes:
        if m not in MIXES:
            ap.error("unknown mix %s (90/10, 80/20)" % m)
    for b in (args.server, args.memcached, args.memcaslap):
        if not shutil.which(b) and not os.access(b, os.X_OK):
            ap.error("not found: %s" % b)

    started = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mix in mixes:
            for r in range(args.runs):
                for kind in ("tsync-cached", "memcached"):
                    tps, gavg, savg, p99 = run_one(kind, mix, args, tmp)
                    rows.append(dict(server=kind, mix=mix, run=r, threads=args.threads,
                                     memory_mb=args.memory, conns=args.conns,
                                     ops_per_s=tps, get_avg_us=gavg, set_avg_us=savg,
                                     p99_us_le=p99))
                    print("%-12s %s run %d: %8d ops/s  get %6.0f us  set %6.0f us  p99 <= %g us"
                          % (kind, mix, r, tps, gavg, savg, p99), file=sys.stderr)

    def med(kind, mix, f):
        return statistics.median(x[f] for x in rows if x["server"] == kind and x["mix"] == mix)

    lines = ["| mix (get/set) | server | ops/s | get avg us | set avg us | p99 us (<=) |",
             "|---|---|---:|---:|---:|---:|"]
    for mix in mixes:
        for kind in ("tsync-cached", "memcached"):
            lines.append("| %s | %s | %.0f | %.0f | %.0f | %.0f |"
                         % (mix, kind, med(kind, mix, "ops_per_s"), med(kind, mix, "get_avg_us"),
                            med(kind, mix, "set_avg_us"), med(kind, mix, "p99_us_le")))
        ratio = med("tsync-cached", mix, "ops_per_s") / med("memcached", mix, "ops_per_s")
        lat = med("tsync-cached", mix, "get_avg_us") / med("memcached", mix, "get_avg_us")
        p99 = med("tsync-cached", mix, "p99_us_le") / med("memcached", mix, "p99_us_le")
        lines.append("| %s | **ratio tsync/memcached** | **%.2f** | %.2f | | %.2f |"
                     % (mix, ratio, lat, p99))
    table = "\n".join(lines)
    print(table)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "cached_net.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(args.out, "cached_net.md"), "w") as f:
            f.write("Medians of %d runs of %d s each; -t %d -m %d on both; memcaslap -T %d "
                    "-c %d, 16-byte keys, 32-byte values.\n\n%s\n"
                    % (args.runs, args.seconds, args.threads, args.memory,
                       args.client_threads, args.conns, table))
        with open(os.path.join(args.out, "COMMAND.txt"), "w") as f:
            f.write("# How the results in this directory were produced\n")
            f.write("command:   %s\n" % " ".join([sys.argv[0]] + (argv or sys.argv[1:])))
            f.write("started:   %s\n" % datetime.datetime.utcfromtimestamp(started)
                    .strftime("%Y-%m-%dT%H:%M:%SZ"))
            f.write("elapsed:   %.0f s\n" % (time.time() - started))
            f.write(machine())
    return 0


if __name__ == "__main__":
    sys.exit(main())
