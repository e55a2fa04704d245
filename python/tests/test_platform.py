"""The platform in the analysis (docs/rt-analysis.md, "The platform"): interference tasks
(the timer tick) and a non-preemptive σ; hand-computed, the arithmetic in the comments."""
from dataclasses import replace

import pytest

from tsync_rta.admission import core_utilisation, parse_admission
from tsync_rta.analysis import analyze
from tsync_rta.blocking import have_highspy
from tsync_rta.model import TaskSetError, parse_taskset


def one_task(e, **top):
    doc = {"cores": 2, "alpha": 0.0, "beta": 0.0, "policy": "mutex",
           "tasks": [{"name": "t", "e": e, "p": 10, "core": 0, "prio": 1}]}
    doc.update(top)
    return parse_taskset(doc)


@pytest.mark.parametrize("e, without, with_tick", [
    # r = e + ceil(r/4) * 1, from r = e:
    (2, 2, 3),    # 2 -> 3 -> 2 + ceil(3/4) = 3
    (3, 3, 4),    # 3 -> 4 -> 3 + ceil(4/4) = 4
    (4, 4, 6),    # 4 -> 5 -> 4 + ceil(5/4) = 6 -> 4 + ceil(6/4) = 6
])
def test_tick_is_top_priority_interference(e, without, with_tick):
    tick = [{"name": "tick", "e": 1, "p": 4}]
    assert analyze(one_task(e), "mutex", "inflation").r["t"] == without
    assert analyze(one_task(e, interference=tick), "mutex", "inflation").r["t"] == with_tick
    # a tick of the other core only does not reach core 0
    other = [dict(tick[0], core=1)]
    assert analyze(one_task(e, interference=other), "mutex", "inflation").r["t"] == without


def test_tick_can_make_a_task_set_unschedulable():
    # e = 8, p = 10: 8 -> 10 -> 8 + ceil(10/4) = 11 > 10
    assert analyze(one_task(8), "mutex", "inflation").schedulable
    res = analyze(one_task(8, interference=[{"e": 1, "p": 4}]), "mutex", "inflation")
    assert not res.schedulable and "misses its deadline" in res.reason


# One core, rt, q = 10, α = 3, β = 0: get (e 1, Γʳ 0.5, prio 3) above σ (hosted by set:
# prio 1.5, cost α = 3) above set (e 2, Γʷ 1, a 1, prio 1).
#   σ preemptive: the get is blocked only by the set's section: b = 1, r = 1 + 1 = 2.
#   σ non-preemptive: an activation, α + A(δ + q) β = 3, may have started just before
#     the get's release: b = max(1, 3) = 3, r = 1 + 3 = 4.
#   The set is below σ either way: r = 2 + ceil(r/10)·1 (get) + ceil(r/10)·3 (σ) = 6.
def rt_doc(**top):
    doc = {"cores": 1, "alpha": 3.0, "beta": 0.0, "policy": "rt", "q": 10,
           "tasks": [{"name": "get", "e": 1, "p": 10, "core": 0, "prio": 3, "gamma_r": 0.5},
                     {"name": "set", "e": 2, "p": 20, "core": 0, "prio": 1, "gamma_w": 1,
                      "a": 1}]}
    doc.update(top)
    return parse_taskset(doc)


def test_nonpreemptive_sigma_blocks_the_gets():
    pre = analyze(rt_doc(), "rt", "inflation")
    np_ = analyze(rt_doc(sigma_nonpreemptive=True), "rt", "inflation")
    assert pre.schedulable and np_.schedulable
    assert pre.b["get"] == 1 and pre.r["get"] == 2
    assert np_.b["get"] == 3 and np_.r["get"] == 4
    assert pre.r["set"] == np_.r["set"] == 6
    assert np_.b["set"] == pre.b["set"] == 0      # σ is above the set: no blocking there


@pytest.mark.skipif(not have_highspy(), reason="the ILP bound needs highspy")
def test_nonpreemptive_sigma_under_the_ilp():
    # the ILP of [20] on one core: no remote requests, so the blocking is the longest
    # lower-priority local section - σ's activation (3) rather than the set's (1)
    pre = analyze(rt_doc(), "rt", "ilp")
    np_ = analyze(rt_doc(sigma_nonpreemptive=True), "rt", "ilp")
    assert pre.b["get"] == pytest.approx(1) and np_.b["get"] == pytest.approx(3)
    assert np_.r["get"] == pytest.approx(4)


def test_nonpreemptive_sigma_collection_counts():
    # β = 0.5 adds A(δ + q) β to the activation; δ and r grow, so only a bound from below:
    # at least one object (the set's own allocation) is in A(δ + q): b >= 3 + 0.5
    np_ = analyze(rt_doc(beta=0.5, sigma_nonpreemptive=True), "rt", "inflation")
    assert np_.b["get"] >= 3.5
    assert np_.r["get"] == pytest.approx(1 + np_.b["get"])


def test_interference_in_the_utilisation_and_the_cost_maps():
    doc = {"cores": 1, "alpha": 0.0, "beta": 0.0, "policy": "mutex",
           "interference": [{"name": "tick", "e": {"mean": 1, "max": 2}, "p": 10}],
           "tasks": [{"name": "get", "e": 1, "p": "read", "core": 0, "prio": 2}],
           "admission": {"read_period": {"min": 1, "max": 100}, "cost": "max"}}
    ts, spec = parse_admission(doc)
    assert ts.interference[0].e == 2
    u = core_utilisation(ts.with_(tasks=tuple(replace(t, p=5.0) for t in ts.tasks)), None,
                         "mutex")
    assert u[0] == pytest.approx(1 / 5 + 2 / 10)


