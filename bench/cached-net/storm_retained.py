#!/usr/bin/env python3
"""Items retained at equal -m: stock memcached and tsync-cached under the same set storm.

Each server (-t 4 -m 16) gets 4 clients storing keys with seeded random 1-100 KB values
until each client has sent 50 MB (200 MB in all); then every key ever stored is read back
with multi-gets. Reports, per server: items and value bytes still readable, wrong values
(must be 0), refused stores, and the server's RSS. Servers run one after the other,
--repeats times, interleaved (memcached, tsync, memcached, ...).

    storm_retained.py --tsync build/tsync-cached [--memcached /usr/bin/memcached]
                      [--repeats 3] [--out docs/results/memeff]
"""
import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def storm(argv, per_client=50_000_000, clients=4, seed=1):
    port = free_port()
    p = subprocess.Popen(argv + ["-p", str(port), "-l", "127.0.0.1", "-t", "4", "-m", "16"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.02)
    keys, lock, refused = {}, threading.Lock(), [0]

    def client(cid):
        rng = random.Random(seed * 100 + cid)
        s = socket.create_connection(("127.0.0.1", port))
        f = s.makefile("rb")
        sent = i = 0
        while sent < per_client:
            n = rng.randint(1000, 100000)
            k = b"c%dk%d" % (cid, i)
            v = bytes([65 + (i % 26)]) * n
            i += 1
            s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (k, n, v))
            if f.readline() == b"STORED\r\n":
                with lock:
                    keys[k] = v
            else:
                refused[0] += 1
            sent += n
        s.close()
    ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    kl = list(keys)
    found = nbytes = wrong = 0
    for j in range(0, len(kl), 50):
        s.sendall(b"get " + b" ".join(kl[j:j + 50]) + b"\r\n")
        while True:
            line = f.readline()
            if line == b"END\r\n":
                break
            _, k, _, n = line.split()
            v = f.read(int(n) + 2)[:-2]
            found += 1
            nbytes += len(v)
            wrong += v != keys[k]
    rss = 0
    with open("/proc/%d/status" % p.pid) as st:
        for line in st:
            if line.startswith("VmRSS"):
                rss = int(line.split()[1])
    p.terminate()
    rc = p.wait(20)
    return dict(items=found, bytes=nbytes, wrong=wrong, refused=refused[0], rss_kb=rss, rc=rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tsync", default=os.environ.get("TSYNC_CACHED", "build/tsync-cached"))
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-client-mb", type=float, default=50)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    mc = [a.memcached, "-U", "0"] + (["-u", "root"] if os.geteuid() == 0 else [])
    rows = []
    for r in range(a.repeats):
        for name, argv in (("memcached", mc), ("tsync", [a.tsync])):
            res = storm(argv, int(a.per_client_mb * 1e6), seed=r + 1)
            res.update(server=name, repeat=r)
            rows.append(res)
            print("%-9s repeat %d: %5d items %9d B retained, %d wrong, %d refused, RSS %d KB"
                  % (name, r, res["items"], res["bytes"], res["wrong"], res["refused"],
                     res["rss_kb"]), flush=True)
    med = {n: {k: statistics.median(x[k] for x in rows if x["server"] == n)
               for k in ("items", "bytes", "rss_kb")} for n in ("memcached", "tsync")}
    lines = ["| server | items retained | value bytes retained | RSS KB |",
             "| --- | --- | --- | --- |"]
    for n in ("memcached", "tsync"):
        lines.append("| %s | %d | %d | %d |" % (n, med[n]["items"], med[n]["bytes"],
                                                 med[n]["rss_kb"]))
    lines.append("| tsync / memcached | %.2f | %.2f | %.2f |" % tuple(
        med["tsync"][k] / med["memcached"][k] for k in ("items", "bytes", "rss_kb")))
    print("\n".join(lines))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "storm.csv"), "w") as f:
            f.write("server,repeat,items,bytes,wrong,refused,rss_kb\n")
            for x in rows:
                f.write("%s,%d,%d,%d,%d,%d,%d\n" % (x["server"], x["repeat"], x["items"],
                                                    x["bytes"], x["wrong"], x["refused"],
                                                    x["rss_kb"]))
        with open(os.path.join(a.out, "storm.md"), "w") as f:
            f.write("Set storm: 4 clients, 200 MB of 1-100 KB values into -m 16 -t 4, medians of "
                    "%d interleaved repeats.\n\n" % a.repeats + "\n".join(lines) + "\n")
    return 1 if any(x["wrong"] or x["rc"] for x in rows if x["server"] == "tsync") else 0


if __name__ == "__main__":
    sys.exit(main())
