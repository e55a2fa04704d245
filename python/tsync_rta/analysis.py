"""Memory and response-time analysis of real-time SMR (RT-SMR (RTAS 2018) §VI, Fig. 16).

Equation map (every function's docstring repeats its equation):

    Eq. 1  A_i(W) = ceil((W + r_i) / p_i) * a_i                 allocations_task
    Eq. 2  A(W)   = Σ_i A_i(W)                                   allocations
    Eq. 3  δ      = L* + Δ* + q*          (RT-ParSec, temporal)  delta
    Eq. 4  δ_U    = L* + q*               (U-RCU)                delta
    Eq. 5  G*     = Σ_i (1 + ceil((δ + r_σ* + r_i) / p_i)) a_i   garbage_bound
    Eq. 6  r_i    = e_i + b_i + Σ_hp ceil(r_i/p_k) e_k (+ Eq. 7) response_time
           with release jitter J (Audsley et al. 1993): r_i = J_i + w_i,
           w_i = e_i + b_i + Σ_hp ceil((w_i + J_k)/p_k) e_k (+ Eq. 7)
    Eq. 7  I(σ)_i = Σ_ghp ceil(r_i/q_k) α + A(δ + r_i) β         smr_interference
    Eq. 8  Δʳ_i   = Γʳ_i + Σ_hp ceil(Δ/p_k) e_k + Σ_ghp ceil(Δ/q_k) α + A(δ+Δ) β
                                                                 read_response_time
    Fig. 16 lines 1-17   schedulability_test (the global fixed point)
    Fig. 16 lines 18-25  select_quiescence_period

Writer blocking b_i (§VI-B "Writer Mutex Blocking") comes from blocking.py: the
inflation-based bound or the ILP of the paper's ref. [20] (HiGHS).

Modelling choices the paper leaves open are listed in docs/rt-analysis.md; in short:
* reclamation tasks σ_k (§VI-B) have priority just above their host writer, period and
  implicit deadline q_k, cost α (U-RCU: α + Δ*, its blocking wait for readers);
* rt/temporal: the highest-priority writer of each core hosts σ; U-RCU: one σ, on the
  highest-priority writer of the lowest-numbered core with a writer (§VII-B) - unless
  tasks say `quiesce:`;
* the β term of Eq. 7 applies to τ_i only when some σ_k of its core has higher priority
  (otherwise no collection can run ahead of it);
* in Eq. 8, higher-priority jobs' own spinning (not inflated into e_k under the ILP
  bound) is added as the ILP spin bound for the request window, with no arrival blocking;
* L* defaults to the largest writer response time (§V-C: "L* is upper-bounded by the
  maximum response time of writer tasks");
* reclaim: on_free (reclamation tried at frees, at most every q, as tsync's ps_mem does)
  uses q* = q + max over writers (p_k + r_k) in Eq. 3/4.

The platform, which the paper's model leaves out (docs/rt-analysis.md, "The platform"):
* `interference:` tasks (the timer tick, interrupts) are top-priority work of a core: each
  (p, e) is in the hp set of every job, σ and read request of that core (Eqs. 6-8);
* `sigma_nonpreemptive: true`: σ runs to completion once started (as tsync-bench
  rt-cache's executive runs it), so an activation, α + A(δ + q) β, is one more
  lower-priority non-preemptive section in the arrival blocking of the higher-priority
  tasks of its core (Fig. 16 line 6);
* `release_jitter: J`: a job of every task and σ may start up to J after its release (the
  executive notices a release at its next poll), so every r is J + w and every count of
  higher-priority jobs or σ activations in a window w is ceil((w + J)/p) (the standard
  release-jitter analysis, Audsley, Burns, Richardson, Tindell, Wellings 1993).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from .blocking import (BlockingQuery, ilp_blocking, inflation_blocking, inflation_spin,
                       window_jobs)
from .model import Task, TaskSet

BLOCKING_METHODS = ("ilp", "inflation")
SMR_POLICIES = ("rt", "temporal", "urcu", "rt-single")
LOCK_POLICIES = ("mutex", "pf-rw")
ALL_POLICIES = SMR_POLICIES + LOCK_POLICIES
PFRW_ILP_NOTE = ("pf-rw: no ILP exists for phase-fair reader-writer locks (RT-SMR (RTAS 2018) "
                 "§VII-B: 'for RW locks, only an inflation-based analysis exists'); the "
                 "inflation bound was used")
MAX_ITER = 100000


# ---------------------------------------------------------------------------------------
# Eq. 1-5: memory
# ---------------------------------------------------------------------------------------

def allocations_task(W: float, r_i: float, p_i: float, a_i: int) -> int:
    """Eq. 1 (Lemma 6.1): A_i(W) = ceil((W + r_i) / p_i) * a_i, the most objects τ_i
    allocates in a window of length W."""
    if a_i == 0:
        return 0
    return int(math.ceil((W + r_i) / p_i)) * a_i


def allocations(W: float, tasks, r: dict) -> int:
    """Eq. 2: A(W) = Σ_i A_i(W) over all tasks (r: task name -> r_i)."""
    return sum(allocations_task(W, r[t.name], t.p, t.a) for t in tasks)


def delta(policy: str, L_star: float, Delta_star: float, q_star: float) -> float:
    """Eq. 3 (Lemma 6.2), RT-ParSec and temporal quiescence: δ = L* + Δ* + q*.
    Eq. 4, U-RCU (its quiescence waits for readers): δ_U = L* + q*."""
    if policy == "urcu":
        return L_star + q_star
    return L_star + Delta_star + q_star


def garbage_bound(tasks, r: dict, delta_: float, r_sigma_star: float) -> int:
    """Eq. 5 (Theorem 6.3): G* = A(δ + r_σ*) = Σ_i (1 + ceil((δ + r_σ* + r_i)/p_i)) a_i,
    the most zombie + garbage objects at any time. (Eq. 5's closed form has one job more
    per task than Eq. 1 would give; we use the closed form, the larger.)"""
    W = delta_ + r_sigma_star
    return sum((1 + int(math.ceil((W + r[t.name]) / t.p))) * t.a for t in tasks if t.a)


# ---------------------------------------------------------------------------------------
# Eq. 6-8: response times
# ---------------------------------------------------------------------------------------

def hp_demand(window: float, hp: list) -> float:
    """Σ_{τ_k ∈ hp} ceil((window + J_k)/p_k) e_k: the most work of higher-priority jobs
    released in a window (J_k, release jitter, default 0: Audsley et al. 1993).
    hp: [(p_k, e_k) or (p_k, e_k, J_k)]."""
    return sum(math.ceil((window + (x[2] if len(x) > 2 else 0.0)) / x[0]) * x[1] for x in hp)


def smr_interference(window: float, ghp_q: list, alpha: float, beta: float,
                     A_of, jitter: float = 0.0) -> float:
    """Eq. 7 (Theorem 6.4): I(σ)_i = Σ_{σ_k ∈ ghp_i} ceil(window / q_k) α
    + A(δ + window) β, where A_of(window) returns A(δ + window) (Eq. 2). ghp_q: [q_k or
    (q_k, J_k)] - with σ_k's release jitter its count is ceil((window + J_k)/q_k); jitter:
    the job's own, whose response (and collection window) is jitter + window."""
    qs = [q if isinstance(q, tuple) else (q, 0.0) for q in ghp_q]
    return (sum(math.ceil((window + J) / q) * alpha for (q, J) in qs)
            + A_of(window + jitter) * beta)


