"""The task model of RT-SMR (RTAS 2018) §V and its input format (JSON or YAML).

All times are in microseconds (floats are allowed), sizes in bytes.

A task set file::

    cores: 2                 # M, identical cores numbered 0..M-1
    alpha: 2.0               # α: one quiescence computation (us)
    beta: 0.2                # β: collecting one object (us)
    obj_size: 64             # bytes per SMR object (memory bound in bytes)
    L_star: 500              # optional L* (§V-C); default: the largest writer response time
    policy: rt               # optional: rt | temporal | urcu | rt-single | mutex | pf-rw
    q: 10000                 # optional fixed quiescence period; omitted: Fig. 16 selects it
    q_search: {min: 10000, max: 100000, step: 10000}   # optional Fig. 16 search range
    reclaim: periodic        # optional: periodic (§V-C) | on_free (see docs/rt-analysis.md)
    interference:            # optional: the platform's top-priority work (docs/rt-analysis.md)
      - {name: tick, e: 3, p: 4000}   # e.g. the timer tick: cost and period (us); `core:`
                                      # limits it to one core (default: every core)
    sigma_nonpreemptive: false        # optional: σ runs to completion once started, so it
                                      # blocks the higher-priority tasks of its core
    release_jitter: 0        # optional J (us): a job of every task and σ may start up to J
                             # after its release (docs/rt-analysis.md, "The platform")
    tasks:
      - name: t0             # optional, default "t<index>"
        e: 2000              # e_i, WCET of a job, including its requests
        p: 10000             # p_i, period = implicit deadline
        core: 0
        prio: 2              # optional; larger = higher priority; default rate-monotonic
        a: 1                 # a_i, allocations per job (default 0)
        gamma_r: 50          # Γʳ_i, WCET of one read request (default 0)
        gamma_w: 20          # Γʷ_i, WCET of one write request (default 0)
        reads: 1             # read requests per job (default 1 if gamma_r > 0)
        writes: 1            # write requests per job (default 1 if gamma_w > 0)
        quiesce: true        # optional: hosts a reclamation task σ_i (§VI-B)

Bad input raises :class:`TaskSetError` whose message starts with the offending field,
e.g. ``tasks[2].p: must be > 0``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

POLICIES = ("rt", "temporal", "urcu", "rt-single", "mutex", "pf-rw")
RECLAIM_MODES = ("periodic", "on_free")

_TOP_KEYS = {"cores", "alpha", "beta", "obj_size", "L_star", "policy", "q", "q_search",
             "reclaim", "tasks", "name", "comment", "interference", "sigma_nonpreemptive",
             "release_jitter"}
_IRQ_KEYS = {"name", "e", "p", "core"}
_TASK_KEYS = {"name", "e", "p", "core", "prio", "a", "gamma_r", "gamma_w", "reads",
              "writes", "quiesce"}
_QSEARCH_KEYS = {"min", "max", "step"}


class TaskSetError(ValueError):
    """Invalid task set; str(err) names the field first ("tasks[1].e: ...")."""

    def __init__(self, field_name: str, msg: str):
        super().__init__(f"{field_name}: {msg}")
        self.field = field_name


@dataclass(frozen=True)
class Task:
    """τ_i = (e_i, p_i, a_i) of §V-A plus its core, priority and requests (§V-B)."""
    name: str
    e: float
    p: float
    core: int
    prio: float
    a: int = 0
    gamma_r: float = 0.0
    gamma_w: float = 0.0
    reads: int = 0
    writes: int = 0
    quiesce: Optional[bool] = None

    @property
    def u(self) -> float:
        """Utilization u_i = e_i / p_i (§V-A)."""
        return self.e / self.p


@dataclass(frozen=True)
class Interference:
    """Top-priority work of the platform on a core (None: every core) - a timer tick,
    interrupts: it preempts every task, σ and request, and has no deadline of its own
    in the analysis."""
    name: str
    e: float
    p: float
    core: Optional[int] = None


@dataclass(frozen=True)
class QSearch:
    min: float
    max: float
    step: float


@dataclass(frozen=True)
class TaskSet:
    cores: int
    tasks: tuple
    alpha: float
    beta: float
    obj_size: int = 64
    L_star: Optional[float] = None
    policy: str = "rt"
    q: Optional[float] = None
    q_search: Optional[QSearch] = None
    reclaim: str = "periodic"
    name: str = ""
    interference: tuple = ()
    sigma_nonpreemptive: bool = False
    release_jitter: float = 0.0

    def with_(self, **kw) -> "TaskSet":
        return replace(self, **kw)

    def to_dict(self) -> dict:
        """The task set in the input format (round-trips through :func:`parse_taskset`)."""
        d: dict[str, Any] = {"cores": self.cores, "alpha": self.alpha, "beta": self.beta,
                             "obj_size": self.obj_size, "policy": self.policy,
                             "reclaim": self.reclaim}
        if self.name:
            d["name"] = self.name
        if self.L_star is not None:
            d["L_star"] = self.L_star
        if self.q is not None:
            d["q"] = self.q
        if self.q_search is not None:
            d["q_search"] = {"min": self.q_search.min, "max": self.q_search.max,
                             "step": self.q_search.step}
        if self.interference:
            d["interference"] = [dict({"name": x.name, "e": x.e, "p": x.p},
                                      **({} if x.core is None else {"core": x.core}))
                                 for x in self.interference]
        if self.sigma_nonpreemptive:
            d["sigma_nonpreemptive"] = True
        if self.release_jitter:
            d["release_jitter"] = self.release_jitter
        tasks = []
        for t in self.tasks:
            td = {"name": t.name, "e": t.e, "p": t.p, "core": t.core, "prio": t.prio,
                  "a": t.a, "gamma_r": t.gamma_r, "gamma_w": t.gamma_w,
                  "reads": t.reads, "writes": t.writes}
            if t.quiesce is not None:
                td["quiesce"] = t.quiesce
            tasks.append(td)
        d["tasks"] = tasks
        return d


def _num(v: Any, fname: str, *, positive=False, nonneg=False, integer=False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TaskSetError(fname, f"must be a number, got {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise TaskSetError(fname, f"must be finite, got {v!r}")
    if integer and not float(v).is_integer():
        raise TaskSetError(fname, f"must be an integer, got {v!r}")
    if positive and not v > 0:
        raise TaskSetError(fname, f"must be > 0, got {v!r}")
    if nonneg and v < 0:
        raise TaskSetError(fname, f"must be >= 0, got {v!r}")
    return int(v) if integer else float(v)


def _unknown(d: dict, allowed: set, prefix: str) -> None:
    for k in d:
        if k not in allowed:
            raise TaskSetError(f"{prefix}{k}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def parse_taskset(d: Any) -> TaskSet:
    """Validate a decoded JSON/YAML document and build a :class:`TaskSet`."""
    if not isinstance(d, dict):
        raise TaskSetError("<top>", "a task set is a mapping with 'cores' and 'tasks'")
    _unknown(d, _TOP_KEYS, "")
    for req in ("cores", "tasks", "alpha", "beta"):
        if req not in d:
            raise TaskSetError(req, "missing (required)")
    cores = _num(d["cores"], "cores", positive=True, integer=True)
    alpha = _num(d["alpha"], "alpha", nonneg=True)
    beta = _num(d["beta"], "beta", nonneg=True)
    obj_size = _num(d.get("obj_size", 64), "obj_size", positive=True, integer=True)
    L_star = None if d.get("L_star") is None else _num(d["L_star"], "L_star", nonneg=True)
    policy = d.get("policy", "rt")
    if policy not in POLICIES:
        raise TaskSetError("policy", f"must be one of {', '.join(POLICIES)}, got {policy!r}")
    reclaim = d.get("reclaim", "periodic")
    if reclaim not in RECLAIM_MODES:
        raise TaskSetError("reclaim", f"must be one of {', '.join(RECLAIM_MODES)}, got {reclaim!r}")
    q = None if d.get("q") is None else _num(d["q"], "q", positive=True)
    qs = None
    if d.get("q_search") is not None:
        raw = d["q_search"]
        if not isinstance(raw, dict):
            raise TaskSetError("q_search", "must be a mapping with min, max, step")
        _unknown(raw, _QSEARCH_KEYS, "q_search.")
        for k in _QSEARCH_KEYS:
            if k not in raw:
                raise TaskSetError(f"q_search.{k}", "missing (required)")
        qs = QSearch(_num(raw["min"], "q_search.min", positive=True),
                     _num(raw["max"], "q_search.max", positive=True),
                     _num(raw["step"], "q_search.step", positive=True))
        if qs.max < qs.min:
            raise TaskSetError("q_search.max", f"must be >= q_search.min ({qs.min})")
    irq = []
    raw_irq = d.get("interference") or []
    if not isinstance(raw_irq, list):
        raise TaskSetError("interference", "must be a list of {name, e, p[, core]}")
    for i, x in enumerate(raw_irq):
        pre = f"interference[{i}]"
        if not isinstance(x, dict):
            raise TaskSetError(pre, "must be a mapping")
        _unknown(x, _IRQ_KEYS, pre + ".")
        for req in ("e", "p"):
            if req not in x:
                raise TaskSetError(f"{pre}.{req}", "missing (required)")
        ie = _num(x["e"], f"{pre}.e", positive=True)
        ip = _num(x["p"], f"{pre}.p", positive=True)
        if ie >= ip:
            raise TaskSetError(f"{pre}.e", f"must be < its period {ip:g}, got {ie:g}")
        ic = None
        if x.get("core") is not None:
            ic = _num(x["core"], f"{pre}.core", nonneg=True, integer=True)
            if ic >= cores:
                raise TaskSetError(f"{pre}.core", f"must be < cores ({cores}), got {ic}")
        irq.append(Interference(str(x.get("name", f"irq{i}")), ie, ip, ic))
    snp = d.get("sigma_nonpreemptive", False)
    if not isinstance(snp, bool):
        raise TaskSetError("sigma_nonpreemptive", f"must be true or false, got {snp!r}")
    jit = _num(d.get("release_jitter", 0), "release_jitter", nonneg=True)
    raw_tasks = d["tasks"]
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise TaskSetError("tasks", "must be a non-empty list")
    tasks = []
    names = set()
    for i, t in enumerate(raw_tasks):
        pre = f"tasks[{i}]"
        if not isinstance(t, dict):
            raise TaskSetError(pre, "must be a mapping")
        _unknown(t, _TASK_KEYS, pre + ".")
        for req in ("e", "p", "core"):
            if req not in t:
                raise TaskSetError(f"{pre}.{req}", "missing (required)")
        name = str(t.get("name", f"t{i}"))
        if name in names:
            raise TaskSetError(f"{pre}.name", f"duplicate task name {name!r}")
        names.add(name)
        e = _num(t["e"], f"{pre}.e", positive=True)
        p = _num(t["p"], f"{pre}.p", positive=True)
        core = _num(t["core"], f"{pre}.core", nonneg=True, integer=True)
        if core >= cores:
            raise TaskSetError(f"{pre}.core", f"must be < cores ({cores}), got {core}")
        prio = None if t.get("prio") is None else _num(t["prio"], f"{pre}.prio")
        a = _num(t.get("a", 0), f"{pre}.a", nonneg=True, integer=True)
        gr = _num(t.get("gamma_r", 0), f"{pre}.gamma_r", nonneg=True)
        gw = _num(t.get("gamma_w", 0), f"{pre}.gamma_w", nonneg=True)
        reads = _num(t.get("reads", 1 if gr > 0 else 0), f"{pre}.reads", nonneg=True, integer=True)
        writes = _num(t.get("writes", 1 if gw > 0 else 0), f"{pre}.writes", nonneg=True, integer=True)
        if reads > 0 and gr <= 0:
            raise TaskSetError(f"{pre}.gamma_r", "must be > 0 when reads > 0")
        if writes > 0 and gw <= 0:
            raise TaskSetError(f"{pre}.gamma_w", "must be > 0 when writes > 0")
        if reads * gr + writes * gw > e + 1e-9:
            raise TaskSetError(f"{pre}.e", f"{e} is less than its requests "
                               f"(reads*gamma_r + writes*gamma_w = {reads * gr + writes * gw})")
        quiesce = t.get("quiesce")
        if quiesce is not None and not isinstance(quiesce, bool):
            raise TaskSetError(f"{pre}.quiesce", f"must be true or false, got {quiesce!r}")
        tasks.append(Task(name, e, p, core, prio if prio is not None else float("nan"),
                          a, gr, gw, reads, writes, quiesce))
    tasks = _assign_priorities(tasks)
    seen: dict = {}
    for i, t in enumerate(tasks):
        key = (t.core, t.prio)
        if key in seen:
            raise TaskSetError(f"tasks[{i}].prio", f"same priority {t.prio} as tasks[{seen[key]}] "
                               f"on core {t.core}; priorities on one core must differ")
        seen[key] = i
    return TaskSet(cores, tuple(tasks), alpha, beta, obj_size, L_star, policy, q, qs, reclaim,
                   str(d.get("name", "")), tuple(irq), snp, jit)


def _assign_priorities(tasks: list) -> list:
    """Tasks without `prio` get rate-monotonic priorities (shorter period = higher) below
    every explicit priority of their core; ties broken by input order."""
    out = list(tasks)
    by_core: dict = {}
    for i, t in enumerate(tasks):
        by_core.setdefault(t.core, []).append(i)
    for core, idx in by_core.items():
        missing = [i for i in idx if math.isnan(tasks[i].prio)]
        if not missing:
            continue
        explicit = [tasks[i].prio for i in idx if not math.isnan(tasks[i].prio)]
        base = (min(explicit) - 1) if explicit else float(len(missing))
        # longest period gets the lowest number
        order = sorted(missing, key=lambda i: (-tasks[i].p, -i))
        for rank, i in enumerate(order):
            out[i] = replace(tasks[i], prio=base - len(missing) + 1 + rank if explicit else float(rank + 1))
    return out


def load_document(path: str | Path) -> Any:
    """The document in a .json file, or in a YAML one (any other extension); a parse
    error is a TaskSetError naming the file."""
    path = Path(path)
    text = path.read_text()
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskSetError("<file>", f"{path}: invalid JSON: {exc}") from None
    import yaml  # PyYAML (python3-yaml)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskSetError("<file>", f"{path}: invalid YAML: {exc}") from None


def load_taskset(path: str | Path) -> TaskSet:
    """Read a task set from a .json file or a YAML one (.yaml, .yml) and validate it."""
    return parse_taskset(load_document(path))


def dump_taskset(ts: TaskSet, path: str | Path) -> None:
    """Write a task set as JSON (.json) or YAML (anything else)."""
    path = Path(path)
    d = ts.to_dict()
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(d, indent=2) + "\n")
    else:
        import yaml
        path.write_text(yaml.safe_dump(d, sort_keys=False))
