"""Lock baselines (mutex, pf-rw) and rt-single in the analysis (RT-SMR (RTAS 2018)
§VII-B, Figs. 11 and 13)."""
import random

import pytest

from tsync_rta.analysis import (_Analyzer, analyze, reclaimer_hosts, schedulability_test,
                                spin_bounds)
from tsync_rta.blocking import have_highspy
from tsync_rta.generate import GenParams, generate_taskset
from tsync_rta.model import parse_taskset

needs_highspy = pytest.mark.skipif(not have_highspy(), reason="highspy not installed")
BLOCKINGS = ["inflation"] + (["ilp"] if have_highspy() else [])


def three_cores(reads=True):
    t = [
        {"name": "r0", "e": 5, "p": 100, "core": 0, "prio": 3, "gamma_r": 2},
        {"name": "w0", "e": 5, "p": 200, "core": 0, "prio": 1, "gamma_w": 3, "a": 1},
        {"name": "r1", "e": 6, "p": 150, "core": 1, "prio": 2, "gamma_r": 4},
        {"name": "w2", "e": 7, "p": 120, "core": 2, "prio": 2, "gamma_w": 5, "a": 1},
        {"name": "c2", "e": 9, "p": 300, "core": 2, "prio": 1},
    ]
    if not reads:
        t = [x for x in t if "gamma_r" not in x]
    return parse_taskset({"cores": 3, "alpha": 0.5, "beta": 0.1, "tasks": t})


def test_pfrw_spin_bounds_by_hand():
    an = _Analyzer(three_cores(), "pf-rw", "inflation", None)
    s = an.spin
    # core 0: remote reads max 4 (r1), remote writes max 5 (w2), one remote writer core
    #   read: one read phase + one write phase = 4 + 5; write: 5 + (1 + 1) * 4
    assert s[0] == {"r": 9, "w": 13}
    # core 1: remote reads 2 (r0), writes 3 (w0) and 5 (w2): read 2 + 5;
    #   write 3 + 5 + (2 + 1) * 2
    assert s[1] == {"r": 7, "w": 14}
    # core 2: remote reads max 4, writes 3: read 4 + 3, write 3 + (1 + 1) * 4
    assert s[2] == {"r": 7, "w": 11}
    res = schedulability_test(three_cores(), None, "pf-rw", "inflation")
    # r0: own read 9 + arrival from w0's write (3 + 13) = 25;  w2: own 11, arrival none
    # (c2 takes no lock); c2: nothing below it
    assert res.b["r0"] == 25 and res.b["w2"] == 11 and res.b["c2"] == 0


def test_mutex_spin_bounds_by_hand():
    an = _Analyzer(three_cores(), "mutex", "inflation", None)
    # a FIFO mutex treats reads and writes alike: per other core its longest request
    assert an.spin[0] == {"r": 4 + 5, "w": 4 + 5}
    assert an.spin[1] == {"r": 3 + 5, "w": 3 + 5}
    assert an.spin[2] == {"r": 3 + 4, "w": 3 + 4}


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_mutex_treats_reads_and_writes_alike(blocking):
    # turning a read request into a write request of the same length changes nothing
    ts = three_cores()
    swapped = ts.with_(tasks=tuple(
        t.__class__(**{**t.__dict__, "gamma_w": t.gamma_r, "writes": t.reads,
                       "gamma_r": 0.0, "reads": 0}) if t.reads else t for t in ts.tasks))
    a = schedulability_test(ts, None, "mutex", blocking)
    b = schedulability_test(swapped, None, "mutex", blocking)
    assert a.r == b.r and a.b == b.b


def test_pfrw_readers_never_spin_without_writers():
    ts = three_cores(reads=True)
    ts = ts.with_(tasks=tuple(t.__class__(**{**t.__dict__, "gamma_w": 0.0, "writes": 0, "a": 0})
                              for t in ts.tasks))
    an = _Analyzer(ts, "pf-rw", "inflation", None)
    assert all(s["r"] == 0 for s in an.spin.values())
    res = schedulability_test(ts, None, "pf-rw", "inflation")
    # no spinning at all; only a lower-priority read section may delay a job's start
    # (requests are non-preemptive): nobody below a reader issues requests here
    assert res.b == {"r0": 0, "w0": 0, "r1": 0, "w2": 0, "c2": 0}


def random_sets(n, cores=4, seed=7):
    rng = __import__("numpy").random.default_rng(seed)
    return [generate_taskset(GenParams(cores=cores, tasks_per_core=4, util=0.5,
                                       read_len=None, write_len=None), rng) for _ in range(n)]