def response_time(e_i: float, b_i: float, hp: list, ghp_q: list, alpha: float,
                  beta: float, A_of, with_collection: bool, limit: float,
                  jitter: float = 0.0) -> float:
    """Eq. 6 with Eq. 7: the least r_i with
    r_i = e_i + b_i + Σ_{τ_k ∈ hp_i} ceil(r_i/p_k) e_k + I(σ)_i (Audsley et al. [19]);
    with release jitter (Audsley, Burns, Richardson, Tindell, Wellings, "Applying new
    scheduling theory to static priority pre-emptive scheduling", Software Engineering
    Journal 1993): r_i = J_i + w_i, w_i = e_i + b_i + Σ_hp ceil((w_i + J_k)/p_k) e_k
    + I(σ)_i. hp: [(p_k, e_k) or (p_k, e_k, J_k)]; ghp_q: periods q_k (or (q_k, J_k)) of
    σ_k ∈ ghp_i; A_of(W) = A(δ + W); with_collection: include the A(δ + r_i) β term of
    Eq. 7; jitter: J_i. Returns math.inf once r_i exceeds `limit` (the deadline)."""
    A_use = A_of if with_collection else (lambda _w: 0)
    w = e_i + b_i
    for _ in range(MAX_ITER):
        nxt = (e_i + b_i + hp_demand(w, hp)
               + smr_interference(w, ghp_q, alpha, beta, A_use, jitter))
        if jitter + nxt > limit:
            return math.inf
        if nxt == w:
            return jitter + w
        w = nxt
    raise RuntimeError("Eq. 6 iteration did not converge")


