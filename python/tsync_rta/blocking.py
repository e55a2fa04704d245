"""Writer blocking under non-preemptive FIFO spin locks (RT-SMR (RTAS 2018) §VI-B "Writer Mutex
Blocking"; only write requests take the lock in real-time SMR, §V-B).

Two bounds, for a job J of τ_i on core P(i), in a window of length `window`
(its response time r_i):

* :func:`inflation_blocking` - the classic inflation-based bound (the one the paper
  cites as [9]): each request waits for at most one request per other core (FIFO), of
  at most the longest request there; spin time is added to e_i and to every hp task's
  e_k; one lower-priority non-preemptive section (its own spin plus critical section)
  may delay J's start (arrival blocking).

* :func:`ilp_blocking` - the ILP of Wieder & Brandenburg (the paper's ref. [20], RTSS
  2013, FIFO non-preemptive spin locks), restricted to write requests as §VI-B says,
  solved with HiGHS (`highspy`). It counts every remote request at most once and only
  as often as it can be issued in the window, instead of charging the longest request
  to each of J's requests. With one resource the per-request variables of [20] are
  aggregated per task (the constraints only ever sum them per task), which is exact.

A :class:`BlockingQuery` describes what the ILP needs: the lengths and window counts of
the remote requests, the number of local requests that may spin (J's own and those of
local higher-priority jobs in the window, N^S), and the lower-priority local sections.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["BlockingQuery", "inflation_spin", "inflation_blocking", "ilp_blocking",
           "have_highspy", "HighsMissing"]


class HighsMissing(RuntimeError):
    """The ILP bound was asked for but highspy is not installed."""


def have_highspy() -> bool:
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class BlockingQuery:
    """Inputs of [20]'s ILP for one job.

    remote: per remote core, a tuple of (L_x, n_x): request length Γʷ_x and the number of
        requests τ_x can issue in the window, N_x * ceil((window + r_x) / p_x).
    n_spin: N^S, local requests that can spin in the window: the job's own write
        requests plus N_h * ceil(window / p_h) for each local higher-priority τ_h.
    local_lp: lengths Γʷ_l of lower-priority local tasks that issue write requests
        (arrival blocking candidates); empty if arrival blocking is impossible.
    """
    remote: tuple
    n_spin: int
    local_lp: tuple


def inflation_spin(remote_max: list) -> float:
    """Per-request FIFO spin bound s = Σ_{cores k ≠ P(i)} max_{τ_x on k} Γʷ_x
    (inflation-based analysis, [9]: at most one request per other core is ahead)."""
    return float(sum(remote_max))


def inflation_blocking(n_own: int, spin: float, local_lp: tuple) -> float:
    """Inflation-based blocking b_i of Eq. 6 for a job with n_own write requests:
    n_own * s (its own spinning) + max over lower-priority local writers of
    (Γʷ_l + s) (one non-preemptive section delaying its start). Higher-priority tasks'
    spinning is charged by inflating their e_k (see analysis.py)."""
    arrival = max((l + spin for l in local_lp), default=0.0)
    return n_own * spin + arrival


def ilp_blocking(q: BlockingQuery) -> float:
    """ILP-based blocking bound of [20] (FIFO, non-preemptive), write requests only.

    Variables (aggregated per remote task x; [20] has one per request, same bounds):
      S_x >= 0  spin delay caused by x's requests,  A_x >= 0  arrival blocking by x's
      requests (both real-valued as in [20]); Y_l >= 0 for lower-priority local task l;
      binary Z: arrival blocking happens (a local lower-priority request is in progress).
    maximise  Σ_x L_x (S_x + A_x) + Σ_l L_l Y_l
    s.t.  S_x + A_x <= n_x                   each request blocks at most once   ([20] C1)
          Σ_{x on core k} S_x <= N^S         FIFO: one remote request per core per
                                             local spinning request           ([20] C5)
          Σ_{x on core k} A_x <= Z           the lp request waits for <= 1 per core
          Σ_l Y_l <= Z                       at most one lp section delays J  ([20] C3)
          Z = 0 when no local lp writer exists.
    Raises HighsMissing without highspy.
    """
    try:
        import highspy
    except ImportError as exc:  # pragma: no cover - exercised only without highspy
        raise HighsMissing("the ILP blocking bound needs highspy (pip install highspy); "
                           "use blocking='inflation' otherwise") from exc
    cols_cost, cols_ub = [], []
    rows = []  # (list of (col, coef), ub)
    for core_reqs in q.remote:
        s_idx, a_idx = [], []
        for (length, n) in core_reqs:
            if n <= 0 or length <= 0:
                continue
            s = len(cols_cost); cols_cost.append(length); cols_ub.append(float(n))
            a = len(cols_cost); cols_cost.append(length); cols_ub.append(float(n))
            s_idx.append(s); a_idx.append(a)
            rows.append(([(s, 1.0), (a, 1.0)], float(n)))
        if s_idx:
            rows.append(([(c, 1.0) for c in s_idx], float(q.n_spin)))
            rows.append(("Z", [(c, 1.0) for c in a_idx]))
    y_idx = []
    for length in q.local_lp:
        if length > 0:
            y = len(cols_cost); cols_cost.append(length); cols_ub.append(1.0)
            y_idx.append(y)
    z = len(cols_cost)
    cols_cost.append(0.0)
    cols_ub.append(1.0 if y_idx else 0.0)
    if y_idx:
        rows.append(("Z", [(c, 1.0) for c in y_idx]))
    if z == 0:
        return 0.0

    lp = highspy.HighsLp()
    lp.num_col_ = len(cols_cost)
    lp.col_cost_ = cols_cost
    lp.col_lower_ = [0.0] * len(cols_cost)
    lp.col_upper_ = cols_ub
    lp.sense_ = highspy.ObjSense.kMaximize
    # row-wise triplets -> column-wise CSC
    entries: list = [[] for _ in cols_cost]
    lower, upper = [], []
    for r, row in enumerate(rows):
        if row[0] == "Z":  # Σ cols - Z <= 0
            for c, v in row[1]:
                entries[c].append((r, v))
            entries[z].append((r, -1.0))
            lower.append(-highspy.kHighsInf); upper.append(0.0)
        else:
            for c, v in row[0]:
                entries[c].append((r, v))
            lower.append(-highspy.kHighsInf); upper.append(row[1])
    lp.num_row_ = len(rows)
    lp.row_lower_ = lower
    lp.row_upper_ = upper
    start, index, value = [0], [], []
    for col in entries:
        for r, v in col:
            index.append(r); value.append(v)
        start.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    lp.a_matrix_.num_col_ = lp.num_col_
    lp.a_matrix_.num_row_ = lp.num_row_
    integrality = [highspy.HighsVarType.kContinuous] * len(cols_cost)
    integrality[z] = highspy.HighsVarType.kInteger
    lp.integrality_ = integrality

    h = _solver()
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS: blocking ILP not solved: {h.modelStatusToString(status)}")
    val = h.getInfo().objective_function_value
    # the optimum is a sum of request lengths; clean solver round-off
    return max(0.0, float(val))


_SOLVER = None


def _solver():
    """One quiet HiGHS instance per process (reused: constructing one per ILP costs more
    than solving it). HiGHS >= 1.16 prints a banner on the C stdout when the first
    instance is created; it is sent to stderr, so that stdout stays the JSON the CLI
    promises (`tsync-rta admission --json` is parsed by tsync-bench)."""
    global _SOLVER
    if _SOLVER is None:
        import os
        import sys
        import highspy
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        _SOLVER = h
    return _SOLVER


def window_jobs(window: float, r_x: float, p_x: float) -> int:
    """Jobs of a remote task in a window: ceil((window + r_x) / p_x) ([18], as in Eq. 1)."""
    return int(math.ceil((window + r_x) / p_x - 1e-12))