@pytest.mark.parametrize("irq, field", [
    ([{"e": 5, "p": 4}], "interference[0].e"),
    ([{"e": 1}], "interference[0].p"),
    ([{"e": 1, "p": 4, "core": 2}], "interference[0].core"),
    ([{"e": 1, "p": 4, "every": 1}], "interference[0].every"),
    ({"e": 1}, "interference"),
])
def test_bad_interference(irq, field):
    with pytest.raises(TaskSetError) as ei:
        one_task(2, interference=irq)
    assert str(ei.value).startswith(field + ":")


def test_round_trip():
    ts = one_task(2, interference=[{"name": "tick", "e": 1, "p": 4, "core": 1}],
                  sigma_nonpreemptive=True)
    assert parse_taskset(ts.to_dict()) == ts


# Release jitter (docs/rt-analysis.md, "The platform"; Audsley, Burns, Richardson, Tindell,
# Wellings 1993): r = J + w, w = e + b + Σ_hp ceil((w + J_k)/p_k) e_k. One core, no
# locks: a (e 1, p 4, prio 2) above b (e 3, p 10, prio 1).
#   J = 0: r_a = 1; r_b: 3 -> 3 + ceil(3/4) = 4 -> 3 + ceil(4/4) = 4.
#   J = 1: r_a = 1 + 1 = 2; w_b: 3 -> 3 + ceil(4/4) = 4 -> 3 + ceil(5/4) = 5
#          -> 3 + ceil(6/4) = 5, r_b = 1 + 5 = 6.
#   Dropping the hp term's J (w = 3 + ceil(w/4) = 4) gives 5, dropping the own J 5.
def jitter_doc(J, p_b=10):
    doc = {"cores": 1, "alpha": 0.0, "beta": 0.0, "policy": "mutex",
           "tasks": [{"name": "a", "e": 1, "p": 4, "core": 0, "prio": 2},
                     {"name": "b", "e": 3, "p": p_b, "core": 0, "prio": 1}]}
    if J is not None:
        doc["release_jitter"] = J
    return parse_taskset(doc)


def test_release_jitter_hand_computed():
    for blocking in ("inflation",) + (("ilp",) if have_highspy() else ()):
        assert analyze(jitter_doc(None), "mutex", blocking).r == {"a": 1, "b": 4}
        assert analyze(jitter_doc(0), "mutex", blocking).r == {"a": 1, "b": 4}
        assert analyze(jitter_doc(1), "mutex", blocking).r == {"a": 2, "b": 6}


def test_release_jitter_in_the_equations():
    from tsync_rta.analysis import response_time, smr_interference
    no_a = lambda _w: 0  # noqa: E731
    assert response_time(3, 0, [(4, 1, 1)], [], 0, 0, no_a, False, 100, jitter=1) == 6
    assert response_time(3, 0, [(4, 1)], [], 0, 0, no_a, False, 100, jitter=1) == 5
    assert response_time(3, 0, [(4, 1, 1)], [], 0, 0, no_a, False, 100) == 5
    # the deadline is met by J + w, not by w: 6 > 5.5
    assert response_time(3, 0, [(4, 1, 1)], [], 0, 0, no_a, False, 5.5, jitter=1) == float("inf")
    # σ's activations in a window w with its jitter J: ceil((w + J)/q) α; the
    # collection window is the job's whole response, own J + w: A(δ + 9 + 1) = 10 -> 1.0
    assert smr_interference(9, [(10, 2)], 0.5, 0.1, lambda w: w) == pytest.approx(1.0 + 0.9)
    assert smr_interference(9, [(10, 2)], 0.5, 0.1, lambda w: w, jitter=1) == \
        pytest.approx(1.0 + 1.0)


def test_release_jitter_against_the_deadline():
    # slack 0.55 on b's period 10: the deadline is 5.5; r_b = 4 without jitter, 6 with 1
    assert analyze(jitter_doc(0), "mutex", "inflation", deadline_factor=0.55).schedulable
    res = analyze(jitter_doc(1), "mutex", "inflation", deadline_factor=0.55)
    assert not res.schedulable and "task b misses its deadline" in res.reason


def test_release_jitter_of_sigma():
    # rt_doc (q = 10, α = 3, β = 0) with J = 5 on every task and σ:
    #   get:  b = 1 (the set's section), w = 1 + 1 = 2, r = 5 + 2 = 7
    #   σ:    b = 1, w = 3 + 1 + ceil((w + 5)/10)·1: 4 -> 5 -> 5, r = 5 + 5 = 10 <= q
    #   set:  w = 2 + ceil((w + 5)/10)·1 (get) + ceil((w + 5)/10)·3 (σ):
    #         2 -> 6 -> 10 -> 10, r = 5 + 10 = 15 (without σ's J: w 7, r 12; without the
    #         get's: r 14; without any: 6)
    res = analyze(rt_doc(release_jitter=5), "rt", "inflation")
    assert res.schedulable
    assert res.r == {"get": 7, "set": 15}
    assert res.sigma[0]["r"] == 10


def test_release_jitter_input():
    ts, _spec = parse_admission(
        {"cores": 1, "alpha": 0.0, "beta": 0.0, "policy": "mutex",
         "release_jitter": {"mean": 0.05, "p99.9": 0.2, "max": 30},
         "tasks": [{"name": "get", "e": 1, "p": "read", "core": 0, "prio": 2}],
         "admission": {"read_period": {"min": 1, "max": 100}}})
    assert ts.release_jitter == 0.2            # the default cost statistic, p99.9
    with pytest.raises(TaskSetError) as ei:
        jitter_doc(-1)
    assert str(ei.value).startswith("release_jitter:")
    ts = jitter_doc(0.25)
    assert parse_taskset(ts.to_dict()) == ts and ts.to_dict()["release_jitter"] == 0.25