def read_response_time(gamma_r: float, hp: list, ghp_q: list, alpha: float, beta: float,
                       A_of, with_collection: bool, limit: float,
                       hp_spin=lambda _w: 0.0) -> float:
    """Eq. 8: the least Δʳ_i with
    Δʳ_i = Γʳ_i + Σ_{τ_k ∈ hp_i} ceil(Δʳ_i/p_k) e_k + Σ_{σ_k ∈ ghp_i} ceil(Δʳ_i/q_k) α
           + A(δ + Δʳ_i) β
    (Eq. 6 with e_i -> Γʳ_i and b_i = 0: a parallel section never blocks). hp_spin(W)
    adds the spinning of higher-priority jobs' write requests in W when those are not
    inflated into e_k (ILP mode). hp and ghp_q as response_time's (with the jitter of
    the jobs released in the window; the request itself starts after its job's release,
    so its own jitter is not in Δʳ). math.inf once above `limit`."""
    A_use = A_of if with_collection else (lambda _w: 0)
    d = gamma_r
    for _ in range(MAX_ITER):
        nxt = (gamma_r + hp_demand(d, hp)
               + smr_interference(d, ghp_q, alpha, beta, A_use) + hp_spin(d))
        if nxt > limit:
            return math.inf
        if nxt == d:
            return d
        d = nxt
    raise RuntimeError("Eq. 8 iteration did not converge")


# ---------------------------------------------------------------------------------------
# the global fixed point (Fig. 16)
# ---------------------------------------------------------------------------------------

@dataclass
class _Job:
    """A task τ_i, or a reclamation task σ_k (§VI-B) hosted by writer `host`."""
    name: str
    core: int
    prio: float
    e: float
    period: float
    writes: int = 0
    gamma_w: float = 0.0
    reads: int = 0
    gamma_r: float = 0.0
    a: int = 0
    sigma: bool = False
    host: Optional[str] = None
    locks: tuple = ()   # ((kind "r"|"w", length, count per job), ...): spin-lock requests
    jitter: float = 0.0  # release jitter J: a job may start up to J after its release

    @property
    def n_locks(self) -> int:
        return sum(n for (_k, _l, n) in self.locks)


