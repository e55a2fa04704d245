#!/usr/bin/env python3
"""bench/cache/plot_cache.py - table and plots for `tsync-bench cache`.

usage: plot_cache.py CSV DIR [--command CMD]

Writes DIR/table.md (every row, and the issue's targets at 2 threads and 10 % sets:
ps >= 2.5x locked and >= 1.3x mcs-clock throughput, ps get p99 <= 1/5 of locked's, ps
within 15 % of ps-nocrp) and, with matplotlib, DIR/cache_mops.png (throughput against
threads, one panel per set %) and DIR/cache_get_p99.png (ParSec (EuroSys 2016)
Figs. 7-8).
Exit status 3: table written but no matplotlib; 2: bad input (BAD_INPUT).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

HEADER = ["variant", "threads", "set_pct", "mops", "get_p99_ns", "set_p99_ns"]
TYPES = {"threads": int, "set_pct": int, "mops": float, "get_p99_ns": int, "set_p99_ns": int}
ORDER = ["ps", "ps-nocrp", "mcs-clock", "locked"]
BAD_INPUT = 2  # what cache_bench.c's caller has always seen


def load(path):
    """Every row of a tsync-bench cache CSV (repeats kept), typed."""
    return tp.load_csv(path, HEADER, TYPES, what="tsync-bench cache")


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
    key = lambda r: (r["set_pct"], ORDER.index(r["variant"]) if r["variant"] in ORDER else 9,
                     r["threads"])
    lines += tp.md_table(["variant", "threads", "set %", "Mops/s", "get p99 ns", "set p99 ns"],
                         [[r["variant"], r["threads"], r["set_pct"], f"{r['mops']:.3f}",
                           r["get_p99_ns"], r["set_p99_ns"]] for r in sorted(rows, key=key)],
                         "lrrrrr", spaced=True)
    t = targets(rows)
    if t:
        lines += ["", "Targets at 2 threads, 10 % sets:", ""]
        lines += tp.md_table(["target", "measured", "goal", "met"],
                             [[name, f"{v:.2f}", goal, "yes" if met else "no"]
                              for name, v, goal, met in t], "lrll", spaced=True)
    return "\n".join(lines) + "\n"


def plots(rows, outdir, plt):
    pcts = sorted({r["set_pct"] for r in rows})
    written = []
    for metric, fname, ylabel in (("mops", "cache_mops.png", "Mops/s"),
                                  ("get_p99_ns", "cache_get_p99.png", "get p99 (ns)")):
        fig, axes = tp.panel_row(plt, len(pcts), 4, 3.4)
        for ax, p in zip(axes, pcts):
            for v in ORDER:
                xs, ys = tp.series(rows, "threads", metric, variant=v, set_pct=p)
                if xs:
                    ax.plot(xs, ys, marker="o", label=v)
            tp.style_axes(ax, f"{p} % sets", "threads", ylabel, ylog=metric == "get_p99_ns")
        axes[0].legend()
        written.append(tp.save(plt, fig, os.path.join(outdir, fname)))
    return written


def main(argv=None):
    a = tp.csv_parser(__doc__, "plot_cache.py", "--command").parse_args(argv)
    return tp.run("plot_cache.py", lambda: load(a.csv), a.outdir,
                  lambda rows: {"table.md": table(rows, a.command)},
                  plots=lambda rows, plt: plots(rows, a.outdir, plt), bad_input=BAD_INPUT)


if __name__ == "__main__":
    sys.exit(main())
