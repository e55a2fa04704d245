#!/usr/bin/env python3
"""bench/report.py - tables and plots from tsync-bench CSV output.

    report.py smr CSV OUTDIR [--baseline ps] [--command CMD] [--clock DESC]

Writes OUTDIR/table.md (always) and, with matplotlib, OUTDIR/smr_throughput.png and
OUTDIR/smr_p99.png. Exit status: 0; 3 when matplotlib is missing (table written, no
plots); 1 on bad input.

Ratios in the table are oriented so that > 1 means the baseline (ps) is better:
    throughput: baseline (read+update Mops) / peer (read+update Mops)
    update p99: peer update p99 / baseline update p99
"""
import argparse
import csv
import datetime
import os
import platform
import sys

SMR_FIELDS = [
    "mechanism", "threads", "update_pct", "read_mops", "update_mops",
    "read_p50_ns", "read_p99_ns", "update_p50_ns", "update_p99_ns", "peak_pending",
]
_INT_FIELDS = {"threads", "update_pct", "read_p50_ns", "read_p99_ns", "update_p50_ns",
               "update_p99_ns", "peak_pending"}
_FLOAT_FIELDS = {"read_mops", "update_mops"}
EXIT_NO_MATPLOTLIB = 3


class ReportError(Exception):
    pass


def load_smr(path):
    """Rows of a tsync-bench smr CSV as dicts with typed values (later duplicates win)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != SMR_FIELDS:
            raise ReportError(f"{path}: not a tsync-bench smr CSV (header {header})")
        rows = {}
        for lineno, rec in enumerate(reader, start=2):
            if not rec:
                continue
            if len(rec) != len(SMR_FIELDS):
                raise ReportError(f"{path}:{lineno}: {len(rec)} fields, expected {len(SMR_FIELDS)}")
            row = {}
            try:
                for k, v in zip(SMR_FIELDS, rec):
                    row[k] = int(v) if k in _INT_FIELDS else float(v) if k in _FLOAT_FIELDS else v
            except ValueError as e:
                raise ReportError(f"{path}:{lineno}: {e}") from None
            rows[(row["mechanism"], row["threads"], row["update_pct"])] = row
    return list(rows.values())


def machine_info():
    """nproc, CPU model and the kernel's clock source of the machine running the report."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            clocksource = f.read().strip()
    except OSError:
        clocksource = "unknown"
    return {"nproc": os.cpu_count() or 0, "cpu": model, "clocksource": clocksource}


def total_mops(row):
    return row["read_mops"] + row["update_mops"]


def ratio(num, den):
    """num/den formatted for the table: 2 decimals, 'inf' for x/0, 'n/a' for 0/0."""
    if den == 0:
        return "inf" if num > 0 else "n/a"
    return f"{num / den:.2f}"


def fmt_mops(v):
    return f"{v:.1f}" if v >= 100 else f"{v:.3g}"


def _mechanisms(rows):
    seen = []
    for r in rows:
        if r["mechanism"] not in seen:
            seen.append(r["mechanism"])
    return seen


def _md_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def smr_table(rows, baseline="ps", command="", clock="", date=None, machine=None):
    """The markdown report for smr rows."""
    machine = machine or machine_info()
    date = date or datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    mechs = _mechanisms(rows)
    peers = [m for m in mechs if m != baseline]
    by = {(r["mechanism"], r["threads"], r["update_pct"]): r for r in rows}
    summary = smr_summary(rows) if baseline == "ps" else []
    out = [
        "# tsync-bench smr",
        "",
        f"- command: `{command or 'unknown'}`",
        f"- date: {date}",
        f"- machine: {machine['nproc']} CPUs, {machine['cpu']}; "
        f"kernel clocksource {machine['clocksource']}",
        f"- benchmark clock: {clock or 'unknown'}",
        f"- throughput ratio = {baseline} / peer, of read+update Mops; "
        f"update p99 ratio = peer / {baseline}. Both > 1 where {baseline} is better.",
        "",
    ]
    if summary:
        out += ["## Headline", "", "| figure | measured |", "|---|---:|"]
        out += [f"| {what} | {value} |" for what, value in summary] + [""]
    if baseline not in mechs:
        out += [f"No `{baseline}` rows: no ratios, total Mops per mechanism only.", ""]
    for pct in sorted({r["update_pct"] for r in rows}):
        threads = sorted({r["threads"] for r in rows if r["update_pct"] == pct})
        out += [f"## {pct}% updates", ""]
        if baseline in mechs:
            body = []
            for t in threads:
                b = by.get((baseline, t, pct))
                cells = [str(t), fmt_mops(total_mops(b)) if b else "-"]
                for p in peers:
                    r = by.get((p, t, pct))
                    cells.append(ratio(total_mops(b), total_mops(r)) if b and r else "-")
                body.append(cells)
            out += ["Throughput: " + baseline + " Mops and " + baseline + "/peer ratios.", "",
                    _md_table(["threads", f"{baseline} Mops"] + peers, body), ""]
            if pct > 0:
                body = []
                for t in threads:
                    b = by.get((baseline, t, pct))
                    cells = [str(t), str(b["update_p99_ns"]) if b else "-"]
                    for p in peers:
                        r = by.get((p, t, pct))
                        cells.append(ratio(r["update_p99_ns"], b["update_p99_ns"]) if b and r else "-")
                    body.append(cells)
                out += ["Update p99: " + baseline + " ns and peer/" + baseline + " ratios.", "",
                        _md_table(["threads", f"{baseline} p99 ns"] + peers, body), ""]
        else:
            body = [[str(t)] + [fmt_mops(total_mops(by[(m, t, pct)])) if (m, t, pct) in by else "-"
                                for m in mechs] for t in threads]
            out += ["Throughput: read+update Mops.", "", _md_table(["threads"] + mechs, body), ""]
    return "\n".join(out)