@dataclass
class Result:
    """The analysis of one task set at one quiescence period (JSON-ready via to_dict)."""
    policy: str
    blocking: str
    q: Optional[float]
    schedulable: bool
    reason: str = ""
    r: dict = field(default_factory=dict)
    Delta_r: dict = field(default_factory=dict)
    b: dict = field(default_factory=dict)
    sigma: list = field(default_factory=list)
    delta: Optional[float] = None
    L_star: Optional[float] = None
    Delta_star: Optional[float] = None
    q_star: Optional[float] = None
    r_sigma_star: Optional[float] = None
    G_objects: Optional[int] = None
    G_bytes: Optional[int] = None
    grace: Optional[float] = None
    q_tried: list = field(default_factory=list)
    note: str = ""
    deadline_factor: float = 1.0

    def to_dict(self, ts: Optional[TaskSet] = None) -> dict:
        def num(x):
            if x is None or (isinstance(x, float) and math.isinf(x)):
                return None
            if isinstance(x, float):  # whole nanoseconds, rounded up (bounds stay bounds)
                return math.ceil(x * 1000 - 1e-6) / 1000
            return x
        d = {"policy": self.policy, "blocking": self.blocking,
             "schedulable": self.schedulable, "q_us": num(self.q),
             "delta_us": num(self.delta), "L_star_us": num(self.L_star),
             "Delta_star_us": num(self.Delta_star), "q_star_us": num(self.q_star),
             "r_sigma_star_us": num(self.r_sigma_star),
             "memory_bound_objects": self.G_objects, "memory_bound_bytes": self.G_bytes}
        if self.policy == "temporal":
            d["grace_us"] = num(self.grace)
        if self.policy in LOCK_POLICIES:
            d["memory_bound"] = "not applicable: a lock defers no frees (no SMR, no G*)"
        if self.note:
            d["note"] = self.note
        if self.deadline_factor != 1:
            d["deadline_factor"] = self.deadline_factor
        if self.reason:
            d["reason"] = self.reason
        if self.q_tried:
            d["q_tried_us"] = self.q_tried
        tasks = []
        for name, r in self.r.items():
            t = {"name": name, "r_us": num(r), "b_us": num(self.b.get(name)),
                 "Delta_r_us": num(self.Delta_r.get(name))}
            if ts is not None:
                tt = next(x for x in ts.tasks if x.name == name)
                t.update({"core": tt.core, "prio": tt.prio, "p_us": tt.p,
                          "meets_deadline": r is not None and not math.isinf(r) and r <= tt.p})
            tasks.append(t)
        d["tasks"] = tasks
        d["reclaimers"] = [{"host": s["host"], "core": s["core"], "q_us": s["q"],
                            "r_us": num(s["r"])} for s in self.sigma]
        return d


def reclaimer_hosts(ts: TaskSet, policy: str) -> list:
    """Tasks that host a reclamation task σ (§VI-B, §VII-B). Explicit `quiesce: true`
    flags win; otherwise rt/temporal: the highest-priority writer (a_i > 0) of each core,
    U-RCU and rt-single: a single one, on the lowest-numbered core that has a writer.
    Lock policies (mutex, pf-rw) defer nothing and have none."""
    if policy in LOCK_POLICIES:
        return []
    if any(t.quiesce is not None for t in ts.tasks):
        hosts = [t for t in ts.tasks if t.quiesce]
        return hosts[:1] if policy == "rt-single" else hosts
    best: dict = {}
    for t in ts.tasks:
        if t.a > 0 and (t.core not in best or t.prio > best[t.core].prio):
            best[t.core] = t
    hosts = [best[c] for c in sorted(best)]
    if policy in ("urcu", "rt-single"):
        hosts = hosts[:1]
    return hosts


def lock_requests(t: Task, policy: str) -> tuple:
    """The spin-lock requests of a job of τ_i: ((kind, length, count), ...). SMR policies:
    only write requests lock (§V-B); mutex and pf-rw: read requests lock too (§VII-B)."""
    out = []
    if policy in LOCK_POLICIES and t.reads:
        out.append(("r", t.gamma_r, t.reads))
    if t.writes:
        out.append(("w", t.gamma_w, t.writes))
    return tuple(out)


