#!/usr/bin/env python3
"""bench/cache/report_cache.py - table and plots for `tsync-bench cache`.

usage: report_cache.py CSV DIR [--command CMD]

Writes DIR/table.md (every row, and the issue's targets at 2 threads and 10 % sets:
ps >= 2.5x locked and >= 1.3x mcs-clock throughput, ps get p99 <= 1/5 of locked's, ps
within 15 % of ps-nocrp) and, with matplotlib, DIR/cache_mops.png (throughput against
threads, one panel per set %) and DIR/cache_get_p99.png (seed 000 Figs. 7-8).
Exit status 3: table written but no matplotlib; 2: bad input.
"""
import argparse
import csv
import os
import sys

HEADER = ["variant", "threads", "set_pct", "mops", "get_p99_ns", "set_p99_ns"]
ORDER = ["ps", "ps-nocrp", "mcs-clock", "locked"]


def load(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        head = next(r, None)
        if head != HEADER:
            raise ValueError(f"bad header {head!r}, expected {HEADER!r}")
        rows = []
        for rec in r:
            if not rec:
                continue
            if len(rec) != len(HEADER):
                raise ValueError(f"bad row {rec!r}")
            rows.append({"variant": rec[0], "threads": int(rec[1]), "set_pct": int(rec[2]),
                         "mops": float(rec[3]), "get_p99_ns": int(rec[4]),
                         "set_p99_ns": int(rec[5])})
    return rows


def targets(rows, threads=2, pct=10):
    """The issue's four targets at (threads, pct): list of (name, value, goal, met)."""
    at = {r["variant"]: r for r in rows if r["threads"] == threads and r["set_pct"] == pct}
    out = []
    ps = at.get("ps")
    if ps is None:
        return out
    if "locked" in at and at["locked"]["mops"] > 0:
        v = ps["mops"] / at["locked"]["mops"]
        out.append(("ps / locked throughput", v, ">= 2.5", v >= 2.5))
    if "mcs-clock" in at and at["mcs-clock"]["mops"] > 0:
        v = ps["mops"] / at["mcs-clock"]["mops"]
        out.append(("ps / mcs-clock throughput", v, ">= 1.3", v >= 1.3))
    if "locked" in at and at["locked"]["get_p99_ns"] > 0:
        v = ps["get_p99_ns"] / at["locked"]["get_p99_ns"]
        out.append(("ps get p99 / locked get p99", v, "<= 0.2", v <= 0.2))
    if "ps-nocrp" in at and at["ps-nocrp"]["mops"] > 0:
        v = ps["mops"] / at["ps-nocrp"]["mops"]
        out.append(("ps / ps-nocrp throughput", v, ">= 0.85", v >= 0.85))
    return out


def table(rows, command=None):
    lines = ["# tsync-bench cache", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += ["| variant | threads | set % | Mops/s | get p99 ns | set p99 ns |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    key = lambda r: (r["set_pct"], ORDER.index(r["variant"]) if r["variant"] in ORDER else 9,
                     r["threads"])
    for r in sorted(rows, key=key):
        lines.append(f"| {r['variant']} | {r['threads']} | {r['set_pct']} | {r['mops']:.3f} | "
                     f"{r['get_p99_ns']} | {r['set_p99_ns']} |")
    t = targets(rows)
    if t:
        lines += ["", "Targets at 2 threads, 10 % sets:", "",
                  "| target | measured | goal | met |", "| --- | ---: | --- | --- |"]
        for name, v, goal, met in t:
            lines.append(f"| {name} | {v:.2f} | {goal} | {'yes' if met else 'no'} |")
    return "\n".join(lines) + "\n"


def plots(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pcts = sorted({r["set_pct"] for r in rows})
    for metric, fname, ylabel in (("mops", "cache_mops.png", "Mops/s"),
                                  ("get_p99_ns", "cache_get_p99.png", "get p99 (ns)")):
        fig, axes = plt.subplots(1, len(pcts), figsize=(4 * len(pcts), 3.4), squeeze=False)
        for ax, p in zip(axes[0], pcts):
            for v in ORDER:
                pts = sorted((r["threads"], r[metric]) for r in rows
                             if r["variant"] == v and r["set_pct"] == p)
                if pts:
                    ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=v)
            ax.set_title(f"{p} % sets")
            ax.set_xlabel("threads")
            ax.set_ylabel(ylabel)
            if metric == "get_p99_ns":
                ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
        axes[0][0].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, fname), dpi=110)
        plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("outdir")
    ap.add_argument("--command")
    a = ap.parse_args(argv)
    try:
        rows = load(a.csv)
    except (OSError, ValueError) as e:
        print(f"report_cache.py: {e}", file=sys.stderr)
        return 2
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "table.md"), "w") as f:
        f.write(table(rows, a.command))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return 3
    plots(rows, a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
