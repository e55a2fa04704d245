"""Writer blocking under FIFO non-preemptive spin locks (§VI-B). The inflation tests run
everywhere; the ILP tests (ref. [20], HiGHS) need highspy and are skipped without it."""
import random

import pytest

from tsync_rta.analysis import schedulability_test
from tsync_rta.blocking import BlockingQuery, have_highspy, inflation_blocking, inflation_spin
from tsync_rta.model import parse_taskset

needs_highspy = pytest.mark.skipif(not have_highspy(),
                                   reason="highspy (HiGHS) not installed: the ILP blocking "
                                          "bound of ref. [20] cannot be solved; pip install highspy")


def test_inflation_by_hand():
    # other cores' longest write requests: 2 and 5 -> s = 7 per request (FIFO: one each)
    s = inflation_spin([2.0, 5.0])
    assert s == 7
    # 2 own write requests: 2*7 = 14; arrival: max over lp writers (3, 4) of Γʷ_l + s
    # = 4 + 7 = 11; total 25
    assert inflation_blocking(2, s, (3.0, 4.0)) == 25
    # no own requests, no lp writers: nothing
    assert inflation_blocking(0, s, ()) == 0


TWO_CORES = {
    "cores": 2, "alpha": 0.5, "beta": 0.1, "L_star": 10, "q": 50,
    "tasks": [
        {"name": "a_hi", "e": 5, "p": 50, "core": 0, "prio": 3, "gamma_w": 2, "a": 1},
        {"name": "a_lo", "e": 5, "p": 100, "core": 0, "prio": 1, "gamma_w": 3, "a": 1},
        {"name": "b1", "e": 4, "p": 25, "core": 1, "prio": 2, "gamma_w": 1, "a": 1},
        {"name": "b2", "e": 6, "p": 100, "core": 1, "prio": 1, "gamma_w": 4, "a": 1},
    ],
}


def test_inflation_in_the_analysis():
    res = schedulability_test(parse_taskset(TWO_CORES), 50, "rt", "inflation")
    # core 0 spins behind core 1's longest request (4), core 1 behind core 0's (3).
    # a_hi: own 1*4 + arrival from a_lo: 3 + 4 = 7 -> 11 (σ has no writes; it sits above)
    # a_lo: own 1*4, nothing below -> 4
    # b1:   own 1*3 + arrival from b2: 4 + 3 = 7 -> 10;   b2: own 3
    assert res.b == {"a_hi": 11, "a_lo": 4, "b1": 10, "b2": 3}


@needs_highspy
def test_ilp_by_hand():
    from tsync_rta.blocking import ilp_blocking
    # core 1: one task, request 2, 3 in the window; core 2: requests 1 and 5, one each.
    # N^S = 2 local requests may spin, one lower-priority local writer of length 4.
    # Spin: core 1 -> 2 requests of 2 = 4; core 2 -> 5 + 1 = 6.
    # Arrival (Z = 1): the lp section 4, plus one more per remote core: core 1 has a
    # third request of 2, core 2 has none left -> 4 + 2 = 6.   Total 4 + 6 + 6 = 16.
    q = BlockingQuery(remote=(((2.0, 3),), ((1.0, 1), (5.0, 1))), n_spin=2, local_lp=(4.0,))
    assert ilp_blocking(q) == pytest.approx(16)
    # without a lower-priority writer no arrival blocking: 4 + 6 = 10
    assert ilp_blocking(BlockingQuery(q.remote, 2, ())) == pytest.approx(10)
    # nothing that can spin and nothing below: 0
    assert ilp_blocking(BlockingQuery(q.remote, 0, ())) == pytest.approx(0)


def greedy_fifo_np(q: BlockingQuery) -> float:
    """Independent closed form for one resource: per remote core the N^S (+1 with
    arrival blocking) longest requests available, plus the longest lp section."""
    def best(z):
        tot = 0.0
        for reqs in q.remote:
            lens = sorted((l for (l, n) in reqs for _ in range(n)), reverse=True)
            tot += sum(lens[:q.n_spin + z])
        return tot + (max(q.local_lp) if z else 0.0)
    return max(best(0), best(1) if q.local_lp else 0.0)


@needs_highspy
def test_ilp_matches_independent_greedy():
    from tsync_rta.blocking import ilp_blocking
    rnd = random.Random(7)
    for _ in range(150):
        remote = tuple(tuple((float(rnd.randint(1, 300)), rnd.randint(0, 4))
                             for _ in range(rnd.randint(1, 3))) for _ in range(rnd.randint(0, 4)))
        lp = tuple(float(rnd.randint(1, 300)) for _ in range(rnd.randint(0, 2)))
        q = BlockingQuery(remote, rnd.randint(0, 5), lp)
        assert ilp_blocking(q) == pytest.approx(greedy_fifo_np(q), abs=1e-6), q


@needs_highspy
def test_ilp_never_worse_than_inflation():
    import numpy as np
    from tsync_rta.generate import GenParams, generate_taskset
    rng = np.random.default_rng(3)
    for k in range(6):
        ts = generate_taskset(GenParams(cores=3, tasks_per_core=4, util=0.6, readers=3,
                                        writers=6, write_len=None), rng)
        ilp = schedulability_test(ts, 20_000, "rt", "ilp")
        inf = schedulability_test(ts, 20_000, "rt", "inflation")
        if inf.schedulable:
            assert ilp.schedulable
            for name in inf.r:
                assert ilp.r[name] <= inf.r[name] + 1e-9


@needs_highspy
def test_ilp_in_the_analysis_by_hand():
    res = schedulability_test(parse_taskset(TWO_CORES), 50, "rt", "ilp")
    # b2 (core 1, lowest, r_b2 < 25): N^S = 1 own + ceil(r_b2/25) = 1 request of the
    # higher-priority b1 (the ILP charges hp spinning to b, inflation to e_b1); core 0
    # has a_hi (2) and a_lo (3) in the window, one request each -> spin = 3 + 2 = 5;
    # nothing below b2 -> no arrival blocking.            (inflation: 3 + b1's 3 in e_b1)
    assert res.r["b2"] < 25
    assert res.b["b2"] == pytest.approx(5)
    # b1 (p=25, hp on core 1): own 1 request spins behind 3; arrival: b2's section 4 plus
    # one more core-0 request (a_hi's 2, a_lo's 3 is taken by spin) -> 3 + 4 + 2 = 9 < 10
    assert res.b["b1"] == pytest.approx(9)