def spin_bounds(jobs: list, cores: int, policy: str) -> dict:
    """Per core c and request kind, the inflation-based spin bound of one request
    (docs/rt-analysis.md, "Lock baselines"):

    * FIFO mutex (rt, temporal, urcu, rt-single: writes only; mutex: reads and writes):
      s(c) = Σ_{k ≠ c} max_{τ_x on k} Γ_x, for either kind (one request per other core
      is ahead of it; [9]).
    * phase-fair RW lock (pf-rw, Brandenburg & Anderson, Real-Time Systems 2010):
      read:  s_r(c) = R(c) + W(c) if W(c) > 0 else 0 - at most the read phase in
             progress (which a pending writer closes) and one write phase; no remote
             writer: readers never wait;
      write: s_w(c) = Σ_{k ≠ c} max Γʷ_k + (n_w(c) + 1) R(c) - FIFO among writers (one
             write phase per other core) and at most one read phase before each of them
             and before its own;
      R(c) / W(c): the longest read / write request on another core, n_w(c): the other
      cores with writers.
    Returns {c: {"r": s_r, "w": s_w}}."""
    maxlen: dict = {}
    for j in jobs:
        for (kind, length, n) in j.locks:
            if n:
                key = (j.core, kind)
                maxlen[key] = max(maxlen.get(key, 0.0), length)
    out = {}
    for c in range(cores):
        other = [k for k in range(cores) if k != c]
        if policy == "pf-rw":
            R = max((maxlen.get((k, "r"), 0.0) for k in other), default=0.0)
            W = max((maxlen.get((k, "w"), 0.0) for k in other), default=0.0)
            n_w = sum(1 for k in other if (k, "w") in maxlen)
            sw = sum(maxlen.get((k, "w"), 0.0) for k in other) + (n_w + 1) * R
            out[c] = {"r": (R + W) if W > 0 else 0.0, "w": float(sw)}
        else:
            s = inflation_spin([max(maxlen.get((k, "r"), 0.0), maxlen.get((k, "w"), 0.0))
                                for k in other])
            out[c] = {"r": s, "w": s}
    return out


