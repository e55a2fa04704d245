"""Monotonicity the paper relies on (§VII-B, Figs. 12-13): the memory bound G* grows with
the quiescence period q, with a_i and with the number of writers; and the generator."""
from dataclasses import replace

import numpy as np
import pytest

from tsync_rta.analysis import schedulability_test
from tsync_rta.generate import GenParams, generate_taskset, randfixedsum


def sets(n, **kw):
    rng = np.random.default_rng(11)
    p = GenParams(cores=3, tasks_per_core=5, util=0.6, **kw)
    return [generate_taskset(p, rng) for _ in range(n)]


@pytest.mark.parametrize("policy", ["rt", "temporal", "urcu"])
def test_bound_grows_with_q(policy):
    checked = 0
    for ts in sets(6):
        prev = None
        for q in (20_000, 40_000, 60_000, 80_000, 100_000):
            res = schedulability_test(ts, q, policy, "inflation")
            if not res.schedulable:
                continue
            if prev is not None:
                assert res.G_objects >= prev[1], (prev, q, res.G_objects)
                assert res.delta > prev[2]
                checked += 1
            prev = (q, res.G_objects, res.delta)
    assert checked >= 6


@pytest.mark.parametrize("policy", ["rt", "urcu"])
def test_bound_grows_with_allocations(policy):
    checked = 0
    for ts in sets(6):
        prev = None
        for k in (1, 2, 4, 8):
            tk = ts.with_(tasks=tuple(replace(t, a=t.a * k) for t in ts.tasks))
            res = schedulability_test(tk, 40_000, policy, "inflation")
            if not res.schedulable:
                break
            if prev is not None:
                assert res.G_objects >= 2 * prev  # at least linear in a_i (Eq. 5)
                checked += 1
            prev = res.G_objects
    assert checked >= 6


def test_bound_grows_with_writer_count():
    checked = 0
    rng = np.random.default_rng(5)
    base = generate_taskset(GenParams(cores=3, tasks_per_core=5, util=0.6, readers=3,
                                      writers=0), rng)
    tasks = list(base.tasks)
    prev = 0
    # turn tasks into writers one at a time (a_i = 1, Γʷ = 50 us)
    for i in range(len(tasks)):
        t = tasks[i]
        tasks[i] = replace(t, gamma_w=50.0, writes=1, a=1, e=max(t.e, t.gamma_r + 50.0))
        res = schedulability_test(base.with_(tasks=tuple(tasks)), 40_000, "rt", "inflation")
        if not res.schedulable:
            break
        assert res.G_objects > prev
        prev = res.G_objects
        checked += 1
    assert checked >= 5


def test_randfixedsum_sums_and_bounds():
    rng = np.random.default_rng(0)
    for n, total in [(1, 0.3), (2, 1.2), (10, 0.75), (10, 9.9), (40, 7.0)]:
        for _ in range(20):
            x = randfixedsum(n, total, rng)
            assert x.sum() == pytest.approx(total)
            assert x.min() >= -1e-12 and x.max() <= 1 + 1e-12
    # two values summing to 1.2 in [0,1]: the first is uniform on [0.2, 1]
    xs = np.array([randfixedsum(2, 1.2, rng)[0] for _ in range(4000)])
    assert xs.min() >= 0.2 - 1e-12 and abs(xs.mean() - 0.6) < 0.02
    with pytest.raises(ValueError):
        randfixedsum(3, 3.5, rng)


def test_generated_taskset_follows_section_7b():
    rng = np.random.default_rng(1)
    p = GenParams(cores=4, util=0.75, readers=2, writers=2)
    ts = generate_taskset(p, rng)
    assert len(ts.tasks) == 40
    for c in range(4):
        mine = [t for t in ts.tasks if t.core == c]
        assert len(mine) == 10
        assert sum(t.e / t.p for t in mine) == pytest.approx(0.75, abs=1e-3)
        # rate monotonic
        by_p = sorted(mine, key=lambda t: t.p)
        assert [t.prio for t in by_p] == sorted((t.prio for t in mine), reverse=True)
    assert all(10_000 <= t.p <= 100_000 for t in ts.tasks)
    assert sum(1 for t in ts.tasks if t.reads) == 2
    writers = [t for t in ts.tasks if t.writes]
    assert len(writers) == 2 and all(t.a == 1 and t.gamma_w == 100 for t in writers)
