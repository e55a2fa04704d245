#!/usr/bin/env python3
"""bench/hash/plot_hash.py DIR [--doc FILE] - the report of `tsync-bench hash --out DIR`.

Reads DIR/hash.csv (steady runs) and DIR/hash_resize.csv (grow/shrink runs, if present),
takes the median of the repeats of each configuration, and writes:

  DIR/table.md        the medians, the issue-31 targets with their ratios and verdicts
  DIR/throughput.png  Mops per table, one panel per key count, bars per update share
  DIR/latency.png     lookup and update p99 per table (10 % updates)
  DIR/resize.png      the reader's lookup p99 per phase (grow, shrink, steady)

The targets (2 threads, ratios within one run): at 10 % updates ps-hash >= 1.5x
urcu-lfht and >= 1.0x ck-hs throughput, and its update p99 <= both; read-only ps-hash
>= 1.0x urcu-lfht; ps-hash's lookup p99 during a resize (grow, shrink) <= 2x steady.
With --doc FILE, the targets table also replaces FILE's block between the lines
"<!-- hash:targets -->" and "<!-- /hash:targets -->" (docs/hash.md §8).
Without matplotlib only table.md is written (a line on stderr says so).
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

STEADY_KEYS = ("table", "threads", "update_pct", "keys")
NUM = ("mops", "lookup_p50_ns", "lookup_p99_ns", "update_p99_ns", "resizes", "peak_rss_kib")
RNUM = ("lookups", "lookup_p50_ns", "lookup_p99_ns", "seconds", "resizes", "peak_rss_kib")
TABLES = ("ps-hash", "ps-hash-1ms", "urcu-lfht", "ck-hs", "rwlock")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def medians(rows, key, nums):
    """{key tuple: {field: median}} over the repeats; 'n' is the repeat count."""
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in key)].append(r)
    out = {}
    for k, rs in groups.items():
        m = {f: statistics.median(float(r[f]) for r in rs) for f in nums}
        m["n"] = len(rs)
        out[k] = m
    return out


def order(names):
    known = [t for t in TABLES if t in names]
    return known + sorted(n for n in names if n not in TABLES)


def targets(steady, resize):
    """[(what, value, bound, ok)] for every target the data can decide."""
    res = []
    for (t, thr, upd, keys), m in sorted(steady.items(), key=lambda kv: (int(kv[0][3]), int(kv[0][2]))):
        if t != "ps-hash" or thr != "2":
            continue

        def peer(p):
            return steady.get((p, thr, upd, keys))

        u, c = peer("urcu-lfht"), peer("ck-hs")
        if upd == "10":
            # the targets: >= 1.5x urcu-lfht's and >= 1.0x ck-hs's throughput,
            # update p99 <= each peer's
            for name, q, bound in (("urcu-lfht", u, 1.5), ("ck-hs", c, 1.0)):
                if not q:
                    continue
                r = m["mops"] / q["mops"] if q["mops"] else float("inf")
                res.append((f"{keys} keys, 10 %: ps-hash / {name} throughput", r, f">= {bound}",
                            r >= bound))
                res.append((f"{keys} keys, 10 %: ps-hash update p99 / {name}'s",
                            m["update_p99_ns"] / max(q["update_p99_ns"], 1), "<= 1.0",
                            m["update_p99_ns"] <= q["update_p99_ns"]))
        if upd == "0" and u:
            r = m["mops"] / u["mops"] if u["mops"] else float("inf")
            res.append((f"{keys} keys, read-only: ps-hash / urcu-lfht throughput", r, ">= 1.0", r >= 1.0))
    st = resize.get(("ps-hash", "steady"))
    for ph in ("grow", "shrink"):
        m = resize.get(("ps-hash", ph))
        if m and st:
            r = m["lookup_p99_ns"] / max(st["lookup_p99_ns"], 1)
            res.append((f"resize ({ph}): ps-hash lookup p99 / steady p99", r, "<= 2.0", r <= 2.0))
    return res


def target_lines(steady, resize):
    """The targets as a Markdown table (no lines when the data decides none)."""
    tg = targets(steady, resize)
    if not tg:
        return []
    lines = ["| target | value | bound | met |", "|---|---|---|---|"]
    for what, v, bound, ok in tg:
        lines.append(f"| {what} | {v:.2f} | {bound} | {'yes' if ok else 'no'} |")
    return lines


DOC_BEGIN, DOC_END = "<!-- hash:targets -->", "<!-- /hash:targets -->"


def refresh_doc(path, steady, resize):
    """Replace the lines between DOC_BEGIN and DOC_END in the document at path with the
    targets table (docs/hash.md quotes its figures this way, so they cannot drift from
    the data). Raises ValueError when the markers are missing or out of order."""
    with open(path) as f:
        doc = f.read()
    i, j = doc.find(DOC_BEGIN), doc.find(DOC_END)
    if i < 0 or j < i:
        raise ValueError(f"{path}: no {DOC_BEGIN} ... {DOC_END} block")
    body = "\n".join(target_lines(steady, resize)) or "(no targets in the data)"
    with open(path, "w") as f:
        f.write(doc[:i + len(DOC_BEGIN)] + "\n" + body + "\n" + doc[j:])


def write_table(d, steady, resize):
    lines = ["# tsync-bench hash", "",
             "Medians over the repeats (n). Throughput in Mops (all threads), latencies in ns.", "",
             "| table | threads | update % | keys | Mops | lookup p50 | lookup p99 | update p99 | resizes | peak RSS KiB | n |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    keyf = lambda kv: (int(kv[0][3]), int(kv[0][2]), int(kv[0][1]), order([kv[0][0]]) and TABLES.index(kv[0][0]) if kv[0][0] in TABLES else 99)
    for (t, thr, upd, keys), m in sorted(steady.items(), key=keyf):
        lines.append(f"| {t} | {thr} | {upd} | {keys} | {m['mops']:.2f} | {m['lookup_p50_ns']:.0f} | "
                     f"{m['lookup_p99_ns']:.0f} | {m['update_p99_ns']:.0f} | {m['resizes']:.0f} | "
                     f"{m['peak_rss_kib']:.0f} | {m['n']} |")
    if resize:
        lines += ["", "## Resize runs: one writer grows from empty to the keys, shrinks to empty, then "
                  "deletes and reinserts at a constant size (steady); one reader times lookups", "",
                  "| table | phase | keys | lookups | lookup p50 | lookup p99 | seconds | resizes | peak RSS KiB | n |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for (t, ph), m in sorted(resize.items(), key=lambda kv: (TABLES.index(kv[0][0]) if kv[0][0] in TABLES else 99, ("grow", "shrink", "steady").index(kv[0][1]) if kv[0][1] in ("grow", "shrink", "steady") else 9)):
            lines.append(f"| {t} | {ph} | {m['keys']:.0f} | {m['lookups']:.0f} | {m['lookup_p50_ns']:.0f} | "
                         f"{m['lookup_p99_ns']:.0f} | {m['seconds']:.3f} | {m['resizes']:.0f} | "
                         f"{m['peak_rss_kib']:.0f} | {m['n']} |")
    tg = target_lines(steady, resize)
    if tg:
        lines += ["", "## Targets (issue 31)", ""] + tg
    with open(os.path.join(d, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(d, steady, resize):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_hash.py: no matplotlib; wrote table.md only", file=sys.stderr)
        return
    tables = order({k[0] for k in steady})
    keys = sorted({int(k[3]) for k in steady})
    upds = sorted({int(k[2]) for k in steady})
    thr = sorted({k[1] for k in steady}, key=int)[-1] if steady else "2"
    if steady:
        fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.6), squeeze=False)
        w = 0.8 / max(len(tables), 1)
        for ax, k in zip(axes[0], keys):
            for i, t in enumerate(tables):
                ys = [steady.get((t, thr, str(u), str(k)), {}).get("mops", 0) for u in upds]
                ax.bar([j + i * w for j in range(len(upds))], ys, w, label=t)
            ax.set_xticks([j + w * (len(tables) - 1) / 2 for j in range(len(upds))])
            ax.set_xticklabels([f"{u} %" for u in upds])
            ax.set_title(f"{k} keys, {thr} threads")
            ax.set_ylabel("Mops")
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "throughput.png"), dpi=110)
        plt.close(fig)
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for ax, f, title in ((axes[0], "lookup_p99_ns", "lookup p99 (10 % updates)"),
                             (axes[1], "update_p99_ns", "update p99 (10 % updates)")):
            for t in tables:
                ys = [steady.get((t, thr, "10", str(k)), {}).get(f, float("nan")) for k in keys]
                ax.plot([str(k) for k in keys], ys, marker="o", label=t)
            ax.set_yscale("log")
            ax.set_xlabel("keys")
            ax.set_ylabel("ns")
            ax.set_title(title)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "latency.png"), dpi=110)
        plt.close(fig)
    if resize:
        rt = order({k[0] for k in resize})
        phases = ["grow", "shrink", "steady"]
        fig, ax = plt.subplots(figsize=(6, 3.6))
        w = 0.8 / len(phases)
        for i, ph in enumerate(phases):
            ys = [resize.get((t, ph), {}).get("lookup_p99_ns", 0) for t in rt]
            ax.bar([j + i * w for j in range(len(rt))], ys, w, label=ph)
        ax.set_xticks([j + w for j in range(len(rt))])
        ax.set_xticklabels(rt)
        ax.set_ylabel("reader's lookup p99, ns")
        ax.set_yscale("log")
        ax.set_title("lookups during resizes vs steady")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "resize.png"), dpi=110)
        plt.close(fig)


def main(argv):
    args, doc = list(argv[1:]), None
    if len(args) == 3 and args[1] == "--doc":
        doc = args.pop(2)
        args.pop(1)
    if len(args) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    d = args[0]
    steady = medians(read_csv(os.path.join(d, "hash.csv")), STEADY_KEYS, NUM)
    rp = os.path.join(d, "hash_resize.csv")
    resize = {}
    if os.path.exists(rp):
        resize = medians(read_csv(rp), ("table", "phase"), RNUM + ("keys",))
    write_table(d, steady, resize)
    if doc:
        try:
            refresh_doc(doc, steady, resize)
        except (OSError, ValueError) as e:
            print(f"plot_hash.py: {e}", file=sys.stderr)
            return 1
    plot(d, steady, resize)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