class _Analyzer:
    def __init__(self, ts: TaskSet, policy: str, blocking: str, q: Optional[float],
                 deadline_factor: float = 1.0):
        if not 0 < deadline_factor <= 1:
            raise ValueError(f"deadline factor (slack): must be in (0, 1], got {deadline_factor!r}")
        if policy not in ALL_POLICIES:
            raise ValueError(f"policy: must be one of {', '.join(ALL_POLICIES)}, got {policy!r}")
        if blocking not in BLOCKING_METHODS:
            raise ValueError(f"blocking: must be one of {BLOCKING_METHODS}, got {blocking!r}")
        self.note = ""
        if policy == "pf-rw" and blocking == "ilp":
            blocking, self.note = "inflation", PFRW_ILP_NOTE
        self.lock_policy = policy in LOCK_POLICIES
        if self.lock_policy:
            q = None
        elif q is None:
            raise ValueError(f"policy {policy} needs a quiescence period q")
        self.ts, self.policy, self.blocking, self.q = ts, policy, blocking, q
        # every response time (tasks, σ, read requests) must stay within this share of
        # its period: constrained deadlines D = f·p <= p, for which Eqs. 6-8 hold as they
        # stand (one job per period is pending at a time); 1 is the paper's test
        self.f = deadline_factor
        self.tasks = list(ts.tasks)
        self.writers = [t for t in self.tasks if t.writes > 0]
        self.hosts = reclaimer_hosts(ts, policy)
        J = ts.release_jitter   # one executive per core releases every task and σ
        self.jobs = [_Job(t.name, t.core, t.prio, t.e, t.p, t.writes, t.gamma_w, t.reads,
                          t.gamma_r, t.a, locks=lock_requests(t, policy), jitter=J)
                     for t in self.tasks]
        self.sigmas = [_Job(f"sigma[{h.name}]", h.core, h.prio + 0.5, ts.alpha, q,
                            sigma=True, host=h.name, jitter=J) for h in self.hosts]
        self.spin = spin_bounds(self.jobs, ts.cores, policy)
        self._ilp = lru_cache(maxsize=None)(ilp_blocking)
        # the platform's top-priority work per core, (p, e): in every hp set (Eqs. 6, 8)
        self.irq = {c: [(x.p, x.e) for x in ts.interference if x.core in (None, c)]
                    for c in range(ts.cores)}
        # a non-preemptive σ's longest activation per core, α + A(δ + q) β: set per
        # iteration of the fixed point (it grows with δ and the response times)
        self.sigma_np: dict = {}

    def _own_spin(self, j: _Job) -> float:
        s = self.spin[j.core]
        return sum(n * s[k] for (k, _l, n) in j.locks)

    # e_k as seen by lower-priority jobs: inflation mode charges hp spinning here
    def _e_eff(self, j: _Job) -> float:
        if self.blocking == "inflation" and j.locks:
            return j.e + self._own_spin(j)
        return j.e

    def _hp(self, j: _Job) -> list:
        return [x for x in self.jobs if x.core == j.core and x.prio > j.prio]

    def _ghp_q(self, j: _Job) -> list:
        return [(s.period, s.jitter) for s in self.sigmas if s.core == j.core
                and s.prio > j.prio and s is not j]

    def _hp_terms(self, j: _Job) -> list:
        """j's higher-priority work for Eqs. 6 and 8: (p_k, e_k, J_k) of its core's
        higher-priority jobs, and the platform's interference (no jitter)."""
        return ([(x.period, self._e_eff(x), x.jitter) for x in self._hp(j)]
                + self.irq[j.core])

    def _lp_lockers(self, j: _Job) -> list:
        return [x for x in self.jobs if x.core == j.core and x.prio < j.prio and x.locks]

    def _lp_sigma(self, j: _Job) -> float:
        """The longest activation of a non-preemptive σ of lower priority on j's core
        (0 when σ is preemptive): once started it delays j's start, as a lower-priority
        non-preemptive section does."""
        return max((self.sigma_np.get(s.name, 0.0) for s in self.sigmas
                    if s.core == j.core and s.prio < j.prio and s is not j), default=0.0)

    def _query(self, j: _Job, window: float, r: dict, own: int, arrival: bool):
        remote = []
        for c in range(self.ts.cores):
            if c == j.core:
                continue
            reqs = tuple(sorted((length, n * window_jobs(window, r[x.name], x.period))
                                for x in self.jobs if x.core == c
                                for (_k, length, n) in x.locks if n))
            if reqs:
                remote.append(reqs)
        n_spin = own + sum(math.ceil((window + h.jitter) / h.period) * h.n_locks
                           for h in self._hp(j) if h.locks)
        lp = tuple(sorted([length for x in self._lp_lockers(j)
                           for (_k, length, n) in x.locks if n]
                          + ([self._lp_sigma(j)] if self._lp_sigma(j) > 0 else []))
                   ) if arrival else ()
        return BlockingQuery(tuple(remote), int(n_spin), lp)

    def blocking_of(self, j: _Job, window: float, r: dict) -> float:
        """b_j of Eq. 6 for a window of length `window` (Fig. 16 line 6)."""
        if self.blocking == "inflation":
            s = self.spin[j.core]
            arrival = max((length + s[k] for x in self._lp_lockers(j)
                           for (k, length, n) in x.locks if n), default=0.0)
            return self._own_spin(j) + max(arrival, self._lp_sigma(j))
        return self._ilp(self._query(j, window, r, j.n_locks, True))

    def hp_spin(self, j: _Job, r: dict):
        if self.blocking == "inflation":
            return lambda _w: 0.0
        return lambda w: self._ilp(self._query(j, w, r, 0, False))

    def run(self) -> Result:
        ts, pol = self.ts, self.policy
        res = Result(pol, self.blocking, self.q, False, note=self.note,
                     deadline_factor=self.f)
        if not self.lock_policy and any(t.a for t in self.tasks) and not self.sigmas:
            res.reason = "tasks allocate (a > 0) but no task hosts a reclamation task"
            return res
        alljobs = self.jobs + self.sigmas
        r = {j.name: j.e for j in alljobs}
        D = {j.name: j.gamma_r for j in self.jobs if j.reads}

        def compute_delta():
            if self.lock_policy:   # no deferred frees: no δ
                return None, None, None, None
            writers = [r[t.name] for t in self.tasks if t.a > 0 or t.writes > 0]
            L = ts.L_star if ts.L_star is not None else max(writers, default=0.0)
            Dstar = max(D.values(), default=0.0)
            if ts.reclaim == "on_free":
                qs = self.q + max((t.p + r[t.name] for t in self.tasks if t.a > 0), default=0.0)
            else:
                qs = max((s.period for s in self.sigmas), default=0.0)
            return delta(pol, L, Dstar, qs), L, Dstar, qs

        dlt, L, Dstar, qstar = compute_delta()                       # Fig. 16 line 3
        old = object()   # no δ yet (lock policies keep δ None)
        b: dict = {}
        for _outer in range(MAX_ITER):                               # line 4
            if dlt == old:
                break
            for _mid in range(MAX_ITER):                             # line 5
                if pol == "urcu":   # σ waits for all pre-existing readers (§VI-B);
                    # rt-single keeps e_σ = α: RT-ParSec's quiescence does not block
                    for s in self.sigmas:
                        s.e = ts.alpha + max(D.values(), default=0.0)
                A_of = (lambda W, _d=dlt, _r=dict(r): allocations(_d + W, self.tasks, _r))
                if ts.sigma_nonpreemptive and not self.lock_policy:
                    self.sigma_np = {s.name: ts.alpha + A_of(s.period) * ts.beta
                                     for s in self.sigmas}
                b = {j.name: self.blocking_of(j, r[j.name], r) for j in alljobs}  # line 6
                new_r = {}
                for j in alljobs:                                    # lines 7-8
                    ghp = self._ghp_q(j)
                    new_r[j.name] = response_time(
                        j.e, b[j.name], self._hp_terms(j), ghp, ts.alpha, ts.beta, A_of,
                        with_collection=j.sigma or bool(ghp), limit=self.f * j.period,
                        jitter=j.jitter)
                newD = {}
                for j in self.jobs:                                  # lines 9-11
                    if not j.reads or self.lock_policy:  # locked reads: no Eq. 8
                        continue
                    ghp = self._ghp_q(j)
                    newD[j.name] = read_response_time(
                        j.gamma_r, self._hp_terms(j), ghp, ts.alpha, ts.beta, A_of, bool(ghp),
                        limit=self.f * j.period, hp_spin=self.hp_spin(j, r))
                bad = [j for j in alljobs if new_r[j.name] > self.f * j.period] + \
                      [j for j in self.jobs
                       if j.name in newD and newD[j.name] > self.f * j.period]
                if bad:                                              # lines 12-13
                    j = bad[0]
                    res.r = {t.name: new_r[t.name] for t in self.tasks}
                    res.Delta_r = newD
                    res.b = {t.name: b[t.name] for t in self.tasks}
                    what = "reclamation task " if j.sigma else "task "
                    dl = (f"{j.period:g} us" if self.f == 1 else
                          f"{self.f * j.period:g} us (slack {self.f:g} x period {j.period:g})")
                    res.reason = (f"{what}{j.name} misses its deadline {dl} "
                                  f"(response time above it)")
                    res.sigma = [{"host": s.host, "core": s.core, "q": s.period,
                                  "r": new_r[s.name]} for s in self.sigmas]
                    return res
                if new_r == r and newD == D:
                    break
                r, D = new_r, newD
            else:
                raise RuntimeError("Fig. 16 r-loop did not converge")
            old = dlt                                                # lines 14-15
            dlt, L, Dstar, qstar = compute_delta()
        else:
            raise RuntimeError("Fig. 16 δ-loop did not converge")

        res.schedulable = True
        res.r = {t.name: r[t.name] for t in self.tasks}
        res.b = {t.name: b[t.name] for t in self.tasks}
        res.Delta_r = {t.name: D.get(t.name) for t in self.tasks}
        res.sigma = [{"host": s.host, "core": s.core, "q": s.period, "r": r[s.name]}
                     for s in self.sigmas]
        res.delta, res.L_star, res.Delta_star, res.q_star = dlt, L, Dstar, qstar
        if self.lock_policy:
            return res
        res.r_sigma_star = max((r[s.name] for s in self.sigmas), default=0.0)
        res.G_objects = garbage_bound(self.tasks, r, dlt, res.r_sigma_star)
        res.G_bytes = res.G_objects * ts.obj_size
        res.grace = Dstar
        return res


