#!/usr/bin/env python3
"""bench/vmdb/plot_vmdb.py DIR - table and plots of `tsync-bench vmdb` (ParSec §5.3).

Reads DIR/vmdb.csv, what `tsync-bench vmdb --out DIR` wrote (one row per design,
backend, thread count and operation; the rows of several backends may share the file),
and writes:

  DIR/table.md                   per backend and operation (map and unmap of 1 and 1024
                                 pages, lookup, alias, revoke): every design's mean, p50,
                                 p99 and p99.9 latency per thread count, its mean against
                                 ps's and against its own at 1 thread; then the peers'
                                 mean and p50 over ps's at the largest thread count
  DIR/vmdb_<backend>.png         mean latency against threads, a panel per operation, a
                                 line per design (log scale; ParSec Fig. 9's layout)
  DIR/vmdb_<backend>_tail.png    p50 / p99 / p99.9 per design at the largest thread count,
                                 a panel per operation (the tail, Fig. 10)

With --doc FILE, the targets of the study (targets() below) also replace FILE's block
between the lines <!-- vmdb:targets --> and <!-- /vmdb:targets -->.

Exits 0; 3 when matplotlib is missing (table.md is written first); 1 when the CSV is
missing or malformed.
"""
import argparse
import csv
import math
import os
import sys

FIELDS = ["design", "backend", "threads", "op", "pages", "count", "avg_ns", "p50_ns",
          "p99_ns", "p999_ns"]
NO_MATPLOTLIB = 3
DESIGNS = ["ps", "global-lock", "frame-lock", "urcu", "linux", "ns-lookup", "ns-walk",
           "bare-trie"]
OPS = ["map", "unmap", "lookup", "alias", "revoke"]
BACKENDS = ["model", "memfd"]
REFERENCE = "ps"


class PlotError(Exception):
    pass