def test_pfrw_read_spin_vs_mutex():
    # What holds: a pf-rw reader waits for one read phase and one write phase, R + W, while
    # a mutex request waits for one request per other core, Σ_k max Γ_k. So pf-rw <= mutex
    # whenever the longest remote read and the longest remote write are on different
    # cores (both terms then appear in the mutex sum) - always, for the read spin, when
    # one core does not hold both.
    for ts in random_sets(30):
        m = _Analyzer(ts, "mutex", "inflation", None)
        p = _Analyzer(ts, "pf-rw", "inflation", None)
        for c in range(ts.cores):
            other = [t for t in ts.tasks if t.core != c]
            lr = max((t.gamma_r for t in other), default=0)
            lw = max((t.gamma_w for t in other), default=0)
            same = any(t.gamma_r == lr and lr > 0 for t in other) and \
                {t.core for t in other if t.gamma_r == lr} & {t.core for t in other if t.gamma_w == lw}
            if not same:
                assert p.spin[c]["r"] <= m.spin[c]["r"]
    # ... and it does not hold in general: on two cores with one reader-writer core the
    # pf-rw read bound (R + W) exceeds the mutex one (max(R, W))
    two = parse_taskset({"cores": 2, "alpha": 0, "beta": 0, "tasks": [
        {"name": "a", "e": 5, "p": 100, "core": 0, "gamma_r": 2},
        {"name": "b", "e": 9, "p": 100, "core": 1, "gamma_r": 3, "gamma_w": 4}]})
    assert _Analyzer(two, "pf-rw", "inflation", None).spin[0]["r"] == 7
    assert _Analyzer(two, "mutex", "inflation", None).spin[0]["r"] == 4


def test_pfrw_read_blocking_at_scale():
    # with many cores (the paper's default: 20) the pf-rw reader's O(1) bound wins over the
    # mutex's O(m) one for every reader
    for ts in random_sets(5, cores=12):
        m = schedulability_test(ts, None, "mutex", "inflation")
        p = schedulability_test(ts, None, "pf-rw", "inflation")
        m_an = _Analyzer(ts, "mutex", "inflation", None)
        p_an = _Analyzer(ts, "pf-rw", "inflation", None)
        for t in ts.tasks:
            if t.reads:
                assert p_an.spin[t.core]["r"] <= m_an.spin[t.core]["r"]


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_mutex_equals_rt_without_readers_and_allocations(blocking):
    # no readers: every request is a write under both; no allocation: rt has no σ, no δ
    # interference -> identical response times and blocking
    for ts in random_sets(8):
        ts = ts.with_(tasks=tuple(t.__class__(**{**t.__dict__, "gamma_r": 0.0, "reads": 0,
                                                "a": 0}) for t in ts.tasks))
        a = schedulability_test(ts, 20000, "rt", blocking)
        b = schedulability_test(ts, None, "mutex", blocking)
        assert a.schedulable == b.schedulable
        if a.schedulable:
            assert a.r == b.r and a.b == b.b


@pytest.mark.parametrize("blocking", BLOCKINGS)
def test_mutex_dominates_rt_without_readers(blocking):
    # with allocations rt adds σ's α/β interference: mutex's response times are no larger
    for ts in random_sets(8):
        ts = ts.with_(tasks=tuple(t.__class__(**{**t.__dict__, "gamma_r": 0.0, "reads": 0})
                                  for t in ts.tasks))
        a = schedulability_test(ts, 20000, "rt", blocking)
        b = schedulability_test(ts, None, "mutex", blocking)
        if a.schedulable:
            assert b.schedulable
            assert all(b.r[k] <= a.r[k] + 1e-9 for k in a.r)


def test_lock_policies_report_no_memory_bound():
    for pol in ("mutex", "pf-rw"):
        res = analyze(three_cores(), pol, "inflation")
        d = res.to_dict()
        assert d["memory_bound_objects"] is None and d["reclaimers"] == []
        assert "not applicable" in d["memory_bound"]


@needs_highspy
def test_pfrw_ilp_falls_back_to_inflation_and_says_so():
    res = analyze(three_cores(), "pf-rw", "ilp")
    assert res.blocking == "inflation" and "inflation" in res.to_dict()["note"]


def test_rt_single_has_one_nonblocking_reclaimer():
    ts = three_cores()
    assert [h.name for h in reclaimer_hosts(ts, "rt")] == ["w0", "w2"]
    assert [h.name for h in reclaimer_hosts(ts, "rt-single")] == ["w0"]
    s = schedulability_test(ts, 100, "rt-single", "inflation")
    u = schedulability_test(ts, 100, "urcu", "inflation")
    assert s.schedulable and u.schedulable
    assert len(s.sigma) == 1
    # δ by Eq. 3 (Δ* included, like rt) but σ costs α only: U-RCU's σ also waits Δ*
    assert s.delta == pytest.approx(s.L_star + s.Delta_star + s.q_star)
    assert s.sigma[0]["r"] <= u.sigma[0]["r"]
    # r_σ* of the single reclaimer enters Eq. 5
    assert s.r_sigma_star == s.sigma[0]["r"]


def test_rt_single_equals_urcu_without_readers():
    ts = three_cores(reads=False)
    s = schedulability_test(ts, 100, "rt-single", "inflation")
    u = schedulability_test(ts, 100, "urcu", "inflation")
    assert s.r == u.r and s.G_objects == u.G_objects and s.delta == u.delta