def schedulability_test(ts: TaskSet, q: Optional[float], policy: Optional[str] = None,
                        blocking: str = "ilp", deadline_factor: float = 1.0) -> Result:
    """Fig. 16 lines 1-17: the global fixed point of blocking (ILP or inflation), task
    response times (Eqs. 6-7), read-request response times (Eq. 8) and δ (Eq. 3/4) at
    quiescence period q for every reclamation task. Result.schedulable is False as soon
    as a response time exceeds its period (line 13); otherwise Result carries r_i, Δʳ_i,
    δ and the memory bound G* (Eq. 5). Lock policies (mutex, pf-rw) ignore q: only the
    blocking / response-time fixed point, no σ, δ or G* (None). deadline_factor f < 1
    (admission's slack): every response time must be <= f x its period instead."""
    return _Analyzer(ts, policy or ts.policy, blocking,
                     None if q is None else float(q), deadline_factor).run()


def q_candidates(ts: TaskSet) -> list:
    """Fig. 16 lines 19-21: candidate periods from the minimum to the maximum task
    period in steps of the minimum task period (§VI-C), or ts.q_search if given."""
    if ts.q_search is not None:
        lo, hi, step = ts.q_search.min, ts.q_search.max, ts.q_search.step
    else:
        lo = min(t.p for t in ts.tasks)
        hi = max(t.p for t in ts.tasks)
        step = lo
    out, k = [], 0
    while lo + k * step <= hi * (1 + 1e-12):
        out.append(lo + k * step)
        k += 1
    return out