def smr_summary(rows, threads=None, pct=50):
    """The headline figures (the foundation issue's targets): at `threads` (default: the
    largest thread count not above this machine's CPUs) and `pct` % updates, ps total
    throughput against the best ck-epoch mode and urcu-mb-sync, update p99 against
    ck-epoch-sync, read-only ps against urcu-mb-sync, and ps's peak pending objects.
    Returns a list of (what, value) string pairs; missing mechanisms are left out."""
    by = {(r["mechanism"], r["threads"], r["update_pct"]): r for r in rows}
    all_threads = sorted({r["threads"] for r in rows if r["mechanism"] == "ps"})
    if not all_threads:
        return []
    if threads is None:
        ncpu = os.cpu_count() or 1
        fit = [t for t in all_threads if t <= ncpu]
        threads = fit[-1] if fit else all_threads[0]
    out = []
    ps = by.get(("ps", threads, pct))
    if ps:
        epochs = [by[k] for k in by if k[0].startswith("ck-epoch") and k[1:] == (threads, pct)]
        if epochs:
            best = max(epochs, key=total_mops)
            out.append((f"ps / best ck-epoch ({best['mechanism']}), total throughput, "
                        f"{threads} threads, {pct}% updates", ratio(total_mops(ps), total_mops(best))))
        mb = by.get(("urcu-mb-sync", threads, pct))
        if mb:
            out.append((f"ps / urcu-mb-sync, total throughput, {threads} threads, {pct}% updates",
                        ratio(total_mops(ps), total_mops(mb))))
        cks = by.get(("ck-epoch-sync", threads, pct))
        if cks:
            out.append((f"ck-epoch-sync / ps, update p99, {threads} threads, {pct}% updates",
                        ratio(cks["update_p99_ns"], ps["update_p99_ns"])))
    for t in all_threads:
        r0, m0 = by.get(("ps", t, 0)), by.get(("urcu-mb-sync", t, 0))
        if r0 and m0:
            out.append((f"ps / urcu-mb-sync, read-only read throughput, {t} threads",
                        ratio(r0["read_mops"], m0["read_mops"])))
    peaks = [r["peak_pending"] for r in rows if r["mechanism"] == "ps"]
    out.append(("ps peak pending objects, any run", str(max(peaks))))
    return out


def readme_block(sections, command):
    """Markdown for README.md's results section. sections: [(title, rows, table_path)]."""
    lines = [f"Command: `{command}`; the machine is described in each directory's "
             "`COMMAND.txt`.", ""]
    for title, rows, path in sections:
        lines += [f"**{title}**", "", "| figure | measured |", "|---|---:|"]
        lines += [f"| {what} | {value} |" for what, value in smr_summary(rows)]
        lines += ["", f"Every peer, thread count and update ratio, and plots: [{path}]({path}).", ""]
    return "\n".join(lines).rstrip()


def replace_between(text, block, begin="<!-- RESULTS -->", end="<!-- /RESULTS -->"):
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise ReportError(f"markers {begin} ... {end} not found")
    return text[: i + len(begin)] + "\n" + block + "\n" + text[j:]


