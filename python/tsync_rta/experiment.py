"""Schedulability and memory-bound curves like seed 004 Figs. 11-13.

For each value of one varied parameter, `sets` task sets are generated (§VII-B, the same
sets for every policy), each analysed per policy with Fig. 16's quiescence-period
selection (or at the fixed q when q itself is varied, Fig. 13(c)/(d)). Written: a CSV
with one row per (value, policy) and a PNG with the schedulability fraction and the mean
memory bound G* of the schedulable sets.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from .analysis import analyze
from .generate import GenParams, generate_taskset

VARY = {
    # name: (GenParams field or "q", seed's values in §VII-B / Figs. 11-13)
    "util": ("util", [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]),
    "cores": ("cores", [1, 5, 10, 15, 20, 25, 30, 35, 40]),
    "readers": ("readers", [0, 5, 10, 15, 20]),
    "writers": ("writers", [0, 5, 10, 15, 20]),
    "read-len": ("read_len", [1, 50, 100, 150, 200, 250, 300]),
    "write-len": ("write_len", [1, 50, 100, 150, 200, 250, 300]),
    "allocs": ("allocs", [1, 2, 4, 8, 16]),
    "q": ("q", [10_000, 20_000, 40_000, 60_000, 80_000, 100_000]),
}

CSV_FIELDS = ["vary", "value", "policy", "blocking", "sets", "schedulable", "fraction",
              "mem_objects_mean", "mem_objects_max", "mem_bytes_mean", "mem_bytes_max",
              "q_us_mean"]


def _cast(field: str, v):
    return int(v) if field in ("cores", "readers", "writers", "allocs") else float(v)


def run_experiment(vary: str, values: Sequence[float], base: GenParams, sets: int,
                   policies: Sequence[str], blocking: str, alphas: dict, seed: int,
                   progress: bool = True) -> list:
    """Rows of CSV_FIELDS; alphas: policy -> α (the quiescence cost differs per policy)."""
    from tqdm import tqdm  # python3-tqdm
    field, _ = VARY[vary]
    rows = []
    total = len(values) * sets
    bar = tqdm(total=total, desc=f"vary {vary}", unit="set", disable=not progress)
    for v in values:
        params = base if field == "q" else replace(base, **{field: _cast(field, v)})
        rng = np.random.default_rng([seed, int(v * 1000)])
        stats = {p: {"ok": 0, "mem": [], "q": []} for p in policies}
        for k in range(sets):
            ts = generate_taskset(params, rng, name=f"{vary}={v}#{k}")
            for pol in policies:
                tsp = ts.with_(alpha=alphas.get(pol, ts.alpha), policy=pol)
                res = analyze(tsp, pol, blocking, q=float(v) if field == "q" else None)
                if res.schedulable:
                    s = stats[pol]
                    s["ok"] += 1
                    s["mem"].append(res.G_objects)
                    s["q"].append(res.q)
            bar.update(1)
        for pol in policies:
            s = stats[pol]
            mem = np.array(s["mem"], dtype=float)
            rows.append({
                "vary": vary, "value": v, "policy": pol, "blocking": blocking, "sets": sets,
                "schedulable": s["ok"], "fraction": s["ok"] / sets if sets else 0.0,
                "mem_objects_mean": float(mem.mean()) if mem.size else "",
                "mem_objects_max": float(mem.max()) if mem.size else "",
                "mem_bytes_mean": float(mem.mean()) * base.obj_size if mem.size else "",
                "mem_bytes_max": float(mem.max()) * base.obj_size if mem.size else "",
                "q_us_mean": float(np.mean(s["q"])) if s["q"] else "",
            })
    bar.close()
    return rows


def write_csv(rows: list, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})


LABELS = {"rt": "RT-ParSec", "temporal": "Temporal", "urcu": "U-RCU"}
XLABEL = {"util": "per-core utilization", "cores": "cores", "readers": "readers",
          "writers": "writers", "read-len": "read request length (us)",
          "write-len": "write request length (us)", "allocs": "allocations per write",
          "q": "quiescence period q (us)"}


def plot(rows: list, path: Path, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    vary = rows[0]["vary"] if rows else ""
    for pol in dict.fromkeys(r["policy"] for r in rows):
        rr = [r for r in rows if r["policy"] == pol]
        xs = [r["value"] for r in rr]
        a1.plot(xs, [r["fraction"] for r in rr], marker="o", label=LABELS.get(pol, pol))
        pts = [(r["value"], r["mem_bytes_mean"] / 1024) for r in rr if r["mem_bytes_mean"] != ""]
        if pts:
            a2.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=LABELS.get(pol, pol))
    a1.set_xlabel(XLABEL.get(vary, vary)); a1.set_ylabel("schedulability")
    a1.set_ylim(-0.02, 1.02); a1.grid(alpha=0.3); a1.legend()
    a2.set_xlabel(XLABEL.get(vary, vary)); a2.set_ylabel("memory bound G* (KiB, mean of schedulable)")
    a2.grid(alpha=0.3); a2.legend()
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