def load(path):
    """Typed rows of a tsync-bench vmdb CSV; a later row of the same configuration wins."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise PlotError(f"{path}: {e.strerror}") from None
    with f:
        r = csv.reader(f)
        if next(r, None) != FIELDS:
            raise PlotError(f"{path}: not a tsync-bench vmdb CSV (header {','.join(FIELDS)})")
        rows = {}
        for n, rec in enumerate(r, start=2):
            if not rec:
                continue
            if len(rec) != len(FIELDS):
                raise PlotError(f"{path}:{n}: {len(rec)} fields, expected {len(FIELDS)}")
            row = dict(zip(FIELDS, rec))
            try:
                for k in ("threads", "pages", "count"):
                    row[k] = int(row[k])
                for k in ("avg_ns", "p50_ns", "p99_ns", "p999_ns"):
                    row[k] = float(row[k])
            except ValueError as e:
                raise PlotError(f"{path}:{n}: {e}") from None
            rows[(row["design"], row["backend"], row["threads"], row["op"], row["pages"])] = row
    return list(rows.values())


def ordered(names, known):
    """names in the order of `known`, the others after, alphabetically."""
    names = set(names)
    return [n for n in known if n in names] + sorted(names - set(known))


def op_key(op_pages):
    op, pages = op_pages
    return (OPS.index(op) if op in OPS else len(OPS), op, pages)


def op_title(op, pages):
    if op == "revoke":
        return f"revoke ({pages} mappings)"
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
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def index(rows):
    """{backend: {(op, pages): {(design, threads): row}}}."""
    out = {}
    for r in rows:
        out.setdefault(r["backend"], {}).setdefault((r["op"], r["pages"]), {})[
            (r["design"], r["threads"])] = r
    return out


def table(rows):
    idx = index(rows)
    out = ["# tsync-bench vmdb: the mapping database, ParSec (EuroSys 2016) §5.3", "",
           "How it was made: COMMAND.txt beside this file (make bench).", ""]
    out += ["Latency of one operation: the mean and histogram quantiles (within 6.25 %) over",
            "every recorded round and thread. *vs ps*: the design's mean over ps's at the same",
            "thread count (above 1: slower than ps). *vs 1 thread*: its mean over its own at",
            "1 thread (1 = perfect scaling). Each thread maps into its own address space;",
            "linux's threads share one mm.", ""]
    for backend in ordered(idx, BACKENDS):
        ops = idx[backend]
        out += [f"## {backend} backend", ""]
        for op_pages in sorted(ops, key=op_key):
            cells = ops[op_pages]
            out += [f"### {op_title(*op_pages)}", "",
                    "| design | threads | count | mean | p50 | p99 | p99.9 | vs ps | vs 1 thread |",
                    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for d in ordered({k[0] for k in cells}, DESIGNS):
                for t in sorted(k[1] for k in cells if k[0] == d):
                    r = cells[(d, t)]
                    ref = cells.get((REFERENCE, t))
                    one = cells.get((d, 1))
                    out.append(
                        f"| {d} | {t} | {r['count']} | {fmt_ns(r['avg_ns'])} | "
                        f"{fmt_ns(r['p50_ns'])} | {fmt_ns(r['p99_ns'])} | {fmt_ns(r['p999_ns'])} | "
                        f"{ratio(r['avg_ns'], ref['avg_ns'] if ref else None)} | "
                        f"{ratio(r['avg_ns'], one['avg_ns'] if one else None)} |")
            out.append("")
        out += summary(backend, ops)
    return "\n".join(out).rstrip() + "\n"


def summary(backend, ops):
    """Each peer's mean, then its p50, over ps's at the largest thread count, per operation
    (the mean carries the tail: a preempted operation weighs in it; the p50 does not)."""
    tmax = max((k[1] for cells in ops.values() for k in cells), default=None)
    if tmax is None:
        return []
    cols = sorted(ops, key=op_key)
    peers = ordered({k[0] for cells in ops.values() for k in cells if k[0] != REFERENCE},
                    DESIGNS)
    if not peers or not any((REFERENCE, tmax) in ops[c] for c in cols):
        return []
    out = []
    for col, what in (("avg_ns", "Mean"), ("p50_ns", "p50")):
        out += [f"### {what} latency over ps's at {tmax} thread(s) ({backend})", "",
                "| design | " + " | ".join(op_title(*c) for c in cols) + " |",
                "| --- |" + " ---: |" * len(cols)]
        for d in peers:
            vals = []
            for c in cols:
                r, ref = ops[c].get((d, tmax)), ops[c].get((REFERENCE, tmax))
                vals.append(ratio(r[col], ref[col]) if r and ref else "n/a")
            out.append(f"| {d} | " + " | ".join(vals) + " |")
        out.append("")
    return out


def targets(rows, backend="model", threads=2):
    """The issue's targets, as Markdown lines, from the rows of `backend` at `threads`
    threads (the largest thread count present if there is no such row): ps's p99 of
    map and unmap of one page against the locked designs' (at most 1/3 of global-lock's,
    1/2 of frame-lock's), its throughput against theirs (a thread issues operations back
    to back, so per-thread throughput is 1 / mean latency), the namespace walk against a
    bare radix-trie walk (within 1.5x), and Linux for context."""
    ops = index(rows).get(backend, {})
    present = sorted({k[1] for cells in ops.values() for k in cells})
    if not present:
        return []
    t = threads if threads in present else present[-1]

    def cell(design, op, pages):
        return ops.get((op, pages), {}).get((design, t))

    out = [f"At {t} thread(s), {backend} backend. *ps / peer*: ps's figure over the peer's "
           "(below 1: ps is lower); throughput from the mean (1 / mean per thread).", "",
           "| target | measure | ps / peer | goal | met |", "| --- | --- | ---: | ---: | --- |"]

    def line(what, measure, num, den, goal, lower=True):
        if num is None or den is None or not den:
            out.append(f"| {what} | {measure} | n/a | {goal} | n/a |")
            return
        r = num / den
        g = float(goal.lstrip("<>= ").rstrip("x"))
        ok = r <= g if lower else r >= g
        out.append(f"| {what} | {measure} | {r:.2f}x | {goal} | {'yes' if ok else 'no'} |")

    def context(what, measure, num, den):
        if num is not None and den:
            out.append(f"| {what} | {measure} | {num / den:.3g}x | (context) | |")

    for op in ("map", "unmap"):
        ps = cell("ps", op, 1)
        for peer, goal in (("global-lock", "<= 0.33x"), ("frame-lock", "<= 0.50x")):
            pr = cell(peer, op, 1)
            line(f"{op} 1 page vs {peer}", "p99", ps and ps["p99_ns"], pr and pr["p99_ns"], goal)
        for peer in ("global-lock", "frame-lock"):
            pr = cell(peer, op, 1)
            # throughput ratio ps / peer = peer mean / ps mean
            line(f"{op} 1 page vs {peer}", "throughput", pr and pr["avg_ns"],
                 ps and ps["avg_ns"], ">= 1.00x", lower=False)
        for peer in ("global-lock", "frame-lock"):
            pr = cell(peer, op, 1)
            if ps and pr:
                context(f"{op} 1 page vs {peer}", "p99.9", ps["p999_ns"], pr["p999_ns"])
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
    out += scaling(rows, t)
    return out


def scaling(rows, t):
    """Per backend, each design's mean map and unmap of one page at t threads over its
    own at 1 thread (1.00: every thread as fast as one alone): the memfd rows show what
    the kernel's mmap lock, which every mmap of the process takes, costs the database."""
    idx = index(rows)
    out = []
    for backend in ordered(idx, BACKENDS):
        ops = idx[backend]
        lines = []
        for d in ordered({k[0] for c in ops.values() for k in c}, DESIGNS):
            vals = []
            for op in ("map", "unmap"):
                cells = ops.get((op, 1), {})
                a, b = cells.get((d, t)), cells.get((d, 1))
                vals.append(f"{a['avg_ns'] / b['avg_ns']:.2f}x" if a and b else "n/a")
            if vals != ["n/a", "n/a"]:
                lines.append(f"| {d} | " + " | ".join(vals) + " |")
        if lines and t != 1:
            out += ["", f"Scaling, {backend} backend: mean at {t} threads over the same design's "
                    "at 1 thread (1.00x: no slowdown).", "",
                    "| design | map 1 page | unmap 1 page |", "| --- | ---: | ---: |"] + lines
    return out


