"""Admission control by period selection, RT-SMR (RTAS 2018) §VII-C and Fig. 14(a).

A task set whose tasks may have a *variable* period: ``p: read`` (the get tasks of the
memcached study) or ``p: update`` (the set tasks). For every candidate update period U
the minimal read period R(U) that keeps the task set schedulable is searched; the
throughput of (U, R(U)) is the objective; the chosen U is "the minimal update period
that maximizes the total throughput" (§VII-C).

Input: the task-set format of :mod:`tsync_rta.model` with two extensions::

    tasks:
      - {name: get0, e: 2.0, p: read,   core: 0, prio: 2, gamma_r: 1.0}
      - {name: set0, e: 3.0, p: update, core: 0, prio: 1, gamma_w: 1.5, a: 1}
    admission:
      update_periods: {min: 20, max: 2000, steps: 7}   # or a list [20, 50, ...] (us)
      read_period: {min: 2, max: 1000000}   # search range (us); default min = the
                                            # largest e of the read tasks, max = 1e6
      resolution: 0.01      # relative precision of the minimal read period (default)
      q: 100                # optional fixed quiescence period (us); else Fig. 16
      objective: requests   # Σ over variable-period tasks of (reads + writes) / p, in 1/s
      cost: p99.9           # which statistic of a measured cost to admit on (default)
      slack: 0.7            # every response time <= slack x its period (default 0.7)
      util_cap: 0.8         # optional: per-core utilisation (Σ e/p + α/q) <= util_cap

Every task needs an explicit ``prio`` when some period is variable (rate-monotonic
priorities would depend on the periods being chosen).

Measured costs: a task's ``e``, ``gamma_r``, ``gamma_w`` and the top-level ``alpha``,
``beta`` and ``release_jitter`` may be a map of statistics of a measured distribution
instead of one number, e.g. ``e: {mean: 1.9, p99: 2.6, p99.9: 3.4, max: 41}`` (what
``tsync-bench rt-cache`` writes); ``cost`` (or ``--cost-percentile``) picks one -
``mean``, ``max`` or ``pN``.

Why the defaults (docs/rt-analysis.md, "Admission control"): the paper admits its soft
real-time memcached on average costs and keeps the highest-throughput pair (§VII-C); with
periods bisected to 1 % that leaves no slack, so any job costing more than average, or
any interrupt, misses. A tail statistic (p99.9) bounds all but one job in a thousand, and
the slack keeps 30 % of every period for what the model does not hold (the timer tick
and interrupts, unless given as ``interference``).

Why a bisection on R is sound (docs/rt-analysis.md, "Admission control"): at a fixed q,
every term of the analysis is non-increasing in a task's period - the interference
Σ ⌈W/p_k⌉ e_k, the remote request counts ⌈(W + r_x)/p_x⌉ of the ILP, the allocations
A(W) of Eqs. 1-2, hence δ, L*, Δ* and G* - and the read tasks' own response times do
not depend on their own periods; so if R is schedulable, so is every R' > R. Two
things break this: Fig. 16's q candidates are derived from the task periods (minimum
to maximum in steps of the minimum), and ``reclaim: on_free`` makes q* grow with the
periods of allocating tasks. When either applies (or read tasks allocate), the result
of the bisection is checked against its neighbours R / (1 + resolution)^k, k = 1..3,
and the bisection continues below any schedulable neighbour (`non_monotone` in the
candidate says it happened).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from .analysis import LOCK_POLICIES, Result, analyze, reclaimer_hosts, schedulability_test
from .model import POLICIES, TaskSet, TaskSetError, _num, _unknown, load_document, parse_taskset

__all__ = ["AdmissionSpec", "Candidate", "Admission", "parse_admission", "load_admission",
           "select_periods", "min_read_period", "resolve_costs", "core_utilisation"]

_ADM_KEYS = {"update_periods", "read_period", "resolution", "q", "objective", "cost", "slack",
             "util_cap"}
VARIABLE = ("read", "update")
OBJECTIVES = ("requests",)
DEFAULT_READ_MAX = 1e6
NEIGHBOURS = 3
DEFAULT_COST = "p99.9"
DEFAULT_SLACK = 0.7
# the fields that may hold a map of cost statistics
_COST_TOP = ("alpha", "beta", "release_jitter")
_COST_TASK = ("e", "gamma_r", "gamma_w")


@dataclass(frozen=True)
class AdmissionSpec:
    """The `admission:` map, validated; read_tasks / update_tasks: task names."""
    update_periods: tuple
    read_min: float
    read_max: float
    resolution: float = 0.01
    q: Optional[float] = None
    objective: str = "requests"
    read_tasks: tuple = ()
    update_tasks: tuple = ()
    cost: str = DEFAULT_COST
    slack: float = DEFAULT_SLACK
    util_cap: Optional[float] = None


@dataclass
class Candidate:
    update_period: Optional[float]
    read_period: Optional[float]
    schedulable: bool
    throughput: float = 0.0
    get_rps: float = 0.0
    set_rps: float = 0.0
    result: Optional[Result] = None
    non_monotone: bool = False
    tests: int = 0

    def to_dict(self) -> dict:
        r = self.result
        return {"update_period_us": self.update_period, "read_period_us": self.read_period,
                "schedulable": self.schedulable, "throughput_rps": self.throughput,
                "get_rps": self.get_rps, "set_rps": self.set_rps,
                "bound_objects": r.G_objects if (r is not None and self.schedulable) else None,
                "q_us": r.q if (r is not None and self.schedulable) else None,
                "non_monotone": self.non_monotone, "tests": self.tests}


@dataclass
class Admission:
    policy: str
    blocking: str
    chosen: Optional[Candidate]
    candidates: list
    ts: TaskSet
    spec: AdmissionSpec

    @property
    def schedulable(self) -> bool:
        return self.chosen is not None

    def to_dict(self) -> dict:
        c = self.chosen
        r = c.result if c else None
        d = {"schedulable": c is not None, "policy": self.policy, "blocking": self.blocking,
             "objective": self.spec.objective, "cost": self.spec.cost,
             "slack": self.spec.slack, "util_cap": self.spec.util_cap,
             "update_period_us": c.update_period if c else None,
             "read_period_us": c.read_period if c else None,
             "q_us": (r.q if r is not None else None),
             "throughput_rps": c.throughput if c else 0.0,
             "get_rps": c.get_rps if c else 0.0, "set_rps": c.set_rps if c else 0.0,
             "bound_objects": r.G_objects if r is not None else None,
             "bound_bytes": r.G_bytes if r is not None else None,
             "candidates": [x.to_dict() for x in self.candidates]}
        if r is not None and r.note:
            d["note"] = r.note
        if self.policy in LOCK_POLICIES:
            d["memory_bound"] = "not applicable: a lock defers no frees"
        if r is not None:
            d["analysis"] = r.to_dict(_with_periods(self.ts, self.spec, c.update_period,
                                                     c.read_period))
        return d


# ---------------------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------------------

def _grid(raw: Any, fname: str) -> tuple:
    if isinstance(raw, list):
        if not raw:
            raise TaskSetError(fname, "must not be empty")
        vals = sorted({_num(v, f"{fname}[{i}]", positive=True) for i, v in enumerate(raw)})
        return tuple(vals)
    if isinstance(raw, dict):
        _unknown(raw, {"min", "max", "steps"}, fname + ".")
        for k in ("min", "max", "steps"):
            if k not in raw:
                raise TaskSetError(f"{fname}.{k}", "missing (required)")
        lo = _num(raw["min"], f"{fname}.min", positive=True)
        hi = _num(raw["max"], f"{fname}.max", positive=True)
        n = _num(raw["steps"], f"{fname}.steps", positive=True, integer=True)
        if hi < lo:
            raise TaskSetError(f"{fname}.max", f"must be >= {fname}.min ({lo:g})")
        if n == 1 or hi == lo:
            return (lo,)
        vals = [lo * (hi / lo) ** (k / (n - 1)) for k in range(n)]
        vals[-1] = hi
        return tuple(round(v, 3) for v in vals)
    raise TaskSetError(fname, "must be a list of periods (us) or {min, max, steps}")


def _check_stat(stat: Any, fname: str) -> str:
    """A cost statistic: mean, max, or pN with 0 < N < 100 (p99, p99.9)."""
    if isinstance(stat, str):
        if stat in ("mean", "max"):
            return stat
        if stat.startswith("p"):
            try:
                v = float(stat[1:])
            except ValueError:
                v = -1.0
            if 0 < v < 100:
                return stat
    raise TaskSetError(fname, f"must be mean, max or pN with 0 < N < 100 (p99.9), got {stat!r}")


def _pick(v: Any, stat: str, fname: str) -> Any:
    """A cost field: a number stays as it is; a map of statistics gives its `stat`."""
    if not isinstance(v, dict):
        return v
    if stat not in v:
        raise TaskSetError(fname, f"has no {stat!r} (statistics given: "
                           f"{', '.join(map(str, v)) or 'none'}; choose one with "
                           f"--cost-percentile or admission.cost)")
    return v[stat]


def resolve_costs(doc: dict, stat: str) -> dict:
    """The document with every cost map (alpha, beta, release_jitter; a task's e,
    gamma_r, gamma_w; an interference's e) replaced by its statistic `stat`."""
    doc = dict(doc)
    for k in _COST_TOP:
        if k in doc:
            doc[k] = _pick(doc[k], stat, k)
    if isinstance(doc.get("interference"), list):
        doc["interference"] = [dict(x, e=_pick(x["e"], stat, f"interference[{i}].e"))
                               if isinstance(x, dict) and "e" in x else x
                               for i, x in enumerate(doc["interference"])]
    if isinstance(doc.get("tasks"), list):
        tasks = []
        for i, t in enumerate(doc["tasks"]):
            if isinstance(t, dict):
                t = dict(t)
                for k in _COST_TASK:
                    if k in t:
                        t[k] = _pick(t[k], stat, f"tasks[{i}].{k}")
            tasks.append(t)
        doc["tasks"] = tasks
    return doc


def parse_admission(doc: Any, cost: Optional[str] = None, slack: Optional[float] = None,
                    util_cap: Optional[float] = None) -> tuple:
    """Validate an admission document: (TaskSet template, AdmissionSpec). In the
    template a variable period is 1 us, only so that parse_taskset can validate the
    rest of the task; every analysis sets the real periods (_with_periods). cost, slack,
    util_cap (the command line's) override the document's admission.cost, .slack and
    .util_cap."""
    if not isinstance(doc, dict):
        raise TaskSetError("<top>", "a task set is a mapping with 'cores' and 'tasks'")
    doc = dict(doc)
    adm = doc.pop("admission", None)
    if adm is None:
        adm = {}
    if not isinstance(adm, dict):
        raise TaskSetError("admission", "must be a mapping")
    _unknown(adm, _ADM_KEYS, "admission.")
    if cost is not None:
        stat = _check_stat(cost, "--cost-percentile")
    else:
        stat = _check_stat(adm.get("cost", DEFAULT_COST), "admission.cost")
    if slack is not None:
        f = _num(slack, "--slack", positive=True)
        if f > 1:
            raise TaskSetError("--slack", f"must be in (0, 1], got {f:g}")
    else:
        f = _num(adm.get("slack", DEFAULT_SLACK), "admission.slack", positive=True)
        if f > 1:
            raise TaskSetError("admission.slack", f"must be in (0, 1], got {f:g}")
    if util_cap is not None:
        cap = _num(util_cap, "--util-cap", positive=True)
    elif adm.get("util_cap") is not None:
        cap = _num(adm["util_cap"], "admission.util_cap", positive=True)
    else:
        cap = None
    doc = resolve_costs(doc, stat)
    raw_tasks = doc.get("tasks")
    reads, updates = [], []
    if isinstance(raw_tasks, list):
        new_tasks = []
        variable = any(isinstance(t, dict) and isinstance(t.get("p"), str) for t in raw_tasks)
        for i, t in enumerate(raw_tasks):
            if isinstance(t, dict) and isinstance(t.get("p"), str):
                if t["p"] not in VARIABLE:
                    raise TaskSetError(f"tasks[{i}].p", f"must be a number, 'read' or "
                                       f"'update', got {t['p']!r}")
                (reads if t["p"] == "read" else updates).append(str(t.get("name", f"t{i}")))
                t = dict(t, p=1.0)   # set per candidate by _with_periods
            if variable and isinstance(t, dict) and t.get("prio") is None:
                raise TaskSetError(f"tasks[{i}].prio", "required when a period is 'read' "
                                   "or 'update' (rate-monotonic priorities would depend on "
                                   "the periods being chosen)")
            new_tasks.append(t)
        doc["tasks"] = new_tasks
    ts = parse_taskset(doc)
    if updates:
        if "update_periods" not in adm:
            raise TaskSetError("admission.update_periods", "missing (required: tasks with "
                               "p: update need candidate periods)")
        ups = _grid(adm["update_periods"], "admission.update_periods")
    else:
        ups = (None,)
        if "update_periods" in adm:
            _grid(adm["update_periods"], "admission.update_periods")
    rp = adm.get("read_period", {}) or {}
    if not isinstance(rp, dict):
        raise TaskSetError("admission.read_period", "must be a mapping {min, max}")
    _unknown(rp, {"min", "max"}, "admission.read_period.")
    emax = max((t.e for t in ts.tasks if t.name in reads), default=1.0)
    rmin = _num(rp.get("min", emax), "admission.read_period.min", positive=True)
    rmax = _num(rp.get("max", DEFAULT_READ_MAX), "admission.read_period.max", positive=True)
    if rmax < rmin:
        raise TaskSetError("admission.read_period.max",
                           f"must be >= admission.read_period.min ({rmin:g})")
    res = _num(adm.get("resolution", 0.01), "admission.resolution", positive=True)
    if res >= 1:
        raise TaskSetError("admission.resolution", f"must be < 1 (relative), got {res:g}")
    q = None if adm.get("q") is None else _num(adm["q"], "admission.q", positive=True)
    obj = adm.get("objective", "requests")
    if obj not in OBJECTIVES:
        raise TaskSetError("admission.objective", f"must be one of {', '.join(OBJECTIVES)}, "
                           f"got {obj!r}")
    spec = AdmissionSpec(ups, rmin, rmax, res, q, obj, tuple(reads), tuple(updates), stat, f,
                         cap)
    return ts, spec


def load_admission(path: str | Path, cost: Optional[str] = None,
                   slack: Optional[float] = None, util_cap: Optional[float] = None) -> tuple:
    """Read an admission task set (.yaml/.yml/.json): (TaskSet template, AdmissionSpec);
    cost, slack, util_cap as parse_admission's."""
    return parse_admission(load_document(path), cost, slack, util_cap)


# ---------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------

def _with_periods(ts: TaskSet, spec: AdmissionSpec, U: Optional[float],
                  R: Optional[float]) -> TaskSet:
    tasks = []
    for t in ts.tasks:
        if t.name in spec.read_tasks:
            t = replace(t, p=float(R))
        elif t.name in spec.update_tasks:
            t = replace(t, p=float(U))
        tasks.append(t)
    return ts.with_(tasks=tuple(tasks))


def _rates(ts: TaskSet, spec: AdmissionSpec, U, R) -> tuple:
    get = sum((t.reads + t.writes) * 1e6 / R for t in ts.tasks if t.name in spec.read_tasks)
    put = sum((t.reads + t.writes) * 1e6 / U for t in ts.tasks if t.name in spec.update_tasks)
    return get, put


def _up(x: float) -> float:
    """Round a period up to whole nanoseconds (what is reported is what was tested)."""
    return math.ceil(x * 1000 - 1e-6) / 1000


def core_utilisation(ts: TaskSet, q: Optional[float], policy: str) -> dict:
    """Per core: Σ e_i/p_i over its tasks and the platform's interference, plus α/q for
    each reclamation task σ it hosts (none for the lock policies; q: the quiescence
    period the analysis used)."""
    u = {c: 0.0 for c in range(ts.cores)}
    for t in ts.tasks:
        u[t.core] += t.e / t.p
    for x in ts.interference:
        for c in u:
            if x.core in (None, c):
                u[c] += x.e / x.p
    if policy not in LOCK_POLICIES and q:
        for h in reclaimer_hosts(ts, policy):
            u[h.core] += ts.alpha / q
    return u


def _over_cap(res: Result, tsx: TaskSet, policy: str, cap: Optional[float]) -> Result:
    """res, made unschedulable when some core's utilisation exceeds the cap. Utilisation
    falls as R grows, so the bisection on R stays sound."""
    if cap is None or not res.schedulable:
        return res
    u = core_utilisation(tsx, res.q, policy)
    c = max(u, key=lambda k: u[k])
    if u[c] > cap * (1 + 1e-12):
        res.schedulable = False
        res.reason = f"core {c} utilisation {u[c]:.4f} above the cap {cap:g}"
    return res


def _may_be_non_monotone(ts: TaskSet, spec: AdmissionSpec, policy: str) -> bool:
    if policy in LOCK_POLICIES:
        return False
    fixed_q = spec.q is not None or ts.q is not None
    reads_alloc = any(t.a for t in ts.tasks if t.name in spec.read_tasks)
    return (not fixed_q) or ts.reclaim == "on_free" or reads_alloc


def min_read_period(ts: TaskSet, spec: AdmissionSpec, U: Optional[float], policy: str,
                    blocking: str) -> Candidate:
    """The minimal schedulable read period for update period U (None without update
    tasks): geometric bisection on [read_min, read_max] to the relative resolution, then
    (where schedulability may be non-monotone in R, see the module docstring) a check of
    the neighbours below. Without read tasks: just the test at U."""
    tests = 0

    f = spec.slack

    def test(R):
        nonlocal tests
        tests += 1
        tsx = _with_periods(ts, spec, U, R)
        if policy in LOCK_POLICIES:
            return _over_cap(schedulability_test(tsx, None, policy, blocking, f), tsx,
                             policy, spec.util_cap)
        if spec.q is None and tsx.q is None:
            # Fig. 16 scans q = R, 2R, ... up to the longest period; when the tasks miss
            # a deadline even with free reclamation (α = β = 0: every SMR term is >= 0
            # and no SMR term decreases as α or β grow), every q fails: skip the scan.
            free = schedulability_test(tsx.with_(alpha=0.0, beta=0.0),
                                       max(t.p for t in tsx.tasks), policy, blocking, f)
            if not free.schedulable and not free.reason.startswith("reclamation task"):
                free.reason = "even without SMR overheads: " + free.reason
                return free
        return _over_cap(analyze(tsx, policy, blocking, q=spec.q, deadline_factor=f), tsx,
                         policy, spec.util_cap)

    if not spec.read_tasks:
        res = test(None)
        c = Candidate(U, None, res.schedulable, result=res)
    else:
        lo, hi = _up(spec.read_min), _up(spec.read_max)
        res_hi = test(hi)
        if not res_hi.schedulable:
            return Candidate(U, None, False, result=res_hi, tests=tests)
        res_lo = test(lo)
        best, best_res = (lo, res_lo) if res_lo.schedulable else (hi, res_hi)
        non_mono = False
        check = _may_be_non_monotone(ts, spec, policy)
        rounds = 0
        while not res_lo.schedulable:
            # invariant: lo unschedulable, best schedulable
            hi = best
            while hi / lo > 1 + spec.resolution:
                mid = _up(math.sqrt(lo * hi))
                if mid <= lo or mid >= hi:
                    break
                r = test(mid)
                if r.schedulable:
                    hi, best, best_res = mid, mid, r
                else:
                    lo = mid
            if not check or rounds >= 8:
                break
            rounds += 1
            found = None
            for k in range(1, NEIGHBOURS + 1):
                nb = _up(best / (1 + spec.resolution) ** k)
                if nb < _up(spec.read_min):
                    break
                r = test(nb)
                if r.schedulable:
                    found = (nb, r)
                    break
            if found is None:
                break
            non_mono = True
            best, best_res = found
            lo = _up(spec.read_min)
            res_lo = test(lo)
            if res_lo.schedulable:
                best, best_res = lo, res_lo
        c = Candidate(U, best, True, result=best_res, non_monotone=non_mono)
    c.tests = tests
    if c.schedulable:
        c.get_rps, c.set_rps = _rates(ts, spec, U, c.read_period)
        c.throughput = c.get_rps + c.set_rps
    return c


def select_periods(ts: TaskSet, spec: AdmissionSpec, policy: Optional[str] = None,
                   blocking: str = "ilp", progress=None) -> Admission:
    """RT-SMR (RTAS 2018) §VII-C: for each candidate update period the minimal
    schedulable read period; the chosen pair maximises the objective (total requests per
    second), ties going to the smallest update period. `progress(i, n)` is called after
    each candidate."""
    policy = policy or ts.policy
    if policy not in POLICIES:
        raise TaskSetError("policy", f"must be one of {', '.join(POLICIES)}, got {policy!r}")
    cands = []
    for i, U in enumerate(spec.update_periods):
        cands.append(min_read_period(ts, spec, U, policy, blocking))
        if progress:
            progress(i + 1, len(spec.update_periods))
    chosen = None
    for c in cands:   # ascending U: strict improvement only -> ties keep the smaller U
        if c.schedulable and (chosen is None or
                              c.throughput > chosen.throughput * (1 + 1e-12)):
            chosen = c
    used = next((c.result.blocking for c in cands if c.result is not None), blocking)
    return Admission(policy, used, chosen, cands, ts, spec)


def format_table(adm: Admission) -> str:
    """The human-readable form of `tsync-rta admission` (without --json)."""
    def f(x, nd=1):
        return "-" if x is None else f"{x:,.{nd}f}"
    cap = "" if adm.spec.util_cap is None else f", utilisation cap {adm.spec.util_cap:g}"
    lines = [f"policy {adm.policy}, blocking {adm.blocking}, objective {adm.spec.objective} "
             f"(requests/s of the variable-period tasks)",
             f"costs: {adm.spec.cost}; slack: every response time <= {adm.spec.slack:g} x its "
             f"period{cap}",
             f"read tasks: {', '.join(adm.spec.read_tasks) or '-'}; update tasks: "
             f"{', '.join(adm.spec.update_tasks) or '-'}",
             "",
             f"{'update p (us)':>14} {'min read p (us)':>16} {'q (us)':>10} "
             f"{'get/s':>12} {'set/s':>12} {'total/s':>12} {'G* (obj)':>9}"]
    for c in adm.candidates:
        d = c.to_dict()
        mark = " <- chosen" if c is adm.chosen else ""
        mark += " (non-monotone)" if c.non_monotone else ""
        lines.append(f"{f(c.update_period, 3):>14} {f(c.read_period, 3):>16} "
                     f"{f(d['q_us'], 3):>10} {f(c.get_rps, 0):>12} {f(c.set_rps, 0):>12} "
                     f"{f(c.throughput, 0):>12} "
                     f"{'-' if d['bound_objects'] is None else d['bound_objects']:>9}{mark}")
    lines.append("")
    if adm.chosen is None:
        lines.append("NOT SCHEDULABLE: no candidate update period admits any read period "
                     f"in [{adm.spec.read_min:g}, {adm.spec.read_max:g}] us")
    else:
        d = adm.to_dict()
        mem = ("memory bound: not applicable (lock)" if d["bound_objects"] is None else
               f"memory bound G* = {d['bound_objects']} objects = {d['bound_bytes']} bytes")
        lines.append(f"chosen: update period {f(d['update_period_us'], 3)} us, read period "
                     f"{f(d['read_period_us'], 3)} us, q {f(d['q_us'], 3)}{' us' if d['q_us'] is not None else ''}; "
                     f"{d['throughput_rps']:,.0f} requests/s; {mem}")
    if adm.chosen is not None and adm.chosen.result.note:
        lines.append("note: " + adm.chosen.result.note)
    return "\n".join(lines)
