"""Random task sets per Emberson, Stafford and Davis (the paper's ref. [25]) with the
parameters of RT-SMR (RTAS 2018) §VII-B.

Utilizations come from Stafford's randfixedsum algorithm (the generator [25] uses):
n values in [0, 1] uniformly distributed over the simplex slice Σ u_i = U. §VII-B: 10
tasks per core, per-core utilization in [0.6, 0.9] (default 0.75), periods uniform in
[10 ms, 100 ms], e_i = u_i p_i, one global resource, readers and writers uniformly
assigned to tasks with one request per job, request lengths 100 us by default or
uniform in [1 us, 300 us], one allocation per write (a_i = 1), rate-monotonic priorities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .model import Task, TaskSet

# The paper's §VII-B values (us).
PERIOD_RANGE = (10_000.0, 100_000.0)
TASKS_PER_CORE = 10
DEFAULT_UTIL = 0.75
DEFAULT_REQ_LEN = 100.0
REQ_LEN_RANGE = (1.0, 300.0)


def randfixedsum(n: int, total: float, rng: np.random.Generator,
                 lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """n values in [lo, hi] summing to `total`, uniformly distributed on that polytope
    (Stafford's randfixedsum, as used by Emberson et al. [25])."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if not (n * lo <= total <= n * hi):
        raise ValueError(f"total {total} outside [{n * lo}, {n * hi}]")
    s = (total - n * lo) / (hi - lo)
    k = int(max(min(math.floor(s), n - 1), 0))
    s = max(min(s, k + 1), k)
    s1 = s - np.arange(k, k - n, -1, dtype=float)
    s2 = np.arange(k + n, k, -1, dtype=float) - s
    realmax = np.finfo(float).max
    tiny = np.finfo(float).tiny
    w = np.zeros((n, n + 1))
    w[0, 1] = realmax
    t = np.zeros((max(n - 1, 1), n))
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(2, n + 1):
            tmp1 = w[i - 2, 1:i + 1] * s1[0:i] / i
            tmp2 = w[i - 2, 0:i] * s2[n - i:n] / i
            w[i - 1, 1:i + 1] = tmp1 + tmp2
            tmp3 = w[i - 1, 1:i + 1] + tiny
            tmp4 = s2[n - i:n] > s1[0:i]
            t[i - 2, 0:i] = (tmp2 / tmp3) * tmp4 + (1 - tmp1 / tmp3) * (~tmp4)
    x = np.zeros(n)
    rt = rng.random(n - 1)
    rs = rng.random(n - 1)
    j = k
    sm, pr = 0.0, 1.0
    for i in range(n - 1, 0, -1):
        e = 1.0 if rt[n - i - 1] <= t[i - 1, j] else 0.0
        sx = rs[n - i - 1] ** (1.0 / i)
        sm = sm + (1 - sx) * pr * s / (i + 1)
        pr = sx * pr
        x[n - i - 1] = sm + pr * e
        s = s - e
        j = j - int(e)
    x[n - 1] = sm + pr * s
    x = x[rng.permutation(n)]
    return (hi - lo) * x + lo


@dataclass
class GenParams:
    """§VII-B generation parameters (defaults: the paper's default configuration, but
    with fewer cores; `full()` gives 20 cores)."""
    cores: int = 4
    tasks_per_core: int = TASKS_PER_CORE
    util: float = DEFAULT_UTIL
    period_min: float = PERIOD_RANGE[0]
    period_max: float = PERIOD_RANGE[1]
    readers: Optional[int] = None   # default: cores // 2 ("half of them readers")
    writers: Optional[int] = None   # default: cores - readers
    read_len: Optional[float] = DEFAULT_REQ_LEN   # None: uniform in REQ_LEN_RANGE
    write_len: Optional[float] = DEFAULT_REQ_LEN
    allocs: int = 1
    alpha: float = 2.0
    beta: float = 0.2
    obj_size: int = 64
    policy: str = "rt"
    read_share: Optional[float] = None   # readers / (readers + writers), default 1/2

    def n_readers(self) -> int:
        if self.readers is not None:
            return self.readers
        if self.read_share is not None:
            return int(round(self.read_share * self.cores))
        return self.cores // 2

    def n_writers(self) -> int:
        if self.writers is not None:
            return self.writers
        if self.read_share is not None:
            return self.cores - self.n_readers()
        return self.cores - self.cores // 2


def generate_taskset(params: GenParams, rng: np.random.Generator, name: str = "") -> TaskSet:
    """One task set: randfixedsum utilizations per core, uniform periods, e_i = u_i p_i
    (raised to cover its requests if needed), readers and writers assigned to distinct
    random tasks, rate-monotonic priorities on each core."""
    n_tasks = params.cores * params.tasks_per_core
    if params.n_readers() > n_tasks or params.n_writers() > n_tasks:
        raise ValueError("more readers or writers than tasks")
    rows = []
    for c in range(params.cores):
        us = randfixedsum(params.tasks_per_core, params.util, rng)
        ps = rng.uniform(params.period_min, params.period_max, params.tasks_per_core)
        for u, p in zip(us, ps):
            rows.append({"core": c, "p": float(round(p, 3)), "u": float(u)})
    readers = set(rng.choice(n_tasks, params.n_readers(), replace=False).tolist())
    writers = set(rng.choice(n_tasks, params.n_writers(), replace=False).tolist())

    def length(fixed):
        if fixed is not None:
            return float(fixed)
        return float(round(rng.uniform(*REQ_LEN_RANGE), 3))

    tasks = []
    for i, row in enumerate(rows):
        gr = length(params.read_len) if i in readers else 0.0
        gw = length(params.write_len) if i in writers else 0.0
        e = max(row["u"] * row["p"], gr + gw, 1e-3)
        tasks.append(dict(name=f"t{i}", e=float(round(e, 3)), p=row["p"], core=row["core"],
                          a=params.allocs if i in writers else 0, gamma_r=gr, gamma_w=gw,
                          reads=1 if gr else 0, writes=1 if gw else 0))
    # rate-monotonic priorities per core: shorter period = larger number
    for c in range(params.cores):
        mine = sorted((t for t in tasks if t["core"] == c), key=lambda t: -t["p"])
        for rank, t in enumerate(mine):
            t["prio"] = float(rank + 1)
    return TaskSet(params.cores, tuple(Task(**t) for t in tasks), params.alpha, params.beta,
                   params.obj_size, None, params.policy, None, None, "periodic", name)
