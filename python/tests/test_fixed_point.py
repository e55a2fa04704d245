"""The global fixed point of Fig. 16 on a task set small enough to iterate by hand."""
import pytest

from tsync_rta.analysis import analyze, q_candidates, schedulability_test, select_quiescence_period
from tsync_rta.model import parse_taskset

# One core. th: e=2, p=10, prio 2, one read request of 1.
#           tw: e=3, p=20, prio 1, one write request of 1, a=1 -> hosts σ (prio 1.5, q).
# α=0.5, β=0.1, L*=4 (given), q=10, inflation blocking (one core: no spinning).
ONE_CORE = {
    "cores": 1, "alpha": 0.5, "beta": 0.1, "L_star": 4, "obj_size": 64,
    "tasks": [
        {"name": "th", "e": 2, "p": 10, "core": 0, "prio": 2, "gamma_r": 1},
        {"name": "tw", "e": 3, "p": 20, "core": 0, "prio": 1, "gamma_w": 1, "a": 1},
    ],
}


def test_one_core_rt_by_hand():
    ts = parse_taskset(ONE_CORE)
    res = schedulability_test(ts, 10, "rt", "inflation")
    # Blocking: th and σ may wait for tw's non-preemptive write: b = Γʷ + spin(0) = 1.
    #           tw: own spin 0, no lower-priority writer: b = 0.
    assert res.b == {"th": 1, "tw": 0}
    # δ (Eq. 3) = L* + Δ* + q* = 4 + 1 + 10 = 15, A(δ + W) = ceil((15 + W + r_tw)/20).
    # th: no hp, no σ above it: r = 2 + 1 = 3; Δʳ = Γʳ = 1.
    # tw (round 1, r_tw = 3 in A): r = 3 + ceil(r/10)*2 (th) + ceil(r/10)*0.5 (σ) + A*0.1:
    #     3 -> 3 + 2 + .5 + ceil(21/20)=2*.1 = 5.7 -> 3 + 2 + .5 + ceil(23.7/20)=2*.1 = 5.7
    # σ: r = α + b + ceil(r/10)*e_th + A*0.1 = .5 + 1 + 2 + ...
    #     1.5 -> 3.5 + ceil(19.5/20)=1*.1 = 3.6 -> 3.5 + ceil(21.6/20)=2*.1 = 3.7 -> 3.7
    # round 2 with r_tw = 5.7 in A: tw 3 -> 5.5 + ceil(23.7/20)=2*.1 = 5.7 (ceil(26.4/20)=2)
    #     σ 1.5 -> 3.5 + ceil(22.2/20)=2*.1 = 3.7 (ceil(24.4/20)=2): nothing changes.
    assert res.schedulable
    assert res.r["th"] == pytest.approx(3)
    assert res.r["tw"] == pytest.approx(5.7)
    assert res.sigma[0]["r"] == pytest.approx(3.7)
    assert res.Delta_r["th"] == pytest.approx(1)
    assert res.delta == pytest.approx(15)
    # G* (Eq. 5) = (1 + ceil((15 + 3.7 + 5.7)/20)) * 1 = 1 + ceil(24.4/20) = 3 objects
    assert res.G_objects == 3
    assert res.G_bytes == 3 * 64


def test_one_core_urcu_by_hand():
    ts = parse_taskset(ONE_CORE)
    res = schedulability_test(ts, 10, "urcu", "inflation")
    # δ_U (Eq. 4) = 4 + 10 = 14; σ waits for readers: e_σ = α + Δ* = 0.5 + 1 = 1.5.
    # round 1 (r_tw = 3 in A = ceil((14 + W + r_tw)/20)):
    # σ: 2.5 -> 1.5+1+2 + ceil(19.5/20)=1*.1 = 4.6 -> ceil(21.6/20)=2: 4.7 -> 4.7
    # tw: 3 -> 3+2+.5 + ceil(20/20)=1*.1 = 5.6 -> 5.5 + ceil(22.6/20)=2*.1 = 5.7 -> 5.7
    # round 2 (r_tw = 5.7): σ 2.5 -> 4.5 + ceil(22.2/20)=2*.1 = 4.7; tw 3 -> 5.5 +
    #     ceil(22.7/20)=2*.1 = 5.7 (ceil(25.4/20)=2): unchanged.
    assert res.schedulable
    assert res.delta == pytest.approx(14)
    assert res.sigma[0]["r"] == pytest.approx(4.7)
    assert res.r["tw"] == pytest.approx(5.7)
    # G* = 1 + ceil((14 + 4.7 + 5.7)/20) = 1 + ceil(24.4/20) = 3
    assert res.G_objects == 3


