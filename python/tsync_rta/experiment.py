"""Schedulability and memory-bound curves like RT-SMR (RTAS 2018) Figs. 11-13.

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
    # name: (GenParams field or "q", the paper's values in §VII-B / Figs. 11-13, fixed params)
    "util": ("util", [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9], {}),          # Fig. 11(a), 12
    "cores": ("cores", [1, 5, 10, 15, 20, 25, 30, 35, 40], {}),            # Fig. 11(b)
    "readers": ("readers", [0, 5, 10, 15, 20], {}),                         # Fig. 11(c)
    "read-len": ("read_len", [1, 50, 100, 150, 200, 250, 300], {}),         # Fig. 11(d)
    "writers": ("writers", [0, 5, 10, 15, 20], {}),                         # Fig. 11(e), 12
    "write-len": ("write_len", [1, 50, 100, 150, 200, 250, 300], {}),       # Fig. 11(f)
    "allocs": ("allocs", [1, 2, 4, 8, 16], {}),                             # Fig. 13(a)/(b)
    "q": ("q", [10_000, 20_000, 40_000, 60_000, 80_000, 100_000], {}),      # Fig. 13(c)/(d)
    # Fig. 13(e)/(f): schedulability against cores for a read-heavy and a write-heavy
    # reader/writer ratio (our reading of the paper: 80 % / 20 % of the request-issuing
    # tasks read)
    "cores-read-heavy": ("cores", [1, 5, 10, 15, 20, 25, 30, 35, 40], {"read_share": 0.8}),
    "cores-write-heavy": ("cores", [1, 5, 10, 15, 20, 25, 30, 35, 40], {"read_share": 0.2}),
}
FIGURE = {"util": "Fig. 11(a), 12", "cores": "Fig. 11(b)", "readers": "Fig. 11(c)",
          "read-len": "Fig. 11(d)", "writers": "Fig. 11(e), 12", "write-len": "Fig. 11(f)",
          "allocs": "Fig. 13(a)/(b)", "q": "Fig. 13(c)/(d)",
          "cores-read-heavy": "Fig. 13(e)", "cores-write-heavy": "Fig. 13(f)"}
DEFAULT_POLICIES = ("rt", "temporal", "urcu", "rt-single", "mutex", "pf-rw")

CSV_FIELDS = ["vary", "value", "policy", "blocking", "sets", "schedulable", "fraction",
              "mem_objects_mean", "mem_objects_max", "mem_bytes_mean", "mem_bytes_max",
              "q_us_mean"]


def _cast(field: str, v):
    return int(v) if field in ("cores", "readers", "writers", "allocs") else float(v)


def _analyse_one(job):
    """One task set under every policy (a worker's unit): [(policy, ok, G*, q)]."""
    ts, policies, blocking, alphas, q = job
    out = []
    for pol in policies:
        tsp = ts.with_(alpha=alphas.get(pol, ts.alpha), policy=pol)
        res = analyze(tsp, pol, blocking, q=q)
        out.append((pol, res.schedulable, res.G_objects, res.q))
    return out


def run_experiment(vary: str, values: Sequence[float], base: GenParams, sets: int,
                   policies: Sequence[str], blocking: str, alphas: dict, seed: int,
                   progress: bool = True, jobs: int = 1) -> list:
    """Rows of CSV_FIELDS; alphas: policy -> α (the quiescence cost differs per policy).

    The task sets are generated here, in order, from one generator per value seeded with
    (seed, value); `jobs` worker processes analyse them (one set under every policy per
    unit of work) and the results are collected in submission order, so the rows do not
    depend on `jobs`."""
    from tqdm import tqdm  # python3-tqdm; writes to stderr
    field, _, fixed = VARY[vary]
    base = replace(base, **fixed) if fixed else base
    work, keys = [], []
    for v in values:
        params = base if field == "q" else replace(base, **{field: _cast(field, v)})
        rng = np.random.default_rng([seed, int(v * 1000)])
        for k in range(sets):
            ts = generate_taskset(params, rng, name=f"{vary}={v}#{k}")
            work.append((ts, tuple(policies), blocking, dict(alphas),
                         float(v) if field == "q" else None))
            keys.append(v)
    bar = tqdm(total=len(work), desc=f"vary {vary}", unit="set", disable=not progress)
    results = []
    if jobs <= 1:
        for w in work:
            results.append(_analyse_one(w))
            bar.update(1)
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            for r in ex.map(_analyse_one, work, chunksize=max(1, min(8, len(work) // (jobs * 8) or 1))):
                results.append(r)
                bar.update(1)
    bar.close()
    rows = []
    for v in values:
        stats = {p: {"ok": 0, "mem": [], "q": []} for p in policies}
        for key, res in zip(keys, results):
            if key != v:
                continue
            for (pol, ok, G, q) in res:
                if ok:
                    s = stats[pol]
                    s["ok"] += 1
                    if G is not None:
                        s["mem"].append(G)
                    if q is not None:
                        s["q"].append(q)
        for pol in policies:
            s = stats[pol]
            mem = np.array(s["mem"], dtype=float)
            rows.append({
                "vary": vary, "value": v, "policy": pol,
                "blocking": "inflation" if pol == "pf-rw" else blocking, "sets": sets,
                "schedulable": s["ok"], "fraction": s["ok"] / sets if sets else 0.0,
                "mem_objects_mean": float(mem.mean()) if mem.size else "",
                "mem_objects_max": float(mem.max()) if mem.size else "",
                "mem_bytes_mean": float(mem.mean()) * base.obj_size if mem.size else "",
                "mem_bytes_max": float(mem.max()) * base.obj_size if mem.size else "",
                "q_us_mean": float(np.mean(s["q"])) if s["q"] else "",
            })
    return rows


def write_csv(rows: list, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})


LABELS = {"rt": "RT-ParSec", "temporal": "Temporal", "urcu": "U-RCU",
          "rt-single": "RT-ParSec-single", "mutex": "mutex (FIFO spin)",
          "pf-rw": "PF-RW lock (inflation)"}
STYLE = {"rt": ("C0", "o", "-"), "temporal": ("C1", "x", "--"), "urcu": ("C2", "s", "-"),
         "rt-single": ("C3", "^", ":"), "mutex": ("C4", "D", "-"), "pf-rw": ("C5", "v", "-")}
XLABEL = {"util": "per-core utilization", "cores": "cores", "readers": "readers",
          "writers": "writers", "read-len": "read request length (us)",
          "write-len": "write request length (us)", "allocs": "allocations per write",
          "q": "quiescence period q (us)", "cores-read-heavy": "cores (80 % readers)",
          "cores-write-heavy": "cores (20 % readers)"}


def plot(rows: list, path: Path, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    vary = rows[0]["vary"] if rows else ""
    for pol in dict.fromkeys(r["policy"] for r in rows):
        rr = [r for r in rows if r["policy"] == pol]
        xs = [r["value"] for r in rr]
        col, mk, ls = STYLE.get(pol, (None, "o", "-"))
        kw = dict(marker=mk, ls=ls, color=col, label=LABELS.get(pol, pol))
        a1.plot(xs, [r["fraction"] for r in rr], **kw)
        pts = [(r["value"], r["mem_bytes_mean"] / 1024) for r in rr if r["mem_bytes_mean"] != ""]
        if pts:
            a2.plot([p[0] for p in pts], [p[1] for p in pts], **kw)
    a1.set_xlabel(XLABEL.get(vary, vary)); a1.set_ylabel("schedulability")
    a1.set_ylim(-0.02, 1.02); a1.grid(alpha=0.3); a1.legend(fontsize=7)
    a2.set_xlabel(XLABEL.get(vary, vary))
    a2.set_ylabel("memory bound G* (KiB, mean of schedulable)\n(locks defer nothing: no curve)")
    a2.grid(alpha=0.3); a2.legend()
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
