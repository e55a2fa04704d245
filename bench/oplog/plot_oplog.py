#!/usr/bin/env python3
"""bench/oplog/plot_oplog.py - plots and a summary from `tsync-bench oplog` CSV output.

    plot_oplog.py CSV OUTDIR [--command CMD]

CSV header: benchmark,variant,threads,param,ops_per_ms,p99_ns (one benchmark per file).
Writes OUTDIR/summary_<benchmark>.md (always) and, with matplotlib,
OUTDIR/oplog_<benchmark>.png. Exit status: 0; 3 when matplotlib is missing (summary
written, no plot); 1 on bad input.

The summary holds the table, the targets of issue 4 and the read-frequency crossover:
  list     oplog-local-absorb / lockfree at the largest thread count (target >= 10x)
  counter  oplog-counter / atomic when reads are rarer than 1 in 1000 (target >= 3x)
  every benchmark: for each OpLog variant against each peer and thread count, the
  crossover N: OpLog is at least as fast as the peer for every measured read interval
  >= N (reads rarer than 1 in N); "always" if it wins at every N, "never" if it loses at
  the rarest one. For list, param 0 means "no reads" and counts as the rarest.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

FIELDS = ["benchmark", "variant", "threads", "param", "ops_per_ms", "p99_ns"]
TYPES = {"threads": int, "param": int, "ops_per_ms": float, "p99_ns": int}
PEERS = {"list": ["lockfree"], "counter": ["atomic", "percpu"], "rmap": ["mutex", "lockfree"]}
PARAM_NAME = {"list": "read every N iterations (0: never)", "counter": "read every N ops",
              "rmap": "truncate every K ops"}


def load(path):
    """Typed rows (later duplicates of a (variant, threads, param) win) and the benchmark."""
    benches = []

    def check(row):
        if row["benchmark"] not in PEERS:
            raise ValueError(f"unknown benchmark {row['benchmark']}")
        if benches and benches[0] != row["benchmark"]:
            raise ValueError(f"mixes benchmarks {benches[0]} and {row['benchmark']}")
        benches.append(row["benchmark"])

    rows = tp.load_csv(path, FIELDS, TYPES, key=("variant", "threads", "param"),
                       what="tsync-bench oplog", check=check)
    if not rows:
        raise tp.InputError(f"{path}: no rows")
    return benches[0], rows


def rarity(param):
    """Sort key: larger = rarer reads (0 = never)."""
    return math.inf if param == 0 else param


def crossover(rows, variant, peer, threads):
    """Smallest param p such that variant >= peer at every measured param with rarity >= p.
    Returns ("always"|"never"|p, [(param, ratio)...]) or None without common points."""
    a = {r["param"]: r["ops_per_ms"] for r in rows if r["variant"] == variant and r["threads"] == threads}
    b = {r["param"]: r["ops_per_ms"] for r in rows if r["variant"] == peer and r["threads"] == threads}
    common = sorted(set(a) & set(b), key=rarity)
    if not common:
        return None
    ratios = [(p, a[p] / b[p] if b[p] > 0 else math.inf) for p in common]
    if ratios[-1][1] < 1:
        return "never", ratios
    i = len(ratios) - 1
    while i > 0 and ratios[i - 1][1] >= 1:
        i -= 1
    return ("always" if i == 0 else ratios[i][0]), ratios


def fmt_param(p):
    return "never" if p == 0 else str(p)


def summary(bench, rows, command=None):
    threads = sorted({r["threads"] for r in rows})
    params = sorted({r["param"] for r in rows}, key=rarity)
    variants = tp.unique(r["variant"] for r in rows)
    get = {(r["variant"], r["threads"], r["param"]): r for r in rows}
    out = [f"# tsync-bench oplog {bench}", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out += [f"param: {PARAM_NAME[bench]}. ops/ms of all threads (p99 latency of one op, ns).", ""]
    cell = lambda r: f"{r['ops_per_ms']:.0f} ({r['p99_ns']})" if r else "-"
    out += tp.md_table(["variant", "threads"] + [f"N={fmt_param(p)}" for p in params],
                       [[v, t] + [cell(get.get((v, t, p))) for p in params]
                        for v in variants for t in threads])
    out.append("")
    tmax = threads[-1]
    out.append(f"## Targets (at {tmax} threads)")
    out.append("")
    if bench == "list":
        for p in params:
            a, b = get.get(("oplog-local-absorb", tmax, p)), get.get(("lockfree", tmax, p))
            if a and b and b["ops_per_ms"] > 0:
                ratio = a["ops_per_ms"] / b["ops_per_ms"]
                out.append(f"- oplog-local-absorb / lockfree, reads {fmt_param(p)}: {ratio:.2f}x "
                           f"(target >= 10x: {'met' if ratio >= 10 else 'NOT met'})")
    elif bench == "counter":
        rare = [p for p in params if p >= 1000]
        ratios = []
        for p in rare:
            a, b = get.get(("oplog-counter", tmax, p)), get.get(("atomic", tmax, p))
            if a and b and b["ops_per_ms"] > 0:
                ratios.append((p, a["ops_per_ms"] / b["ops_per_ms"]))
        for p, ratio in ratios:
            out.append(f"- oplog-counter / atomic, read every {p}: {ratio:.2f}x")
        if ratios:
            worst = min(r for _, r in ratios)
            out.append(f"- reads rarer than 1 in 1000: at least {worst:.2f}x "
                       f"(target >= 3x: {'met' if worst >= 3 else 'NOT met'})")
    else:
        out.append("- (no numeric target; see the crossover below)")
    out.append("")
    out.append("## Read-frequency crossover")
    out.append("")
    out.append("OpLog is at least as fast as the peer whenever reads are rarer than 1 in N:")
    out.append("")
    for v in variants:
        if not v.startswith("oplog"):
            continue
        for peer in PEERS[bench]:
            if peer not in variants:
                continue
            for t in threads:
                c = crossover(rows, v, peer, t)
                if c is None:
                    continue
                where, ratios = c
                rs = ", ".join(f"{fmt_param(p)}: {r:.2f}x" for p, r in ratios)
                w = (where if isinstance(where, str) else
                     "only without reads" if where == 0 else f"N >= {where}")
                out.append(f"- {v} vs {peer}, {t} threads: {w} (ratios by N: {rs})")
    out.append("")
    return "\n".join(out)


def plot(bench, rows, outdir, plt):
    threads = sorted({r["threads"] for r in rows})
    params = sorted({r["param"] for r in rows}, key=rarity)
    variants = tp.unique(r["variant"] for r in rows)
    path = os.path.join(outdir, f"oplog_{bench}.png")
    if bench == "list" and len(params) == 1:
        fig, (ax,) = tp.panel_row(plt, 1, 6, 4)
        for v in variants:
            ax.plot(*tp.series(rows, "threads", "ops_per_ms", variant=v), marker="o", label=v)
        tp.style_axes(ax, "OpLog list (OpLog (MIT TR 2014) Fig. 12)", "threads", "ops/ms",
                      xticks=threads)
        ax.legend(fontsize=8)
    else:
        fig, axes = tp.panel_row(plt, len(threads), 5, 4)
        # the rarest interval (0: never) plotted a decade right of the largest N
        xs = {p: (max(q for q in params if q) * 10 if p == 0 else p) for p in params} if any(params) else {0: 1}
        for ax, t in zip(axes, threads):
            for v in variants:
                ax.plot(*tp.series(rows, lambda r: xs[r["param"]], "ops_per_ms", variant=v,
                                   threads=t), marker="o", label=v)
            ax.set_xscale("log")
            tp.style_axes(ax, f"{bench}, {t} thread{'s' if t > 1 else ''}",
                          PARAM_NAME[bench] + (" (rightmost: never)" if 0 in params else ""),
                          "ops/ms")
            ax.legend(fontsize=7)
    return [tp.save(plt, fig, path)]


def main(argv=None):
    a = tp.csv_parser(__doc__, "plot_oplog.py", "--command").parse_args(argv)
    return tp.run("plot_oplog.py", lambda: load(a.csv), a.outdir,  # (benchmark, rows)
                  lambda d: {f"summary_{d[0]}.md": summary(*d, a.command)},
                  plots=lambda d, plt: plot(*d, a.outdir, plt))

if __name__ == "__main__":
    sys.exit(main())