def replace_block(doc, name, text):
    """Replace doc's block between the vmdb:name markers with text (markers kept)."""
    begin, end = f"<!-- vmdb:{name} -->", f"<!-- /vmdb:{name} -->"
    i, j = doc.find(begin), doc.find(end)
    if i < 0 or j < i:
        raise ValueError(f"no {begin} ... {end} block")
    return doc[:i + len(begin)] + "\n" + text.strip() + "\n" + doc[j:]


def color_of(design):
    """A fixed colour per design (matplotlib's default cycle), the same in every panel."""
    cycle = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"]
    i = DESIGNS.index(design) if design in DESIGNS else len(DESIGNS) + sum(map(ord, design))
    return cycle[i % len(cycle)]


def plots(rows, outdir, plt):
    idx = index(rows)
    written = []
    for backend in ordered(idx, BACKENDS):
        ops = idx[backend]
        cols = sorted(ops, key=op_key)
        n = len(cols)
        ncol = min(4, n)
        nrow = math.ceil(n / ncol)
        # mean against threads
        fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.2 * nrow), squeeze=False)
        for ax, c in zip(axes.flat, cols):
            cells = ops[c]
            for d in ordered({k[0] for k in cells}, DESIGNS):
                pts = sorted((t, cells[(d, t)]["avg_ns"]) for (dd, t) in cells if dd == d)
                ax.plot([p[0] for p in pts], [p[1] / 1e3 for p in pts], marker="o", label=d,
                        color=color_of(d))
            ax.set_title(op_title(*c), fontsize=10)
            ax.set_xlabel("threads")
            ax.set_ylabel("mean latency (us)")
            ax.set_yscale("log")
            ax.set_xticks(sorted({k[1] for k in cells}))
            ax.grid(True, which="both", alpha=0.3)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        # one legend for every panel: a design keeps its colour everywhere
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        labs = ordered(handles, DESIGNS)
        fig.legend([handles[k] for k in labs], labs, fontsize=8, loc="lower right",
                   ncol=2)
        fig.suptitle(f"tsync-bench vmdb, {backend} backend: mean latency per operation")
        fig.tight_layout()
        path = os.path.join(outdir, f"vmdb_{backend}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        # the tail at the largest thread count
        tmax = max(k[1] for cells in ops.values() for k in cells)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.2 * nrow), squeeze=False)
        for ax, c in zip(axes.flat, cols):
            cells = ops[c]
            ds = [d for d in ordered({k[0] for k in cells}, DESIGNS) if (d, tmax) in cells]
            w = 0.27
            for j, (q, label) in enumerate((("p50_ns", "p50"), ("p99_ns", "p99"),
                                            ("p999_ns", "p99.9"))):
                ax.bar([i + (j - 1) * w for i in range(len(ds))],
                       [cells[(d, tmax)][q] / 1e3 for d in ds], w, label=label)
            ax.set_xticks(range(len(ds)))
            ax.set_xticklabels(ds, rotation=30, fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel("latency (us)")
            ax.set_title(op_title(*c), fontsize=10)
            ax.grid(True, axis="y", which="both", alpha=0.3)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=8)
        fig.suptitle(f"tsync-bench vmdb, {backend} backend: tail latency at {tmax} thread(s)")
        fig.tight_layout()
        path = os.path.join(outdir, f"vmdb_{backend}_tail.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    ap = argparse.ArgumentParser(prog=os.path.basename(argv[0]),
                                 description="table and plots of tsync-bench vmdb")
    ap.add_argument("dir", help="the --out directory: reads DIR/vmdb.csv, writes there")
    ap.add_argument("--csv", help="read this CSV instead of DIR/vmdb.csv")
    ap.add_argument("--doc", help="refresh this Markdown file's vmdb:targets block")
    a = ap.parse_args(argv[1:])
    try:
        rows = load(a.csv or os.path.join(a.dir, "vmdb.csv"))
    except PlotError as e:
        print(f"plot_vmdb: {e}", file=sys.stderr)
        return 1
    if not rows:
        print("plot_vmdb: no rows", file=sys.stderr)
        return 1
    with open(os.path.join(a.dir, "table.md"), "w") as f:
        f.write(table(rows))
    if a.doc:
        try:
            with open(a.doc) as f:
                doc = replace_block(f.read(), "targets", "\n".join(targets(rows)))
        except (OSError, ValueError) as e:
            print(f"plot_vmdb: {a.doc}: {e}", file=sys.stderr)
            return 1
        with open(a.doc, "w") as f:
            f.write(doc)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_vmdb: matplotlib missing: table.md only", file=sys.stderr)
        return NO_MATPLOTLIB
    for p in plots(rows, a.dir, plt):
        print(f"plot_vmdb: wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
