"""tsync-rta: memory-bound and response-time analysis of real-time SMR (RT-SMR (RTAS 2018) §VI).

    tsync-rta analyze TASKSET [--policy rt|temporal|urcu] [--blocking auto|ilp|inflation] [--q US]
    tsync-rta generate [--cores M] [--util U] ... [--count N] --out PATH
    tsync-rta experiment [--vary util|cores|...] [--sets N] [--full] --out DIR
    tsync-rta validate TASKSET --bench PATH/TO/tsync-bench [--policy rt|temporal]
    tsync-rta admission TASKSET [--policy ...] [--blocking ...] [--cost-percentile STAT]
                        [--slack F] [--util-cap U] [--json] [--out FILE]
    tsync-rta docs-check [--write]

Exit status: 0 success, 1 validate found peak_pending > G* / admission found no
schedulable candidate / docs-check found drift, 2 bad input or the bound does not apply.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import __version__
from .analysis import analyze
from .blocking import HighsMissing, have_highspy
from .model import POLICIES, TaskSetError, dump_taskset, load_taskset


def _blocking(choice: str) -> str:
    if choice == "auto":
        return "ilp" if have_highspy() else "inflation"
    if choice == "ilp" and not have_highspy():
        raise HighsMissing("--blocking ilp needs highspy (pip install highspy); "
                           "--blocking inflation works without it")
    return choice


def _floats(s: str) -> list:
    return [float(x) for x in s.split(",") if x.strip()]


def cmd_analyze(a) -> int:
    ts = load_taskset(a.taskset)
    res = analyze(ts, a.policy or ts.policy, _blocking(a.blocking), a.q)
    out = json.dumps(res.to_dict(ts), indent=2)
    if a.out:
        Path(a.out).write_text(out + "\n")
    print(out)
    return 0


def _gen_params(a):
    from .generate import GenParams
    p = GenParams(cores=a.cores, tasks_per_core=a.tasks_per_core, util=a.util,
                  readers=a.readers, writers=a.writers,
                  read_len=None if a.read_len == "uniform" else float(a.read_len),
                  write_len=None if a.write_len == "uniform" else float(a.write_len),
                  allocs=a.allocs, alpha=a.alpha, beta=a.beta, obj_size=a.obj_size)
    return p


def cmd_generate(a) -> int:
    import numpy as np
    from .generate import generate_taskset
    params = _gen_params(a)
    rng = np.random.default_rng(a.seed)
    out = Path(a.out)
    if a.count == 1 and out.suffix.lower() in (".json", ".yaml", ".yml"):
        dump_taskset(generate_taskset(params, rng, name=out.stem), out)
        print(out)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for k in range(a.count):
        path = out / f"taskset-{k:04d}.{a.format}"
        dump_taskset(generate_taskset(params, rng, name=path.stem), path)
    print(f"{a.count} task sets in {out}")
    return 0


def cmd_experiment(a) -> int:
    from .experiment import VARY, plot, run_experiment, write_csv
    if a.full:
        a.cores = 20 if a.cores is None else a.cores
        a.sets = 500 if a.sets is None else a.sets
    a.cores = 4 if a.cores is None else a.cores
    a.sets = 20 if a.sets is None else a.sets
    params = _gen_params(a)
    values = _floats(a.values) if a.values else list(VARY[a.vary][1])
    if not a.values and not a.full and VARY[a.vary][0] in ("cores", "readers", "writers"):
        # small default: at most 8 cores / as many readers or writers as tasks
        values = [v for v in values
                  if v <= (8 if VARY[a.vary][0] == "cores" else a.cores * 10)][:5]
    policies = [p for p in a.policies.split(",") if p]
    for p in policies:
        if p not in POLICIES:
            raise TaskSetError("--policies", f"unknown policy {p!r}")
    alphas = {"rt": a.alpha_rt, "temporal": a.alpha_temporal, "urcu": a.alpha_urcu,
              "rt-single": a.alpha_rt if a.alpha_rt_single is None else a.alpha_rt_single}
    blocking = _blocking(a.blocking)
    jobs = a.jobs if a.jobs else (os.cpu_count() or 1)
    t0 = time.time()
    rows = run_experiment(a.vary, values, params, a.sets, policies, blocking, alphas,
                          a.seed, progress=not a.no_progress, jobs=jobs)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"sched-{a.vary}"
    write_csv(rows, out / f"{stem}.csv")
    from .experiment import FIGURE
    title = (f"RT-SMR {FIGURE.get(a.vary, '')}: {a.sets} task sets/point, "
             f"{params.cores} cores x {params.tasks_per_core} tasks, "
             f"U/core={params.util}, blocking={blocking}")
    plot(rows, out / f"{stem}.png", title if a.vary != "util" else title.replace(f", U/core={params.util}", ""))
    print(f"{out / (stem + '.csv')} {out / (stem + '.png')} ({time.time() - t0:.1f} s, "
          f"{jobs} job(s))")
    return 0


def cmd_admission(a) -> int:
    from .admission import format_table, load_admission, select_periods
    ts, spec = load_admission(a.taskset, a.cost_percentile, a.slack, a.util_cap)
    policy = a.policy or ts.policy
    bar = None
    if not a.no_progress and sys.stderr.isatty():
        from tqdm import tqdm
        bar = tqdm(total=len(spec.update_periods), desc="update periods", unit="period",
                   file=sys.stderr)
    adm = select_periods(ts, spec, policy, _blocking(a.blocking),
                         progress=(lambda i, n: bar.update(1)) if bar else None)
    if bar:
        bar.close()
    d = adm.to_dict()
    text = json.dumps(d, indent=2)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text if a.json else format_table(adm))
    return 0 if adm.schedulable else 1


def cmd_docs_check(a) -> int:
    from . import docs
    doc = Path(a.doc) if a.doc else docs.DOC
    results = Path(a.results) if a.results else docs.RESULTS
    if a.write:
        changed = docs.write(doc, results)
        print(f"{doc}: generated block {'rewritten' if changed else 'already up to date'}")
        return 0
    diff = docs.check(doc, results)
    if diff:
        print("\n".join(diff))
        print(f"tsync-rta docs-check: {doc} does not match {results}; "
              "run `tsync-rta docs-check --write`", file=sys.stderr)
        return 1
    print(f"{doc}: generated block matches {results}")
    return 0


def cmd_validate(a) -> int:
    from .bench import BenchError, validate
    ts = load_taskset(a.taskset)
    policy = a.policy or (ts.policy if ts.policy in ("rt", "temporal") else "rt")
    try:
        report, rc = validate(ts, a.bench, policy, _blocking(a.blocking), a.seconds, a.stat)
    except BenchError as exc:
        print(f"tsync-rta validate: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(report, indent=2)
    if a.out:
        Path(a.out).write_text(text + "\n")
    if a.json:
        print(text)
    else:
        m = report.get("measured", {})
        print(f"policy {policy}, blocking {report['blocking']}, q = {report['declared'].get('q_us')} us")
        if m:
            print(f"measured: alpha_max {m.get('alpha_ns_max')} ns, beta_max {m.get('beta_ns_max')} ns, "
                  f"read_max {m.get('read_ns_max')} ns, write_max {m.get('write_ns_max')} ns, "
                  f"deadline misses {m.get('deadline_misses')}")
            print(f"measured peak_pending: {m.get('peak_pending')} objects")
        if "G_star_objects" in report:
            print(f"G* (Eq. 5, measured overheads): {report['G_star_objects']} objects")
        for w in report.get("warnings", []):
            print(f"warning: {w}")
        print(("OK: " if rc == 0 else "FAIL: ") + report["verdict"])
    return rc


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tsync-rta", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", action="version", version=f"tsync-rta {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    blk = dict(choices=("auto", "ilp", "inflation"), default="auto",
               help="writer blocking bound: ILP of [20] via highspy, or inflation; "
                    "auto = ilp when highspy is installed (default)")

    p = sub.add_parser("analyze", help="response times, delta, memory bound, chosen q (JSON)")
    p.add_argument("taskset", help="task set, .json or .yaml")
    p.add_argument("--policy", choices=POLICIES, help="default: the task set's policy (rt)")
    p.add_argument("--blocking", **blk)
    p.add_argument("--q", type=float, help="test this quiescence period (us) instead of "
                   "selecting one with Fig. 16")
    p.add_argument("--out", help="also write the JSON here")
    p.set_defaults(fn=cmd_analyze)

    def gen_opts(p, cores_default):
        p.add_argument("--cores", type=int, default=cores_default, help="M (paper: 1..40, default 20)")
        p.add_argument("--tasks-per-core", type=int, default=10)
        p.add_argument("--util", type=float, default=0.75, help="per-core utilization (paper: 0.6-0.9)")
        p.add_argument("--readers", type=int, help="reader tasks (default cores/2)")
        p.add_argument("--writers", type=int, help="writer tasks (default cores - cores/2)")
        p.add_argument("--read-len", default="100", help="read request us, or 'uniform' (1-300)")
        p.add_argument("--write-len", default="100", help="write request us, or 'uniform' (1-300)")
        p.add_argument("--allocs", type=int, default=1, help="allocations per write (a_i)")
        p.add_argument("--alpha", type=float, default=2.0, help="quiescence cost alpha (us)")
        p.add_argument("--beta", type=float, default=0.2, help="collection cost per object beta (us)")
        p.add_argument("--obj-size", type=int, default=64)
        p.add_argument("--seed", type=int, default=1)

    p = sub.add_parser("generate", help="random task sets (Emberson et al., RT-SMR (RTAS 2018) §VII-B)")
    gen_opts(p, 4)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--format", choices=("yaml", "json"), default="yaml")
    p.add_argument("--out", required=True, help="file (count 1, .json/.yaml) or directory")
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("experiment", help="schedulability / memory-bound curves (Figs. 11-13)")
    gen_opts(p, None)
    from .experiment import VARY
    p.add_argument("--vary", choices=sorted(VARY), default="util")
    p.add_argument("--values", help="comma-separated values (default: the paper's)")
    p.add_argument("--sets", type=int, help="task sets per point (default 20; --full 500)")
    p.add_argument("--full", action="store_true",
                   help="the paper's scale: 20 cores, 500 sets, all values "
                        "(= --cores 20 --sets 500 and the full value list)")
    p.add_argument("--policies", default="rt,temporal,urcu,rt-single,mutex,pf-rw",
                   help="comma-separated (default: all six)")
    p.add_argument("--alpha-rt-single", type=float,
                   help="alpha for rt-single (us; default: --alpha-rt)")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes (default os.cpu_count()); results do not depend on it")
    p.add_argument("--alpha-rt", type=float, default=2.0, help="alpha for RT-ParSec (us)")
    p.add_argument("--alpha-temporal", type=float, default=0.05, help="alpha for temporal (us)")
    p.add_argument("--alpha-urcu", type=float, default=1.0, help="alpha for U-RCU (us)")
    p.add_argument("--blocking", **blk)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--out", required=True, help="directory for CSV and PNG")
    p.set_defaults(fn=cmd_experiment)

    p = sub.add_parser("admission", help="period selection for tasks with p: read / "
                       "update (RT-SMR (RTAS 2018) §VII-C, Fig. 14(a))")
    p.add_argument("taskset", help="task set with an admission: map (.yaml or .json)")
    p.add_argument("--policy", choices=POLICIES, help="default: the task set's policy (rt)")
    p.add_argument("--blocking", **blk)
    p.add_argument("--cost-percentile", metavar="STAT",
                   help="which statistic of a measured cost (a map in the task set) to "
                        "admit on: mean, max or pN (default: admission.cost, else p99.9)")
    p.add_argument("--slack", type=float, metavar="F",
                   help="every response time <= F x its period, 0 < F <= 1 (default: "
                        "admission.slack, else 0.7; 1 = the paper's test)")
    p.add_argument("--util-cap", type=float, metavar="U",
                   help="also keep each core's utilisation (Σ e/p + α/q) <= U "
                        "(default: admission.util_cap, else none)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (the tsync-bench rt-cache contract)")
    p.add_argument("--out", help="also write the JSON here")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (shown on stderr only when it is a terminal)")
    p.set_defaults(fn=cmd_admission)

    p = sub.add_parser("docs-check", help="check (or --write) docs/rt-analysis.md's "
                       "generated results block against docs/results/rt/analysis/")
    p.add_argument("--write", action="store_true", help="rewrite the block from the data")
    p.add_argument("--doc", help="default: docs/rt-analysis.md of this checkout")
    p.add_argument("--results", help="default: docs/results/rt/analysis of this checkout")
    p.set_defaults(fn=cmd_docs_check)

    p = sub.add_parser("validate", help="run tsync-bench rt and check peak_pending <= G*")
    p.add_argument("taskset")
    p.add_argument("--bench", required=True, help="path to tsync-bench")
    p.add_argument("--policy", choices=("rt", "temporal"))
    p.add_argument("--blocking", **blk)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--stat", choices=("max", "p99"), default="max",
                   help="which measured alpha/beta to plug in (default max)")
    p.add_argument("--json", action="store_true", help="print the full JSON report")
    p.add_argument("--out", help="write the JSON report here")
    p.set_defaults(fn=cmd_validate)
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        return a.fn(a)
    except TaskSetError as exc:
        print(f"tsync-rta: invalid task set: {exc}", file=sys.stderr)
        return 2
    except (HighsMissing, FileNotFoundError, ValueError) as exc:
        print(f"tsync-rta: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
