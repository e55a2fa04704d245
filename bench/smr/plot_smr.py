#!/usr/bin/env python3
"""bench/smr/plot_smr.py - tables and plots from tsync-bench CSV output.

    report.py smr CSV OUTDIR [--baseline ps] [--command CMD] [--clock DESC]

Writes OUTDIR/table.md (always) and, with matplotlib, OUTDIR/smr_throughput.png and
OUTDIR/smr_p99.png. Exit status: 0; 3 when matplotlib is missing (table written, no
plots); 1 on bad input.

Ratios in the table are oriented so that > 1 means the baseline (ps) is better:
    throughput: baseline (read+update Mops) / peer (read+update Mops)
    update p99: peer update p99 / baseline update p99
"""
import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

SMR_FIELDS = [
    "mechanism", "threads", "update_pct", "read_mops", "update_mops",
    "read_p50_ns", "read_p99_ns", "update_p50_ns", "update_p99_ns", "peak_pending",
]
SMR_TYPES = {**dict.fromkeys(("threads", "update_pct", "read_p50_ns", "read_p99_ns",
                              "update_p50_ns", "update_p99_ns", "peak_pending"), int),
             "read_mops": float, "update_mops": float}
README_BEGIN, README_END = "<!-- RESULTS -->", "<!-- /RESULTS -->"


def load_smr(path):
    """Rows of a tsync-bench smr CSV as dicts with typed values (later duplicates win)."""
    return tp.load_csv(path, SMR_FIELDS, SMR_TYPES, key=("mechanism", "threads", "update_pct"),
                       what="tsync-bench smr")


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


def fmt_mops(v):
    return f"{v:.1f}" if v >= 100 else f"{v:.3g}"


def _table(header, body):
    """A right-aligned Markdown table."""
    return "\n".join(tp.md_table(header, body, "r" * len(header)))


def smr_table(rows, baseline="ps", command="", clock="", date=None, machine=None):
    """The markdown report for smr rows."""
    machine = machine or machine_info()
    date = date or datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    mechs = tp.unique(r["mechanism"] for r in rows)
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
                    cells.append(tp.ratio_text(total_mops(b), total_mops(r)) if b and r else "-")
                body.append(cells)
            out += ["Throughput: " + baseline + " Mops and " + baseline + "/peer ratios.", "",
                    _table(["threads", f"{baseline} Mops"] + peers, body), ""]
            if pct > 0:
                body = []
                for t in threads:
                    b = by.get((baseline, t, pct))
                    cells = [str(t), str(b["update_p99_ns"]) if b else "-"]
                    for p in peers:
                        r = by.get((p, t, pct))
                        cells.append(tp.ratio_text(r["update_p99_ns"], b["update_p99_ns"]) if b and r else "-")
                    body.append(cells)
                out += ["Update p99: " + baseline + " ns and peer/" + baseline + " ratios.", "",
                        _table(["threads", f"{baseline} p99 ns"] + peers, body), ""]
        else:
            body = [[str(t)] + [fmt_mops(total_mops(by[(m, t, pct)])) if (m, t, pct) in by else "-"
                                for m in mechs] for t in threads]
            out += ["Throughput: read+update Mops.", "", _table(["threads"] + mechs, body), ""]
    return "\n".join(out)


WORKLOADS = {0: "read-only", 10: "10% updates", 50: "50% updates"}
# Not peers: a control that must abort, and ps itself.
NOT_PEERS = ("ps", "unsafe")


