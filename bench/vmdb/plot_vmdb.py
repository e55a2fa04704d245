#!/usr/bin/env python3
"""bench/vmdb/plot_vmdb.py DIR - table and plots of `tsync-bench vmdb` (ParSec (EuroSys 2016) §5.3).

Reads DIR/vmdb.csv, what `tsync-bench vmdb --out DIR` wrote (one row per design,
backend, layout, thread count and operation; the rows of several backends and layouts
may share the file), and writes:

  DIR/table.md                   per backend and layout, per operation (map and unmap of
                                 1 and 1024 pages, lookup, alias, revoke, the locked
                                 designs' lock waits): every design's mean, p50, p99,
                                 p99.9 and longest latency per thread count, its mean
                                 against ps's and against its own at 1 thread; then the
                                 peers' mean, p50 and p99.9 over ps's at the largest
                                 thread count
  DIR/vmdb_<backend>_<layout>.png       mean latency against threads, a panel per
                                 operation, a line per design (log scale; ParSec Fig. 9's)
  DIR/vmdb_<backend>_<layout>_tail.png  p50 / p99 / p99.9 per design at the largest thread
                                 count, a panel per operation (the tail, Fig. 10)

With --doc FILE, the targets of the study (targets() below) also replace FILE's block
between the lines <!-- vmdb:targets --> and <!-- /vmdb:targets -->.

Exits 0; 3 when matplotlib is missing (table.md is written first); 1 when the CSV is
missing or malformed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

FIELDS = ["design", "backend", "layout", "threads", "op", "pages", "count", "avg_ns", "p50_ns",
          "p99_ns", "p999_ns", "max_ns"]
TYPES = {**dict.fromkeys(("threads", "pages", "count"), int),
         **dict.fromkeys(("avg_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns"), float)}
NO_MATPLOTLIB = tp.NO_MATPLOTLIB
DESIGNS = ["ps", "rwlock", "global-lock", "frame-lock", "frame-ticket", "urcu", "linux",
           "ns-lookup", "ns-walk", "bare-trie"]
# the designs that take locks (their rows include the lock waits, op "wait")
LOCKED = ["rwlock", "global-lock", "frame-lock", "frame-ticket"]
OPS = ["map", "unmap", "lookup", "alias", "revoke", "wait"]
BACKENDS = ["model", "memfd"]
LAYOUTS = ["shared", "private"]
REFERENCE = "ps"
DOC_BLOCK = tp.block_markers("vmdb", "targets")


def load(path):
    """Typed rows of a tsync-bench vmdb CSV; a later row of the same configuration wins."""
    return tp.load_csv(path, FIELDS, TYPES, what="tsync-bench vmdb",
                       key=("design", "backend", "layout", "threads", "op", "pages"))


def ordered(names, known=DESIGNS):
    return tp.ordered(names, known)


def op_key(op_pages):
    op, pages = op_pages
    return (OPS.index(op) if op in OPS else len(OPS), op, pages)


def op_title(op, pages):
    if op == "revoke":
        return f"revoke ({pages} mappings)"
    if op == "wait":
        return "lock wait"
    return f"{op}, {pages} page" + ("s" if pages != 1 else "")


def fmt_ns(x):
    """A latency in the unit that suits it."""
    if x is None:
        return "n/a"
    if x < 1e3:
        return f"{x:.0f} ns"
    if x < 1e6:
        return f"{x / 1e3:.1f} us"
    return f"{x / 1e6:.2f} ms"


def ratio(a, b):
    """a / b as "1.23x", n/a without both."""
    return tp.fmt_x(tp.ratio(a, b))


def index(rows):
    """{(backend, layout): {(op, pages): {(design, threads): row}}}."""
    out = {}
    for r in rows:
        out.setdefault((r["backend"], r["layout"]), {}).setdefault((r["op"], r["pages"]), {})[
            (r["design"], r["threads"])] = r
    return out


def groups(idx):
    """The (backend, layout) keys of idx in report order."""
    return sorted(idx, key=lambda g: (BACKENDS.index(g[0]) if g[0] in BACKENDS else 99, g[0],
                                      LAYOUTS.index(g[1]) if g[1] in LAYOUTS else 99, g[1]))


def group_title(g):
    return f"{g[0]} backend, {g[1]} layout"


def table(rows):
    idx = index(rows)
    out = ["# tsync-bench vmdb: the mapping database, ParSec (EuroSys 2016) §5.3", "",
           "How it was made: COMMAND.txt beside this file (make bench).", ""]
    out += ["Latency of one operation: the mean and histogram quantiles (within 6.25 %) over",
            "every recorded round and thread. *vs ps*: the design's mean over ps's at the same",
            "thread count (above 1: slower than ps). *vs 1 thread*: its mean over its own at",
            "1 thread (1 = perfect scaling). Layout shared: every thread works in one address",
            "space; private: each in its own (linux's threads share one mm in both). *lock",
            "wait*: the locked designs' waits for a lock (none at 1 thread).", ""]
    for grp in groups(idx):
        ops = idx[grp]
        out += [f"## {group_title(grp)}", ""]
        for op_pages in sorted(ops, key=op_key):
            cells = ops[op_pages]
            body = []
            for d in ordered({k[0] for k in cells}):
                for t in sorted(k[1] for k in cells if k[0] == d):
                    r = cells[(d, t)]
                    ref = cells.get((REFERENCE, t))
                    one = cells.get((d, 1))
                    body.append([d, t, r["count"]]
                                + [fmt_ns(r[q]) for q in ("avg_ns", "p50_ns", "p99_ns", "p999_ns",
                                                          "max_ns")]
                                + [ratio(r["avg_ns"], ref["avg_ns"] if ref else None),
                                   ratio(r["avg_ns"], one["avg_ns"] if one else None)])
            out += [f"### {op_title(*op_pages)}", ""]
            out += tp.md_table(["design", "threads", "count", "mean", "p50", "p99", "p99.9",
                                "max", "vs ps", "vs 1 thread"], body, "l" + "r" * 9, spaced=True)
            out.append("")
        out += summary(group_title(grp), ops)
    return "\n".join(out).rstrip() + "\n"


def summary(title, ops):
    """Each peer's mean, p50 and p99.9 over ps's at the largest thread count, per operation
    (the mean carries the tail: a preempted or starved operation weighs in it; the p50
    does not)."""
    tmax = max((k[1] for cells in ops.values() for k in cells), default=None)
    if tmax is None:
        return []
    cols = [c for c in sorted(ops, key=op_key) if c[0] != "wait"]
    peers = ordered({k[0] for cells in ops.values() for k in cells if k[0] != REFERENCE})
    if not peers or not any((REFERENCE, tmax) in ops[c] for c in cols):
        return []
    out = []
    for col, what in (("avg_ns", "Mean"), ("p50_ns", "p50"), ("p999_ns", "p99.9")):
        body = []
        for d in peers:
            vals = []
            for c in cols:
                r, ref = ops[c].get((d, tmax)), ops[c].get((REFERENCE, tmax))
                vals.append(ratio(r[col], ref[col]) if r and ref else "n/a")
            body.append([d] + vals)
        out += [f"### {what} latency over ps's at {tmax} thread(s) ({title})", ""]
        out += tp.md_table(["design"] + [op_title(*c) for c in cols], body,
                           "l" + "r" * len(cols), spaced=True)
        out.append("")
    return out


def targets(rows, backend="model", layout="shared", threads=2):
    """The issue's targets, as Markdown lines, from the rows of `backend` and `layout` at
    `threads` threads (the largest thread count present if there is no such row): ps's
    map and unmap of one page against rwlock's and global-lock's (p99.9 at most 1/3,
    mean at most 1/2), its throughput against every design's (a thread issues
    operations back to back, so per-thread throughput is 1 / mean latency), the ratios
    against frame-lock and frame-ticket and the locked designs' longest lock wait for
    context, the namespace walk against a bare radix-trie walk (within 1.5x), and
    Linux; then each design's scaling, per backend and layout."""
    ops = index(rows).get((backend, layout), {})
    present = sorted({k[1] for cells in ops.values() for k in cells})
    if not present:
        return []
    t = threads if threads in present else present[-1]

    def cell(design, op, pages):
        return ops.get((op, pages), {}).get((design, t))

    out = [f"At {t} thread(s), {backend} backend, {layout} layout. *ps / peer*: ps's figure "
           "over the peer's (below 1: ps is lower); throughput from the mean (1 / mean per "
           "thread).", "",
           tp.md_row(["target", "measure", "ps / peer", "goal", "met"]), tp.md_rule("llrrl", True)]

    def line(what, measure, num, den, goal, lower=True):
        if num is None or den is None or not den:
            out.append(f"| {what} | {measure} | n/a | {goal} | n/a |")
            return
        r = num / den
        g = float(goal.lstrip("<>= ").rstrip("x"))
        ok = r <= g if lower else r >= g
        out.append(f"| {what} | {measure} | {r:.3g}x | {goal} | {'yes' if ok else 'no'} |")

    def context(what, measure, num, den):
        if num is not None and den:
            out.append(f"| {what} | {measure} | {num / den:.3g}x | (context) | |")

    peers = ordered({k[0] for cells in ops.values() for k in cells}
                    - {"ps", "ns-lookup", "ns-walk", "bare-trie"})
    for op in ("map", "unmap"):
        ps = cell("ps", op, 1)
        for peer in ("rwlock", "global-lock"):
            pr = cell(peer, op, 1)
            line(f"{op} 1 page vs {peer}", "p99.9", ps and ps["p999_ns"], pr and pr["p999_ns"],
                 "<= 0.33x")
            line(f"{op} 1 page vs {peer}", "mean", ps and ps["avg_ns"], pr and pr["avg_ns"],
                 "<= 0.50x")
        for peer in peers:
            pr = cell(peer, op, 1)
            if pr is None:
                continue
            # throughput ratio ps / peer = peer mean / ps mean
            line(f"{op} 1 page vs {peer}", "throughput", pr["avg_ns"], ps and ps["avg_ns"],
                 ">= 1.00x", lower=False)
        for peer in ("frame-lock", "frame-ticket"):
            pr = cell(peer, op, 1)
            if ps and pr:
                for measure, col in (("mean", "avg_ns"), ("p99", "p99_ns"), ("p99.9", "p999_ns")):
                    context(f"{op} 1 page vs {peer}", measure, ps[col], pr[col])
    walk, bare, sect = (cell(d, "lookup", 1) for d in ("ns-walk", "bare-trie", "ns-lookup"))
    line("lookup: namespace walk vs bare trie walk", "mean", walk and walk["avg_ns"],
         bare and bare["avg_ns"], "<= 1.50x")
    line("lookup: namespace walk vs bare trie walk", "p50", walk and walk["p50_ns"],
         bare and bare["p50_ns"], "<= 1.50x")
    if sect and bare:
        context("lookup: section + walk vs bare trie walk", "mean", sect["avg_ns"],
                bare["avg_ns"])
    for op in ("map", "unmap"):
        ps, lx = cell("ps", op, 1), cell("linux", op, 1)
        if ps and lx:
            for measure, col in (("mean", "avg_ns"), ("p50", "p50_ns")):
                context(f"{op} 1 page vs Linux mmap/munmap", measure, ps[col], lx[col])
    out += waits(ops, t)
    out += scaling(rows, t)
    return out


