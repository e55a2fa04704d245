#!/usr/bin/env python3
"""ps_interval_table.py SWEEP_CSV - the medians of scripts/ps-interval-sweep.sh's runs as
a Markdown table: per read interval, thread count and update percentage, ps's total
throughput, its update p99 and its peak pending objects (docs/design.md §2.5)."""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    runs = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["threads"]), int(row["update_pct"]), int(row["interval_us"]))
            runs[key].append(row)
    if not runs:
        sys.exit(f"{path}: no rows")
    print("| threads | updates % | read interval µs | total Mops | update p99 ns "
          "| peak pending | runs |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(runs):
        rows = runs[key]
        mops = statistics.median(float(r["read_mops"]) + float(r["update_mops"]) for r in rows)
        p99 = statistics.median(float(r["update_p99_ns"]) for r in rows)
        pend = statistics.median(int(r["peak_pending"]) for r in rows)
        threads, upd, iv = key
        p99s = f"{p99:.0f}" if upd else "-"
        print(f"| {threads} | {upd} | {iv} | {mops:.1f} | {p99s} | {pend:.0f} | {len(rows)} |")
    print()
    print("Medians of interleaved repeats; tsync-bench smr, paper layout, --lat-every 1000, "
          "ps only, the read interval set with TSYNC_BENCH_PS_READ_INTERVAL_US.")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
