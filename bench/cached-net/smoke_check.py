#!/usr/bin/env python3
"""bench/cached-net/smoke_check.py SCRIPT SERVER OUTDIR - run cached_net.py briefly (one
1-second run per server, 90/10) and check its outputs: exit 0, a CSV with the expected
header and one row per server with positive throughput, the Markdown table with a ratio
row, and COMMAND.txt."""
import csv
import os
import shutil
import subprocess
import sys

script, server, out = sys.argv[1:4]
shutil.rmtree(out, ignore_errors=True)
r = subprocess.run([sys.executable, script, "--server", server, "--runs", "1", "--seconds", "1",
                    "--mixes", "90/10", "--conns", "4", "--out", out], timeout=100)
assert r.returncode == 0, r.returncode
with open(os.path.join(out, "cached_net.csv")) as f:
    rows = list(csv.DictReader(f))
assert [x["server"] for x in rows] == ["tsync-cached", "memcached"], rows
assert all(float(x["ops_per_s"]) > 0 for x in rows), rows
assert list(rows[0].keys()) == ["server", "mix", "run", "threads", "memory_mb", "conns",
                                "ops_per_s", "get_avg_us", "set_avg_us", "p99_us_le"]
table = open(os.path.join(out, "cached_net.md")).read()
assert "ratio tsync/memcached" in table, table
assert "command:" in open(os.path.join(out, "COMMAND.txt")).read()
print("bench_cached_net_smoke: ok")