def smr_plots(rows, outdir, baseline="ps"):
    """Throughput and p99 plots (rows: update %, columns: read, update). Returns paths.
    Raises ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mechs = _mechanisms(rows)
    pcts = sorted({r["update_pct"] for r in rows})
    colors = plt.get_cmap("tab20").colors
    markers = "osD^v<>phX*"
    style = {}
    for i, m in enumerate(m for m in mechs if m != baseline):
        style[m] = {"color": colors[i % len(colors)], "marker": markers[i % len(markers)],
                    "linewidth": 1.2, "markersize": 4}
    style[baseline] = {"color": "black", "marker": "o", "linewidth": 2.5, "markersize": 6}

    def series(m, pct, key):
        pts = sorted((r["threads"], r[key]) for r in rows
                     if r["mechanism"] == m and r["update_pct"] == pct)
        return [t for t, _ in pts], [v for _, v in pts]

    def figure(cols, ylabels, logy, fname, title):
        fig, axes = plt.subplots(len(pcts), 2, figsize=(11, 3.2 * len(pcts) + 0.8),
                                 squeeze=False)
        for i, pct in enumerate(pcts):
            for j, key in enumerate(cols):
                ax = axes[i][j]
                if pct == 0 and key.startswith("update"):
                    ax.set_axis_off()
                    ax.text(0.5, 0.5, "no updates at 0%", ha="center", va="center",
                            transform=ax.transAxes)
                    continue
                for m in mechs:
                    xs, ys = series(m, pct, key)
                    if logy[j]:  # a log axis cannot show 0 (no op of that kind)
                        pts = [(x, y) for x, y in zip(xs, ys) if y > 0]
                        xs, ys = [x for x, _ in pts], [y for _, y in pts]
                    if xs:
                        ax.plot(xs, ys, label=m, **style[m])
                if logy[j]:
                    ax.set_yscale("log")
                ax.set_title(f"{pct}% updates: {ylabels[j]}", fontsize=10)
                ax.set_xlabel("threads")
                ax.set_ylabel(ylabels[j])
                ax.grid(True, which="both", alpha=0.3)
                ax.set_xticks(sorted({r["threads"] for r in rows}))
        handles, labels = [], []
        for ax in axes.flat:
            for h, l in zip(*ax.get_legend_handles_labels()):
                if l not in labels:
                    handles.append(h)
                    labels.append(l)
        fig.legend(handles, labels, loc="lower center", ncol=min(6, max(1, len(labels))),
                   fontsize=8)
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.06, 1, 0.97))
        path = os.path.join(outdir, fname)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    return [
        figure(["read_mops", "update_mops"], ["read Mops", "update Mops (log)"],
               [False, True], "smr_throughput.png", "tsync-bench smr: throughput"),
        figure(["read_p99_ns", "update_p99_ns"], ["read p99 ns (log)", "update p99 ns (log)"],
               [True, True], "smr_p99.png", "tsync-bench smr: 99th percentile latency"),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Tables and plots from tsync-bench CSV output.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("smr", help="tsync-bench smr CSV -> OUTDIR/table.md and PNG plots")
    p.add_argument("csv")
    p.add_argument("outdir")
    p.add_argument("--baseline", default="ps", help="mechanism the ratios compare against")
    p.add_argument("--command", default="", help="command line that produced the CSV")
    p.add_argument("--clock", default="", help="the benchmark's clock (from tsync-bench)")
    p = sub.add_parser("readme", help="replace README's <!-- RESULTS --> block with the summary")
    p.add_argument("readme")
    p.add_argument("--section", action="append", required=True, metavar="TITLE=CSV",
                   help="a titled summary of one CSV (its table.md beside it); repeatable")
    p.add_argument("--command", default="make bench")
    args = ap.parse_args(argv)

    if args.cmd == "readme":
        try:
            sections = []
            for spec in args.section:
                title, sep, path = spec.partition("=")
                if not sep:
                    raise ReportError(f"--section needs TITLE=CSV, got {spec!r}")
                table = os.path.join(os.path.dirname(path), "table.md")
                sections.append((title, load_smr(path), table))
            with open(args.readme) as f:
                text = replace_between(f.read(), readme_block(sections, args.command))
        except (OSError, ReportError) as e:
            print(f"report.py: {e}", file=sys.stderr)
            return 1
        with open(args.readme, "w") as f:
            f.write(text)
        return 0

    try:
        rows = load_smr(args.csv)
    except (OSError, ReportError) as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    os.makedirs(args.outdir, exist_ok=True)
    table = os.path.join(args.outdir, "table.md")
    with open(table, "w") as f:
        f.write(smr_table(rows, args.baseline, args.command, args.clock) + "\n")
    try:
        smr_plots(rows, args.outdir, args.baseline)
    except ImportError as e:
        print(f"report.py: warning: no plots ({e}); install matplotlib "
              f"(Debian: apt install python3-matplotlib). Wrote {table}.", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    return 0


if __name__ == "__main__":
    sys.exit(main())