def waits(ops, t):
    """The locked designs' lock waits at t threads: how many, the mean, the p99.9 and the
    longest (an unfair lock shows as a rare, very long wait)."""
    cells = ops.get(("wait", 0), {})
    lines = [f"| {d} | {r['count']} | {fmt_ns(r['avg_ns'])} | {fmt_ns(r['p999_ns'])} | "
             f"{fmt_ns(r['max_ns'])} |"
             for d in ordered({k[0] for k in cells}) for r in [cells.get((d, t))] if r]
    if not lines:
        return []
    return ["", f"Lock waits at {t} thread(s): acquisitions that found their lock taken.", "",
            tp.md_row(["design", "waits", "mean", "p99.9", "longest"]),
            tp.md_rule("lrrrr", True)] + lines


def scaling(rows, t):
    """Per backend and layout, each design's mean map and unmap of one page at t threads
    over its own at 1 thread (1.00: every thread as fast as one alone): the memfd rows
    show what the kernel's mmap lock, which every mmap of the process takes, costs the
    database."""
    idx = index(rows)
    out = []
    for grp in groups(idx):
        ops = idx[grp]
        lines = []
        for d in ordered({k[0] for c in ops.values() for k in c}):
            vals = []
            for op in ("map", "unmap"):
                cells = ops.get((op, 1), {})
                a, b = cells.get((d, t)), cells.get((d, 1))
                vals.append(f"{a['avg_ns'] / b['avg_ns']:.2f}x" if a and b else "n/a")
            if vals != ["n/a", "n/a"]:
                lines.append(f"| {d} | " + " | ".join(vals) + " |")
        if lines and t != 1:
            out += ["", f"Scaling, {group_title(grp)}: mean at {t} threads over the same "
                    "design's at 1 thread (1.00x: no slowdown).", "",
                    tp.md_row(["design", "map 1 page", "unmap 1 page"]), tp.md_rule("lrr", True)] + lines
    return out