def select_quiescence_period(ts: TaskSet, policy: Optional[str] = None,
                             blocking: str = "ilp", candidates=None,
                             deadline_factor: float = 1.0) -> Result:
    """Fig. 16 lines 18-25: the smallest candidate q whose schedulability_test passes
    (smallest q = least memory, Fig. 13(d)). Returns that Result; if none passes, the
    Result of the smallest candidate (schedulable False, q_tried lists all tried)."""
    cands = list(candidates) if candidates is not None else q_candidates(ts)
    first = None
    for qp in cands:
        res = schedulability_test(ts, qp, policy, blocking, deadline_factor)
        if res.schedulable:
            res.q_tried = cands[:cands.index(qp) + 1]
            return res
        if first is None:
            first = res
    assert first is not None, "no candidate quiescence periods"
    first.q_tried = cands
    first.reason = f"no candidate q in [{cands[0]:g}, {cands[-1]:g}] us is schedulable; at q={cands[0]:g}: {first.reason}"
    return first


def analyze(ts: TaskSet, policy: Optional[str] = None, blocking: str = "ilp",
            q: Optional[float] = None, deadline_factor: float = 1.0) -> Result:
    """The `tsync-rta analyze` entry point: a fixed q (argument, else ts.q) is tested
    (Fig. 16 lines 1-17); without one, Fig. 16 lines 18-25 choose it. deadline_factor:
    see schedulability_test."""
    q = q if q is not None else ts.q
    f = deadline_factor
    if (policy or ts.policy) in LOCK_POLICIES:
        return schedulability_test(ts, None, policy, blocking, f)
    if q is not None:
        return schedulability_test(ts, q, policy, blocking, f)
    return select_quiescence_period(ts, policy, blocking, deadline_factor=f)
