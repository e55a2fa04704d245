#!/usr/bin/env python3
"""bench/rlu/plot_rlu.py - table and plots from `tsync-bench rlu` CSV output.

    plot_rlu.py CSV OUTDIR [--command CMD] [--clock DESC]

Writes OUTDIR/table.md (always) and, with matplotlib, OUTDIR/rlu_list.png and
OUTDIR/rlu_hash.png: throughput (ops/us) against threads, one panel per update %,
one line per mechanism (the layout of seed 003 Figs. 5-6). Exit status 0; 3 when
matplotlib is missing (table written); 1 on bad input.
"""
import argparse
import csv
import os
import sys

FIELDS = ["structure", "mechanism", "threads", "update_pct", "ops_per_us", "aborts_per_kop"]
EXIT_NO_MATPLOTLIB = 3


class PlotError(Exception):
    pass


def load(path):
    """Typed rows of a tsync-bench rlu CSV (later duplicates of a configuration win)."""
    with open(path, newline="") as f:
        r = csv.reader(f)
        if next(r, None) != FIELDS:
            raise PlotError(f"{path}: not a tsync-bench rlu CSV")
        rows = {}
        for n, rec in enumerate(r, start=2):
            if not rec:
                continue
            if len(rec) != len(FIELDS):
                raise PlotError(f"{path}:{n}: {len(rec)} fields")
            try:
                row = dict(zip(FIELDS, rec))
                row["threads"] = int(row["threads"])
                row["update_pct"] = int(row["update_pct"])
                row["ops_per_us"] = float(row["ops_per_us"])
                row["aborts_per_kop"] = float(row["aborts_per_kop"])
            except ValueError as e:
                raise PlotError(f"{path}:{n}: {e}") from None
            rows[(row["structure"], row["mechanism"], row["threads"], row["update_pct"])] = row
    return list(rows.values())


def best_by_config(rows):
    """{(structure, threads, update_pct): mechanism with the highest ops/us}."""
    best = {}
    for r in rows:
        k = (r["structure"], r["threads"], r["update_pct"])
        if k not in best or r["ops_per_us"] > best[k]["ops_per_us"]:
            best[k] = r
    return {k: v["mechanism"] for k, v in best.items()}


def table(rows, command=None, clock=None):
    out = ["# tsync-bench rlu", ""]
    if command:
        out += [f"command: `{command}`", ""]
    if clock:
        out += [f"clock: {clock}", ""]
    best = best_by_config(rows)
    for s in sorted({r["structure"] for r in rows}):
        sr = [r for r in rows if r["structure"] == s]
        mechs = list(dict.fromkeys(r["mechanism"] for r in sr))
        cfgs = sorted({(r["update_pct"], r["threads"]) for r in sr})
        out += [f"## {s}: ops/us (aborts per 1000 ops)", "",
                "| updates | threads | " + " | ".join(mechs) + " | best |",
                "|---|---|" + "---|" * len(mechs) + "---|"]
        idx = {(r["mechanism"], r["update_pct"], r["threads"]): r for r in sr}
        for u, t in cfgs:
            cells = []
            for m in mechs:
                r = idx.get((m, u, t))
                cells.append("-" if r is None else
                             f"{r['ops_per_us']:.3f}" + (f" ({r['aborts_per_kop']:.1f})"
                                                         if r["aborts_per_kop"] else ""))
            out.append(f"| {u}% | {t} | " + " | ".join(cells) + f" | {best[(s, t, u)]} |")
        out.append("")
    return "\n".join(out)


def plot(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    for s in sorted({r["structure"] for r in rows}):
        sr = [r for r in rows if r["structure"] == s]
        ups = sorted({r["update_pct"] for r in sr})
        fig, axes = plt.subplots(1, len(ups), figsize=(4.2 * len(ups), 3.6), squeeze=False)
        for ax, u in zip(axes[0], ups):
            for m in dict.fromkeys(r["mechanism"] for r in sr):
                pts = sorted((r["threads"], r["ops_per_us"]) for r in sr
                             if r["mechanism"] == m and r["update_pct"] == u)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
            ax.set_title(f"{s}, {u}% updates")
            ax.set_xlabel("threads")
            ax.set_ylabel("ops/us")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(outdir, f"rlu_{s}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("outdir")
    ap.add_argument("--command")
    ap.add_argument("--clock")
    a = ap.parse_args(argv)
    try:
        rows = load(a.csv)
    except (OSError, PlotError) as e:
        print(f"plot_rlu.py: {e}", file=sys.stderr)
        return 1
    if not rows:
        print("plot_rlu.py: no rows", file=sys.stderr)
        return 1
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "table.md"), "w") as f:
        f.write(table(rows, a.command, a.clock) + "\n")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return EXIT_NO_MATPLOTLIB
    plot(rows, a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