def test_temporal_grace_is_delta_star():
    ts = parse_taskset(ONE_CORE)
    res = schedulability_test(ts, 10, "temporal", "inflation")
    # temporal quiescence returns now - Δ*: the grace period is the read bound, 1 here
    assert res.grace == pytest.approx(1)
    assert res.to_dict()["grace_us"] == pytest.approx(1)


def test_deadline_miss_is_reported():
    d = dict(ONE_CORE)
    d["tasks"] = [dict(ONE_CORE["tasks"][0], e=9), ONE_CORE["tasks"][1]]
    ts = parse_taskset(d)
    # th: 9 + b 1 = 10 <= 10 ok; tw: 3 + ceil(r/10)*9 ... > 20 -> miss
    res = schedulability_test(ts, 10, "rt", "inflation")
    assert not res.schedulable
    assert "misses its deadline" in res.reason
    assert res.G_objects is None


def test_q_candidates_and_selection():
    ts = parse_taskset(ONE_CORE)
    # min period 10 .. max period 20 in steps of 10 (§VI-C)
    assert q_candidates(ts) == [10, 20]
    d = dict(ONE_CORE, q_search={"min": 1, "max": 5, "step": 2})
    assert q_candidates(parse_taskset(d)) == [1, 3, 5]
    # q = 1: σ has deadline 1 but e_σ + b_σ = 1.5 -> unschedulable; q = 3:
    # σ: 1.5 -> .5+1+ceil(1.5/10)*2 + .1 = 3.6 > 3 -> unschedulable; q = 5:
    # σ: 3.6 -> .5+1+2+ceil((δ+3.6+r_tw)/20)*.1, δ = 4+1+5 = 10: ceil(16.6/20)=1 -> 3.6 ok
    res = select_quiescence_period(parse_taskset(d), "rt", "inflation")
    assert res.schedulable and res.q == 5
    assert res.q_tried == [1, 3, 5]
    # none schedulable: reported with the reason at the smallest q
    d2 = dict(ONE_CORE, q_search={"min": 1, "max": 3, "step": 2})
    res2 = select_quiescence_period(parse_taskset(d2), "rt", "inflation")
    assert not res2.schedulable and "no candidate q" in res2.reason


def test_fixed_q_from_taskset_used_by_analyze():
    d = dict(ONE_CORE, q=10)
    res = analyze(parse_taskset(d), "rt", "inflation")
    assert res.q == 10 and res.G_objects == 3


def test_on_free_reclaim_extends_q_star():
    # reclaim at frees, at most every q: q* = q + max_writer(p + r) = 10 + 20 + r_tw
    d = dict(ONE_CORE, reclaim="on_free")
    res = schedulability_test(parse_taskset(d), 10, "rt", "inflation")
    assert res.q_star == pytest.approx(10 + 20 + res.r["tw"])
    assert res.delta == pytest.approx(4 + 1 + res.q_star)


def test_default_L_star_is_largest_writer_response_time():
    d = {k: v for k, v in ONE_CORE.items() if k != "L_star"}
    res = schedulability_test(parse_taskset(d), 10, "rt", "inflation")
    assert res.L_star == pytest.approx(res.r["tw"])


def test_no_reclaimer_for_allocating_tasks_is_rejected():
    d = dict(ONE_CORE)
    d["tasks"] = [dict(t, quiesce=False) for t in ONE_CORE["tasks"]]
    res = schedulability_test(parse_taskset(d), 10, "rt", "inflation")
    assert not res.schedulable and "reclamation" in res.reason
