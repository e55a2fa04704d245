#!/usr/bin/env python3
"""bench/prudence/plot_prudence.py DIR - summary tables and plots of `tsync-bench prudence`.

Reads what `tsync-bench prudence pairs|endurance --out DIR` wrote there:

  pairs.csv              one row per run; the tables take the median of the repeats:
                         summary_pairs.md (Mops/s per size and allocator, ps-kmem's ratio
                         to malloc + call_rcu and to the best of jemalloc / tcmalloc /
                         mimalloc + call_rcu; ps-call's (glibc malloc + ps_call) to
                         malloc + call_rcu and to the best glibc-malloc peer; p99, helper
                         CPU, peak RSS; tsync's object-cache hit rate, Fig. 7, and share
                         of deferred frees, Fig. 12), pairs.png
  endurance.csv,         summary_endurance.md (per run: outcome, updates Mops/s, live set,
  endurance_series.csv,  peak RSS and its ratio to the live set, the RSS slope over the
  endurance_runs.csv     second half of the run, and where a run was killed, when),
                         endurance.png (RSS and pending deferred objects over time)

With --doc FILE, the summary also replaces FILE's block between the lines
"<!-- prudence:NAME -->" and "<!-- /prudence:NAME -->", NAME being DIR's last component
(docs/prudence.md quotes its figures this way, so they cannot drift from the data).

Exits 0, or 3 when matplotlib is missing (the tables are written first), 1 when DIR
holds none of these files. Prudence (ASPLOS 2016) §5, Figs. 3, 6, 7 and 12.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tsync_plot as tp  # noqa: E402

NO_MATPLOTLIB = tp.NO_MATPLOTLIB
# The peers whose best the target compares with (ps_kmem >= 1.5x the best of them).
PRODUCTION = ("jemalloc-call-rcu", "tcmalloc-call-rcu", "mimalloc-call-rcu")
BASELINE = "malloc-call-rcu"
TSYNC = "ps-kmem"
ALL_OFF = "ps-kmem-off"  # ps_kmem with Prudence's policies off (the ablation's baseline)
# glibc malloc + ps_call (tsync's call_rcu, no recycling) and the glibc-malloc peers with
# the same allocator, the best of which it is also compared with (issue 26: ps-call >= 2x
# malloc-call-rcu at 2 threads).
CALL = "ps-call"
CALL_GOAL = 2.0
GLIBC_PEERS = ("malloc-call-rcu", "malloc-call-rcu-all", "ck-epoch")
# Allocators in tsync-bench prudence --list order; others after, alphabetically.
ALLOCATORS = ["malloc-call-rcu", "malloc-call-rcu-all", "jemalloc-call-rcu",
              "tcmalloc-call-rcu", "mimalloc-call-rcu", "ck-epoch", "ps-call", "ps-call-free",
              "ps-mem", "ps-kmem"]
median = tp.median
ratio = tp.ratio
fmt = tp.fmt
xfmt = tp.fmt_x


def num(s):
    """A CSV field as a float, or None when it is empty (a column that does not apply)."""
    return float(s) if s not in ("", None) else None


def order(names):
    return tp.ordered(names, ALLOCATORS)


def with_rates(rows):
    """Each row with its two Prudence (ASPLOS 2016) §5 rates, None where the row has no
    counts (a peer, or a CSV from before the columns): hit_pct, Fig. 7, the % of
    allocations served from the object cache without a refill ((cache_hits + merge_hits) /
    allocs: a merge of reclaimed objects into the cache counts as a hit, as Prudence's
    latent-cache merge does); deferred_pct, Fig. 12, the % of frees that are deferred
    (frees / (frees + frees_now))."""
    out = []
    for r in rows:
        r = dict(r)
        a, h, mh, f, fn = (num(r.get(c)) for c in ("allocs", "cache_hits", "merge_hits",
                                                    "frees", "frees_now"))
        r["hit_pct"] = 100.0 * (h + (mh or 0)) / a if a and h is not None else None
        total = (f or 0) + (fn or 0)
        r["deferred_pct"] = 100.0 * f / total if f is not None and total else None
        out.append(r)
    return out


def pairs_medians(rows):
    """{(allocator, threads, readers, size): {column: median}} over the repeats (the rates
    of with_rates: the median of each run's rate)."""
    return tp.medians(with_rates(rows),
                      lambda r: (r["allocator"], int(r["threads"]), int(r["readers"]),
                                 int(r["size"])),
                      ("mops", "p50_ns", "p99_ns", "p999_ns", "helper_cpu_pct", "peak_rss_kib",
                       "slab_churn", "hit_pct", "deferred_pct"), num)


def rate_lines(med):
    """Prudence (ASPLOS 2016) Fig. 7 and Fig. 12 from the pairs: per (threads, readers,
    size), each tsync allocator's object-cache hit rate and share of deferred frees.
    Empty when no row has counts."""
    allocs = order({k[0] for k, v in med.items() if v.get("hit_pct") is not None})
    if not allocs:
        return []
    pts = sorted({k[1:] for k, v in med.items() if v.get("hit_pct") is not None})
    head = "| threads | readers | size | " + " | ".join(allocs) + " |"
    rule = "|---|---|---|" + "---|" * len(allocs)

    def table(col):
        return [head, rule] + [
            f"| {thr} | {rd} | {sz} | "
            + " | ".join(fmt(med.get((a, thr, rd, sz), {}).get(col), ".1f") for a in allocs)
            + " |" for thr, rd, sz in pts]
    return (["## Object-cache hits (Prudence (ASPLOS 2016) Fig. 7)", "",
             "% of allocations served from the thread's object cache without a refill from "
             "slabs - cache hits, and the slow path's merges of reclaimed objects into the "
             "cache (Prudence's latent cache merged after its grace period) - median of the "
             "repeats. tsync's allocators only: the peers have no such counter.", ""]
            + table("hit_pct") + [""]
            + ["## Deferred frees (Prudence (ASPLOS 2016) Fig. 12)", "",
               "% of frees that are deferred (`ps_free`, Prudence's `kfree_deferred`) "
               "rather than immediate (`ps_free_now`, `kfree`), median of the repeats. The "
               "pairs free every object deferred, so this reads 100 % by construction; "
               "Prudence measured 4.4 % (PostgreSQL) to 24.4 % (Postmark) in applications.",
               ""]
            + table("deferred_pct") + [""])


def pair_ratios(med, thr, rd, s):
    """(ps-kmem / malloc-call-rcu, ps-kmem / best production peer) at one point."""
    t = med.get((TSYNC, thr, rd, s), {}).get("mops")
    base = med.get((BASELINE, thr, rd, s), {}).get("mops")
    best = max((med.get((p, thr, rd, s), {}).get("mops") or 0 for p in PRODUCTION),
               default=0) or None
    return ratio(t, base), ratio(t, best)


def call_ratios(med, thr, rd, s):
    """(ps-call / malloc-call-rcu, ps-call / the best glibc-malloc peer) at one point."""
    c = med.get((CALL, thr, rd, s), {}).get("mops")
    base = med.get((BASELINE, thr, rd, s), {}).get("mops")
    best = max((med.get((p, thr, rd, s), {}).get("mops") or 0 for p in GLIBC_PEERS),
               default=0) or None
    return ratio(c, base), ratio(c, best)


def call_targets_lines(med, configs, sizes):
    """ps-call against malloc-call-rcu per thread count (target CALL_GOAL), and against the
    best glibc-malloc peer (no target): the smallest ratio over sizes and reader counts."""
    out = []
    for thr in sorted({c[0] for c in configs}):
        pts = [(call_ratios(med, thr, rd, s), s, rd) for t, rd in configs if t == thr
               for s in sizes]
        base = [(r[0], s, rd) for r, s, rd in pts if r[0] is not None]
        best = [(r[1], s, rd) for r, s, rd in pts if r[1] is not None]
        if base:
            lo = min(base)
            short = sorted((p for p in base if p[0] < CALL_GOAL), key=lambda p: (p[2], p[1]))
            out.append(f"- {thr} thread(s): {CALL} / {BASELINE} is {lo[0]:.2f}x at least "
                       f"({lo[1]} B, {lo[2]} reader(s)); target {CALL_GOAL:g}x: "
                       + ("met at every size and reader count" if not short else
                          "short at " + ", ".join(f"{p[1]} B/{p[2]}r ({p[0]:.2f}x)"
                                                  for p in short))
                       + ".")
        if best:
            lo, hi = min(best), max(best)
            out.append(f"- {thr} thread(s): {CALL} / the best glibc-malloc peer "
                       f"({', '.join(GLIBC_PEERS)}) is {lo[0]:.2f}x at least ({lo[1]} B, "
                       f"{lo[2]} reader(s)), {hi[0]:.2f}x at most ({hi[1]} B, {hi[2]} "
                       "reader(s)).")
    return out


def targets_lines(med, configs, sizes):
    """The issue's pairs targets per thread count: the smallest ratio over sizes and
    reader counts, and where it is (the prose of docs/prudence.md quotes these)."""
    out = []
    for thr in sorted({c[0] for c in configs}):
        for i, (name, goal) in enumerate((("malloc-call-rcu", 4.0),
                                          ("the best production allocator + call_rcu", 1.5))):
            pts = [(pair_ratios(med, thr, rd, s)[i], s, rd) for t, rd in configs if t == thr
                   for s in sizes]
            pts = [p for p in pts if p[0] is not None]
            if not pts:
                continue
            lo = min(pts)
            short = [p for p in pts if p[0] < goal]
            out.append(f"- {thr} thread(s): ps-kmem / {name} is {lo[0]:.2f}x at least "
                       f"({lo[1]} B, {lo[2]} reader(s)); target {goal:g}x: "
                       + ("met at every size and reader count" if not short else
                          "short at " + ", ".join(f"{p[1]} B/{p[2]}r ({p[0]:.2f}x)"
                                                  for p in sorted(short, key=lambda p: (p[2], p[1]))))
                       + ".")
    return out


def pairs_onoff_lines(med):
    """Prudence on (ps-kmem) against off (ps-kmem-off) on the pairs, when both ran: Mops/s
    and slab churn per point. Empty otherwise."""
    pts = sorted({k[1:] for k in med if k[0] == ALL_OFF} & {k[1:] for k in med if k[0] == TSYNC})
    if not pts:
        return []
    lines = ["## Prudence on against off", "",
             f"{TSYNC} (policies on) and {ALL_OFF} (off), medians of the repeats.", "",
             "| threads | readers | size | Mops/s on | Mops/s off | on / off | slab churn on | "
             "slab churn off |", "|---|---|---|---|---|---|---|---|"]
    for thr, rd, sz in pts:
        on, off = med[(TSYNC, thr, rd, sz)], med[(ALL_OFF, thr, rd, sz)]
        lines.append(f"| {thr} | {rd} | {sz} | {fmt(on['mops'])} | {fmt(off['mops'])} | "
                     f"{xfmt(ratio(on['mops'], off['mops']))} | "
                     f"{fmt(on['slab_churn'], '.0f')} | {fmt(off['slab_churn'], '.0f')} |")
    return lines + [""]


def pairs_summary(med):
    allocs = order({k[0] for k in med})
    configs = sorted({(k[1], k[2]) for k in med})
    sizes = sorted({k[3] for k in med})
    lines = ["# Alloc + deferred-free pairs (Prudence (ASPLOS 2016) Fig. 6)", "",
             "Mops/s, median of the repeats. `vs malloc` is ps-kmem / malloc-call-rcu; "
             "`vs best` is ps-kmem / the best of jemalloc, tcmalloc and mimalloc + call_rcu "
             "at that size.", ""]
    if set(allocs) == {TSYNC, ALL_OFF}:  # an on/off run: its tables alone
        return "\n".join(lines[:1] + [""] + pairs_onoff_lines(med) + rate_lines(med))
    if CALL in allocs:
        lines[2] += (f" `{CALL} vs malloc` is {CALL} (glibc malloc + ps_call) / "
                     f"{BASELINE}; `{CALL} vs best` is {CALL} / the best of "
                     f"{', '.join(GLIBC_PEERS)} (the same allocator) at that size.")
    if TSYNC in allocs:
        lines += targets_lines(med, configs, sizes) + [""]
    if CALL in allocs:
        lines += call_targets_lines(med, configs, sizes) + [""]
    for thr, rd in configs:
        lines.append(f"## {thr} thread(s), {rd} reader(s)")
        lines.append("")
        head = ["size"] + allocs
        if TSYNC in allocs:
            head += ["vs malloc", "vs best"]
        if CALL in allocs:
            head += [f"{CALL} vs malloc", f"{CALL} vs best"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for s in sizes:
            cells = [str(s)]
            for a in allocs:
                cells.append(fmt(med.get((a, thr, rd, s), {}).get("mops")))
            if TSYNC in allocs:
                vs_base, vs_best = pair_ratios(med, thr, rd, s)
                cells.append(xfmt(vs_base))
                cells.append(xfmt(vs_best))
            if CALL in allocs:
                cells += [xfmt(x) for x in call_ratios(med, thr, rd, s)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        lines.append("p99 ns / helper CPU % / peak RSS MiB per allocator, largest size:")
        lines.append("")
        s = sizes[-1]
        lines.append("| allocator | p50 ns | p99 ns | p99.9 ns | helper CPU % | peak RSS MiB | slab churn |")
        lines.append("|---|---|---|---|---|---|---|")
        for a in allocs:
            m = med.get((a, thr, rd, s))
            if not m:
                continue
            rss = m["peak_rss_kib"] / 1024 if m["peak_rss_kib"] is not None else None
            lines.append(f"| {a} | {fmt(m['p50_ns'], '.0f')} | {fmt(m['p99_ns'], '.0f')} | "
                         f"{fmt(m['p999_ns'], '.0f')} | {fmt(m['helper_cpu_pct'], '.1f')} | "
                         f"{fmt(rss, '.1f')} | {fmt(m['slab_churn'], '.0f', '')} |")
        lines.append("")
    lines += pairs_onoff_lines(med) + rate_lines(med)
    return "\n".join(lines)


def slope(points):
    """Least-squares slope of (t, y) points; None with fewer than 2."""
    if len(points) < 2:
        return None
    n = len(points)
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    if den == 0:
        return None
    return sum((t - mt) * (y - my) for t, y in points) / den


def _config(r):
    """An endurance row's configuration: (allocator, threads, readers, size)."""
    return (r["allocator"], int(r["threads"]), int(r["readers"]), int(r["size"]))


def endurance_runs(runs, rows, series):
    """One dict per run: the runs file joined with its row and its series."""
    by_key = {k: [(float(s["t_s"]), float(s["rss_kib"]), float(s["pending"])) for s in ss]
              for k, ss in tp.group(series, lambda s: _config(s) + (int(s["repeat"]),)).items()}
    # rows have no repeat column: the n-th row of a configuration is its n-th repeat
    row_of = tp.group(rows, _config)
    out = []
    for r in runs:
        cfg = _config(r)
        rep = int(r["repeat"])
        pts = sorted(by_key.get(cfg + (rep,), []))
        row = row_of[cfg][rep] if rep < len(row_of.get(cfg, [])) else {}
        tmax = pts[-1][0] if pts else None
        second = [(t, y) for t, y, _ in pts if tmax and t >= tmax / 2]
        live = float(r["live_kib"])
        peak = num(row.get("peak_rss_kib")) if row else None
        out.append({
            "allocator": cfg[0], "threads": cfg[1], "readers": cfg[2], "size": cfg[3],
            "repeat": rep, "outcome": r["outcome"], "limit_mib": int(r["limit_mib"]),
            "mops": num(row.get("mops")) if row else None,
            "live_kib": live, "peak_rss_kib": peak,
            "peak_over_live": peak / live if peak and live else None,
            "slope_kib_s": slope(second),
            "end_t_s": tmax,
            "peak_pending": max((p for _, _, p in pts), default=None),
            "helper_cpu_pct": num(row.get("helper_cpu_pct")) if row else None,
            "slab_churn": num(row.get("slab_churn")) if row else None,
            "cache_churn": num(r.get("cache_churn")),
            "peak_slabs": num(r.get("peak_slabs")),
            "ft": num(r.get("ft")),
            "alloc_waits": num(r.get("alloc_waits")),
            "wait_timeouts": num(r.get("wait_timeouts")),
            "points": pts,
        })
    return out


def endurance_summary(runs):
    lines = ["# Endurance: copy-on-write updates at the maximal rate (Prudence (ASPLOS 2016) Fig. 3)",
             "", "Peak RSS is the process's (getrusage); the slope is the least-squares RSS "
             "slope over the second half of the samples; a killed run's last sample is when "
             "it died. Slab churn (grow/shrink pairs), object-cache churn (refill/flush "
             "pairs), peak slabs, f_t (slab bytes / live bytes at the end) and the "
             "allocations that waited for a grace period (timed out: those whose wait "
             "reached `limit_wait_ms`) are `ps_mem_stats`' and apply to tsync's allocators "
             "only.", "",
             "| allocator | threads | readers | limit MiB | outcome | updates Mops/s | live MiB | "
             "peak RSS MiB | peak / live | RSS slope KiB/s | last sample s | peak pending | "
             "helper CPU % | slab churn | object-cache churn | peak slabs | f_t | "
             "waits (timed out) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    names = order({r["allocator"] for r in runs})
    for r in sorted(runs, key=lambda r: (r["limit_mib"], r["threads"], r["readers"],
                                         names.index(r["allocator"]), r["repeat"])):
        lim = str(r["limit_mib"]) if r["limit_mib"] else "none"
        lines.append(
            f"| {r['allocator']} | {r['threads']} | {r['readers']} | {lim} | {r['outcome']} | "
            f"{fmt(r['mops'], '.3f')} | {r['live_kib'] / 1024:.1f} | "
            f"{fmt(r['peak_rss_kib'] / 1024 if r['peak_rss_kib'] else None, '.1f')} | "
            f"{fmt(r['peak_over_live'], '.2f')} | {fmt(r['slope_kib_s'], '.0f')} | "
            f"{fmt(r['end_t_s'], '.2f')} | {fmt(r['peak_pending'], '.0f')} | "
            f"{fmt(r['helper_cpu_pct'], '.1f')} | {fmt(r['slab_churn'], '.0f', '')} | "
            f"{fmt(r['cache_churn'], '.0f', '')} | {fmt(r['peak_slabs'], '.0f', '')} | "
            f"{fmt(r['ft'], '.2f', '')} | {waits_text(r)} |")
    lines.append("")
    return "\n".join(lines)


def waits_text(r):
    """An endurance run's waits for a grace period, "waits (timed out)"; empty for the
    peers and for runs files from before the columns."""
    if r.get("alloc_waits") is None:
        return ""
    return f"{r['alloc_waits']:.0f} ({fmt(r.get('wait_timeouts'), '.0f', '0')})"


def line_style(allocator):
    """ps_call's designs (glibc malloc, tsync's reclamation) dashed and dotted, so that more
    allocators than the colour cycle's ten stay apart; every other line solid."""
    return {CALL: {"linestyle": "--"}, CALL + "-free": {"linestyle": ":"}}.get(allocator, {})


def plot_pairs(med, path, plt):
    configs = sorted({(k[1], k[2]) for k in med})
    allocs = order({k[0] for k in med})
    fig, axes = tp.panel_row(plt, len(configs), 4.5, 4)
    pts = [{"a": k[0], "thr": k[1], "rd": k[2], "size": k[3], "mops": v["mops"]}
           for k, v in med.items()]
    for ax, (thr, rd) in zip(axes, configs):
        for a in allocs:
            xs, ys = tp.series(pts, "size", "mops", a=a, thr=thr, rd=rd)
            if xs:
                ax.plot(xs, ys, marker="o", label=a, **line_style(a))
        ax.set_xscale("log", base=2)
        tp.style_axes(ax, f"{thr} thread(s), {rd} reader(s)", "object size (bytes)",
                      "pairs Mops/s")
    axes[0].legend(fontsize=7)
    return tp.save(plt, fig, path)


def plot_endurance(runs, path, plt):
    fig, (a1, a2) = tp.panel_row(plt, 2, 5.5, 4)
    for r in runs:
        if not r["points"]:
            continue
        label = f"{r['allocator']} ({r['threads']}t/{r['readers']}r)"
        if r["outcome"] != "ok":
            label += f" [{r['outcome']}]"
        t = [p[0] for p in r["points"]]
        a1.plot(t, [p[1] / 1024 for p in r["points"]], label=label, **line_style(r["allocator"]))
        a2.plot(t, [p[2] for p in r["points"]], label=label, **line_style(r["allocator"]))
    for lv in {r["live_kib"] for r in runs}:
        a1.axhline(lv / 1024, color="grey", linestyle=":", linewidth=1)
    tp.style_axes(a1, None, "time (s)", "RSS (MiB); dotted: live set")
    tp.style_axes(a2, None, "time (s)", "deferred objects not yet reusable")
    a2.set_yscale("symlog")
    a1.legend(fontsize=7)
    return tp.save(plt, fig, path)


def ablation_summary(runs):
    """Prudence on, all off, and each policy off in turn (`--allocators ablation`): medians
    over the repeats, and the ratios that the issue's targets name. None when the runs are
    not an ablation (no ps-kmem-off)."""
    names = {r["allocator"] for r in runs}
    if ALL_OFF not in names or TSYNC not in names:
        return None
    cols = ("mops", "peak_over_live", "slab_churn", "cache_churn", "peak_slabs", "ft")
    med = {n: {c: median([r[c] for r in runs if r["allocator"] == n]) for c in cols}
           for n in names}
    nrep = {n: sum(1 for r in runs if r["allocator"] == n) for n in names}
    on, off = med[TSYNC], med[ALL_OFF]
    lines = ["# Ablation: Prudence's policies on, off, and each one off in turn", "",
             "Medians of the repeats of each endurance run. `slab churn vs off` is the "
             f"allocator's slab churn / {ALL_OFF}'s (the target: Prudence on <= 0.70); "
             f"`Mops vs on` its update rate / {TSYNC}'s.", "",
             "| allocator | runs | updates Mops/s | Mops vs on | peak RSS / live | slab churn | "
             "slab churn vs off | object-cache churn | peak slabs | f_t |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rest = sorted(n for n in names if n not in (TSYNC, ALL_OFF))
    for n in [TSYNC, ALL_OFF] + rest:
        m = med[n]
        lines.append(
            f"| {n} | {nrep[n]} | {fmt(m['mops'], '.3f')} | {xfmt(ratio(m['mops'], on['mops']))} | "
            f"{fmt(m['peak_over_live'], '.2f')} | {fmt(m['slab_churn'], '.0f')} | "
            f"{xfmt(ratio(m['slab_churn'], off['slab_churn']))} | "
            f"{fmt(m['cache_churn'], '.0f')} | {fmt(m['peak_slabs'], '.0f')} | "
            f"{fmt(m['ft'], '.2f')} |")
    lines.append("")
    return "\n".join(lines)


def cache_summary(rows):
    """tsync-cached's core with Prudence on and off (`tsync-bench cache --prudence on,off
    --mem-csv`): medians over the repeats per (threads, set %, prudence)."""
    groups = tp.group(rows, lambda r: (int(r["threads"]), int(r["set_pct"]), r["prudence"]))
    cols = ("mops", "cache_misses", "cache_churn", "slab_churn", "peak_slabs", "ft")
    lines = ["# tsync-cached's core: Prudence on and off (set-heavy)", "",
             "`tsync-bench cache --variants ps --prudence on,off`: the in-process cache, YCSB "
             "Zipf 0.99, 16-byte keys, 32-byte values; the item allocator's counters "
             "(`ps_kmem_stats`, every size class) at the end of each run, medians of the "
             "repeats.", "",
             "| threads | set % | Prudence | runs | Mops/s | cache misses | object-cache churn | "
             "slab churn | peak slabs | f_t |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2] != "on")):
        g = groups[key]
        m = {c: median([num(r[c]) for r in g]) for c in cols}
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(g)} | {fmt(m['mops'], '.3f')} | "
                     f"{fmt(m['cache_misses'], '.0f')} | {fmt(m['cache_churn'], '.0f')} | "
                     f"{fmt(m['slab_churn'], '.0f')} | {fmt(m['peak_slabs'], '.0f')} | "
                     f"{fmt(m['ft'], '.3f')} |")
    lines.append("")
    return "\n".join(lines)


def load_dir(d):
    """What DIR holds: [(summary file, [texts], plot function or None)]; InputError when
    it holds none of pairs.csv, endurance_runs.csv, mem.csv."""
    parts = []
    pairs = os.path.join(d, "pairs.csv")
    if os.path.exists(pairs):
        med = pairs_medians(tp.read_dicts(pairs))
        parts.append(("summary_pairs.md", [pairs_summary(med)],
                      lambda plt: plot_pairs(med, os.path.join(d, "pairs.png"), plt)))
    runs_path = os.path.join(d, "endurance_runs.csv")
    if os.path.exists(runs_path):
        series_path = os.path.join(d, "endurance_series.csv")
        runs = endurance_runs(tp.read_dicts(runs_path),
                              tp.read_dicts(os.path.join(d, "endurance.csv")),
                              tp.read_dicts(series_path) if os.path.exists(series_path) else [])
        abl = ablation_summary(runs)
        parts.append(("summary_endurance.md", ([abl] if abl else []) + [endurance_summary(runs)],
                      lambda plt: plot_endurance(runs, os.path.join(d, "endurance.png"), plt)))
    mem_path = os.path.join(d, "mem.csv")
    if os.path.exists(mem_path):
        parts.append(("summary_cache.md", [cache_summary(tp.read_dicts(mem_path))], None))
    if not parts:
        raise tp.InputError(f"no pairs.csv, endurance_runs.csv or mem.csv in {d}")
    return parts


def doc_block(parts):
    """The tables for docs/prudence.md: without their title lines (the doc has its own),
    their sections under the doc's own third-level heading."""
    texts = [t for _, ts, _ in parts for t in ts]
    body = "\n\n".join(t.split("\n", 2)[2] if t.startswith("# ") else t for t in texts)
    return "\n".join("####" + ln[2:] if ln.startswith("## ") else ln for ln in body.split("\n"))


def main(argv=None):
    ap = tp.parser(__doc__, "plot_prudence.py")
    ap.add_argument("dir")
    ap.add_argument("--doc", help="refresh this Markdown file's prudence:<dir name> block")
    a = ap.parse_args(argv)
    name = os.path.basename(os.path.normpath(a.dir))
    doc = (a.doc, *tp.block_markers("prudence", name), doc_block) if a.doc else None
    return tp.run("plot_prudence", lambda: load_dir(a.dir), a.dir,
                  lambda parts: {f: "\n".join(ts) for f, ts, _ in parts}, doc=doc,
                  plots=lambda parts, plt: [fn(plt) for _, _, fn in parts if fn])


if __name__ == "__main__":
    sys.exit(main())