def color_of(design):
    return tp.color_of(design, DESIGNS)


def plots(rows, outdir, plt):
    idx = index(rows)
    written = []
    for grp in groups(idx):
        ops = idx[grp]
        name = f"vmdb_{grp[0]}_{grp[1]}"
        cols = sorted(ops, key=op_key)
        # mean against threads
        fig, axes = tp.panel_grid(plt, len(cols), 4, 4, 3.2)
        for ax, c in zip(axes, cols):
            cells = ops[c]
            for d in ordered({k[0] for k in cells}):
                xs, ys = tp.series([{"t": t, "us": r["avg_ns"] / 1e3}
                                    for (dd, t), r in cells.items() if dd == d], "t", "us")
                ax.plot(xs, ys, marker="o", label=d, color=color_of(d))
            tp.style_axes(ax, op_title(*c), "threads", "mean latency (us)", ylog=True,
                          xticks=sorted({k[1] for k in cells}), fontsize=10)
        # one legend for every panel: a design keeps its colour everywhere
        tp.fig_legend(fig, axes, order=DESIGNS, loc="lower right", ncol=2)
        fig.suptitle(f"tsync-bench vmdb, {group_title(grp)}: mean latency per operation")
        written.append(tp.save(plt, fig, os.path.join(outdir, f"{name}.png")))
        # the tail at the largest thread count
        tmax = max(k[1] for cells in ops.values() for k in cells)
        fig, axes = tp.panel_grid(plt, len(cols), 4, 4, 3.2)
        for ax, c in zip(axes, cols):
            cells = ops[c]
            ds = [d for d in ordered({k[0] for k in cells}) if (d, tmax) in cells]
            w = 0.27
            for j, (q, label) in enumerate((("p50_ns", "p50"), ("p99_ns", "p99"),
                                            ("p999_ns", "p99.9"))):
                ax.bar([i + (j - 1) * w for i in range(len(ds))],
                       [cells[(d, tmax)][q] / 1e3 for d in ds], w, label=label)
            ax.set_xticks(range(len(ds)))
            ax.set_xticklabels(ds, rotation=30, fontsize=8)
            tp.style_axes(ax, op_title(*c), None, "latency (us)", ylog=True, fontsize=10,
                          grid="y")
        axes[0].legend(fontsize=8)
        fig.suptitle(f"tsync-bench vmdb, {group_title(grp)}: tail latency at {tmax} thread(s)")
        written.append(tp.save(plt, fig, os.path.join(outdir, f"{name}_tail.png")))
    return written


def main(argv=None):
    ap = tp.parser(__doc__, "plot_vmdb.py")
    ap.add_argument("dir", help="the --out directory: reads DIR/vmdb.csv, writes there")
    ap.add_argument("--csv", help="read this CSV instead of DIR/vmdb.csv")
    ap.add_argument("--doc", help="refresh this Markdown file's vmdb:targets block")
    a = ap.parse_args(argv)
    doc = (a.doc, *DOC_BLOCK, lambda rows: "\n".join(targets(rows))) if a.doc else None
    return tp.run("plot_vmdb", lambda: load(a.csv or os.path.join(a.dir, "vmdb.csv")), a.dir,
                  lambda rows: {"table.md": table(rows)}, doc=doc,
                  plots=lambda rows, plt: plots(rows, a.dir, plt))


if __name__ == "__main__":
    sys.exit(main())
