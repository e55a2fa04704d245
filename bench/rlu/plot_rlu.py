#!/usr/bin/env python3
"""bench/rlu/plot_rlu.py - table and plots from `tsync-bench rlu` CSV output.

    plot_rlu.py CSV OUTDIR [--command CMD] [--clock DESC]

Writes OUTDIR/table.md (always) and, with matplotlib, OUTDIR/rlu_list.png and
OUTDIR/rlu_hash.png: throughput (ops/us) against threads, one panel per update %,
one line per mechanism (the layout of the RLU study (Appl. Sci. 2022)
Figs. 5-6). Exit status 0; 3 when
matplotlib is missing (table written); 1 on bad input.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

FIELDS = ["structure", "mechanism", "threads", "update_pct", "ops_per_us", "aborts_per_kop"]
TYPES = {"threads": int, "update_pct": int, "ops_per_us": float, "aborts_per_kop": float}


def load(path):
    """Typed rows of a tsync-bench rlu CSV (later duplicates of a configuration win)."""
    return tp.load_csv(path, FIELDS, TYPES, what="tsync-bench rlu",
                       key=("structure", "mechanism", "threads", "update_pct"))


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
        mechs = tp.unique(r["mechanism"] for r in sr)
        cfgs = sorted({(r["update_pct"], r["threads"]) for r in sr})
        idx = tp.index(sr, "mechanism", "update_pct", "threads")

        def cell(r):
            return "-" if r is None else f"{r['ops_per_us']:.3f}" + (
                f" ({r['aborts_per_kop']:.1f})" if r["aborts_per_kop"] else "")
        out += [f"## {s}: ops/us (aborts per 1000 ops)", ""]
        out += tp.md_table(["updates", "threads"] + mechs + ["best"],
                           [[f"{u}%", t] + [cell(idx.get((m, u, t))) for m in mechs]
                            + [best[(s, t, u)]] for u, t in cfgs])
        out.append("")
    return "\n".join(out)


def plot(rows, outdir, plt):
    written = []
    for s in sorted({r["structure"] for r in rows}):
        sr = [r for r in rows if r["structure"] == s]
        ups = sorted({r["update_pct"] for r in sr})
        fig, axes = tp.panel_row(plt, len(ups), 4.2, 3.6)
        for ax, u in zip(axes, ups):
            for m in tp.unique(r["mechanism"] for r in sr):
                ax.plot(*tp.series(sr, "threads", "ops_per_us", mechanism=m, update_pct=u),
                        marker="o", label=m)
            tp.style_axes(ax, f"{s}, {u}% updates", "threads", "ops/us")
            ax.set_ylim(bottom=0)
        axes[0].legend(fontsize=8)
        written.append(tp.save(plt, fig, os.path.join(outdir, f"rlu_{s}.png")))
    return written


def main(argv=None):
    a = tp.csv_parser(__doc__, "plot_rlu.py", "--command", "--clock").parse_args(argv)
    return tp.run("plot_rlu.py", lambda: load(a.csv), a.outdir,
                  lambda rows: {"table.md": table(rows, a.command, a.clock) + "\n"},
                  plots=lambda rows, plt: plot(rows, a.outdir, plt))


if __name__ == "__main__":
    sys.exit(main())