def smr_summary(rows, threads=None):
    """The headline figures: for each workload of WORKLOADS present (0, 10 and 50 %
    updates) and each thread count up to this machine's CPUs (or `threads`, a list), ps's
    total throughput against the BEST peer of that workload and thread count (named;
    "ps loses" where the ratio is below 1), and at 10 and 50 % ps's update p99 against
    the lowest p99 of any peer; then ps's peak pending objects. Ratios are > 1 where ps
    is better. Returns a list of (what, value) string pairs."""
    by = {(r["mechanism"], r["threads"], r["update_pct"]): r for r in rows}
    all_threads = sorted({r["threads"] for r in rows if r["mechanism"] == "ps"})
    if not all_threads:
        return []
    if threads is None:
        ncpu = os.cpu_count() or 1
        threads = [t for t in all_threads if t <= ncpu] or all_threads[:1]
    out = []

    def verdict(ratio_text, ratio):
        return ratio_text + (" (ps loses)" if ratio < 1 else "")

    for pct, name in WORKLOADS.items():
        for t in threads:
            ps = by.get(("ps", t, pct))
            peers = [r for (m, tt, p), r in by.items()
                     if m not in NOT_PEERS and tt == t and p == pct]
            if not ps or not peers:
                continue
            best = max(peers, key=total_mops)
            b = total_mops(best)
            out.append((f"{name}, {t} threads: ps / best peer ({best['mechanism']}), "
                        "total throughput",
                        verdict(tp.ratio_text(total_mops(ps), b),
                                total_mops(ps) / b if b else float("inf"))))
            if pct > 0:
                timed = [r for r in peers if r["update_p99_ns"] > 0]
                if timed and ps["update_p99_ns"] > 0:
                    low = min(timed, key=lambda r: r["update_p99_ns"])
                    out.append((f"{name}, {t} threads: best peer's update p99 "
                                f"({low['mechanism']}) / ps's",
                                verdict(tp.ratio_text(low["update_p99_ns"],
                                                      ps["update_p99_ns"]),
                                        low["update_p99_ns"] / ps["update_p99_ns"])))
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


def smr_plots(rows, outdir, plt, baseline="ps"):
    """Throughput and p99 plots (rows: update %, columns: read, update). Returns paths."""
    mechs = tp.unique(r["mechanism"] for r in rows)
    pcts = sorted({r["update_pct"] for r in rows})
    colors = plt.get_cmap("tab20").colors
    markers = "osD^v<>phX*"
    style = {}
    for i, m in enumerate(m for m in mechs if m != baseline):
        style[m] = {"color": colors[i % len(colors)], "marker": markers[i % len(markers)],
                    "linewidth": 1.2, "markersize": 4}
    style[baseline] = {"color": "black", "marker": "o", "linewidth": 2.5, "markersize": 6}

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
                    # a log axis cannot show 0 (no op of that kind)
                    xs, ys = tp.series(rows, "threads",
                                       lambda r: None if logy[j] and r[key] <= 0 else r[key],
                                       mechanism=m, update_pct=pct)
                    if xs:
                        ax.plot(xs, ys, label=m, **style[m])
                tp.style_axes(ax, f"{pct}% updates: {ylabels[j]}", "threads", ylabels[j],
                              ylog=logy[j], xticks=sorted({r["threads"] for r in rows}),
                              fontsize=10)
        tp.fig_legend(fig, axes.flat)
        fig.suptitle(title)
        return tp.save(plt, fig, os.path.join(outdir, fname), rect=(0, 0.06, 1, 0.97))

    return [
        figure(["read_mops", "update_mops"], ["read Mops", "update Mops (log)"],
               [False, True], "smr_throughput.png", "tsync-bench smr: throughput"),
        figure(["read_p99_ns", "update_p99_ns"], ["read p99 ns (log)", "update p99 ns (log)"],
               [True, True], "smr_p99.png", "tsync-bench smr: 99th percentile latency"),
    ]


def readme_sections(specs):
    """[(title, rows, table path)] from --section TITLE=CSV specs."""
    sections = []
    for spec in specs:
        title, sep, path = spec.partition("=")
        if not sep:
            raise tp.InputError(f"--section needs TITLE=CSV, got {spec!r}")
        sections.append((title, load_smr(path), os.path.join(os.path.dirname(path), "table.md")))
    return sections


def main(argv=None):
    ap = tp.parser(__doc__, "report.py")
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
    a = ap.parse_args(argv)
    if a.cmd == "readme":
        try:
            tp.refresh_doc(a.readme, README_BEGIN, README_END,
                           readme_block(readme_sections(a.section), a.command))
        except tp.InputError as e:
            return tp.fail("report.py", e)
        return 0
    return tp.run("report.py", lambda: load_smr(a.csv), a.outdir,
                  lambda rows: {"table.md": smr_table(rows, a.baseline, a.command, a.clock) + "\n"},
                  plots=lambda rows, plt: smr_plots(rows, a.outdir, plt, a.baseline))


if __name__ == "__main__":
    sys.exit(main())
