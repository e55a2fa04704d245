"""`tsync-rta validate`: run `tsync-bench rt` on a task set and check the measured peak
of pending (zombie + garbage) objects against the bound G* (Eq. 5) computed with the
measured overheads - the check of RT-SMR (RTAS 2018) Fig. 14(c).

The command line follows the fixed contract between the C and Python halves
(docs/rt-analysis.md, "Validation"):

    tsync-bench rt --policy rt|temporal [--grace-us G] [--q-us Q] [--obj-size B]
                   --task period_us=P,wcet_us=E,allocs=A,reads=R,core=C,prio=K ...
                   [--seconds S] --json -
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import replace
from typing import Optional

from .analysis import Result, analyze, schedulability_test
from .model import TaskSet


class BenchError(RuntimeError):
    pass


def bench_priorities(ts: TaskSet) -> dict:
    """Integer priorities for the bench (larger = higher, as SCHED_FIFO): the rank of
    each task's priority on its core, 1 = lowest."""
    out = {}
    for c in range(ts.cores):
        mine = sorted((t for t in ts.tasks if t.core == c), key=lambda t: t.prio)
        for rank, t in enumerate(mine):
            out[t.name] = rank + 1
    return out


def bench_args(ts: TaskSet, policy: str, q_us: float, grace_us: Optional[float],
               seconds: float) -> list:
    """`tsync-bench rt` arguments for a task set (contract above). Periods are rounded
    up and WCETs to the nearest whole microsecond; a job's `allocs` write requests each
    allocate one object, so the bench's writes per job are a_i."""
    if policy not in ("rt", "temporal"):
        raise ValueError("validate runs the rt or temporal policy")
    prio = bench_priorities(ts)
    args = ["rt", "--policy", policy, "--q-us", str(int(math.ceil(q_us))),
            "--obj-size", str(ts.obj_size), "--seconds", f"{seconds:g}", "--json", "-"]
    if policy == "temporal":
        args += ["--grace-us", str(int(math.ceil(grace_us or 0.0)))]
    for t in ts.tasks:
        args += ["--task", f"period_us={int(math.ceil(t.p))},wcet_us={max(1, int(round(t.e)))},"
                           f"allocs={t.a},reads={t.reads},core={t.core},prio={prio[t.name]}"]
    return args


def parse_bench_json(text: str) -> dict:
    """The contract JSON from the bench's stdout (tolerates lines before it)."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end < start:
        raise BenchError("no JSON object in tsync-bench output")
    try:
        return json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise BenchError(f"tsync-bench printed invalid JSON: {exc}") from None


REQUIRED = ("alpha_ns_max", "beta_ns_max", "read_ns_max", "write_ns_max", "peak_pending", "tasks")


def measured_taskset(ts: TaskSet, m: dict, stat: str = "max") -> TaskSet:
    """The task set with the bench's measured α, β (ns -> us), Γʳ and Γʷ (the largest
    measured request of each kind, for every task issuing one), one write request per
    allocation (the bench's job shape), e_i raised to cover its requests, and
    reclamation `on_free` (tsync reclaims in ps_free/ps_alloc, at most every q)."""
    for k in REQUIRED:
        if k not in m:
            raise BenchError(f"tsync-bench JSON lacks '{k}'")
    a_key = "alpha_ns_p99" if stat == "p99" and "alpha_ns_p99" in m else "alpha_ns_max"
    b_key = "beta_ns_p99" if stat == "p99" and "beta_ns_p99" in m else "beta_ns_max"
    alpha = float(m[a_key]) / 1000.0
    beta = float(m[b_key]) / 1000.0
    gr = float(m["read_ns_max"]) / 1000.0
    gw = float(m["write_ns_max"]) / 1000.0
    tasks = []
    for t in ts.tasks:
        reads = t.reads
        writes = t.a
        g_r = max(gr, 1e-3) if reads else 0.0
        g_w = max(gw, 1e-3) if writes else 0.0
        e = max(t.e, reads * g_r + writes * g_w)
        tasks.append(replace(t, gamma_r=g_r, gamma_w=g_w, writes=writes, e=e))
    return ts.with_(tasks=tuple(tasks), alpha=alpha, beta=beta, reclaim="on_free", q=None)


def validate(ts: TaskSet, bench: str, policy: str, blocking: str, seconds: float = 2.0,
             stat: str = "max", timeout: Optional[float] = None) -> tuple:
    """Analyse (Fig. 16) -> run the bench with the chosen q (and, for temporal, grace
    period Δ*) -> re-analyse at that q with the measured overheads -> compare.
    Returns (report dict, exit code): 0 peak <= G*, 1 peak > G* (bound violated),
    2 the bound does not apply (analysis unschedulable)."""
    declared = analyze(ts.with_(reclaim="on_free"), policy, blocking)
    report: dict = {"policy": policy, "blocking": blocking,
                    "declared": declared.to_dict(ts)}
    if not declared.schedulable:
        report["verdict"] = "not schedulable with the declared parameters; nothing to run"
        return report, 2
    q = declared.q
    grace = declared.grace if policy == "temporal" else None
    args = bench_args(ts, policy, q, grace, seconds)
    report["command"] = [bench] + args
    try:
        proc = subprocess.run([bench] + args, capture_output=True, text=True,
                              timeout=timeout or seconds * 10 + 60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"could not run {bench}: {exc}") from None
    if proc.returncode != 0:
        raise BenchError(f"{bench} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    m = parse_bench_json(proc.stdout)
    report["measured"] = {k: m.get(k) for k in (
        "alpha_ns_max", "alpha_ns_p99", "beta_ns_max", "beta_ns_p99", "read_ns_max",
        "write_ns_max", "peak_pending", "peak_live", "max_wait_us", "skew_ticks",
        "ticks_per_us", "seconds")}
    misses = sum(int(t.get("deadline_misses", 0)) for t in m.get("tasks", []))
    report["measured"]["deadline_misses"] = misses
    mts = measured_taskset(ts, m, stat)
    res = schedulability_test(mts, q, policy, blocking)
    report["with_measured"] = res.to_dict(mts)
    peak = int(m["peak_pending"])
    warnings = []
    if policy == "temporal" and declared.grace is not None and \
            float(m["read_ns_max"]) / 1000.0 > max((t.gamma_r for t in ts.tasks), default=0):
        warnings.append("measured read requests exceed the declared gamma_r the temporal "
                        "grace period was computed from")
    if misses:
        warnings.append(f"{misses} deadline misses in the run: the task model was not met")
    report["warnings"] = warnings
    if not res.schedulable:
        report["verdict"] = ("bound not established: with the measured overheads the task set "
                             f"is not schedulable ({res.reason}); peak_pending={peak}")
        return report, 2
    report["peak_pending"] = peak
    report["G_star_objects"] = res.G_objects
    report["ok"] = peak <= res.G_objects
    report["verdict"] = (f"peak_pending {peak} {'<=' if report['ok'] else '>'} "
                         f"G* {res.G_objects} objects at q={q:g} us")
    return report, 0 if report["ok"] else 1
