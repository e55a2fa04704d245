"""`tsync-rta admission` (RT-SMR (RTAS 2018) §VII-C, Fig. 14(a)): period selection."""
import json
import math

import pytest
import yaml

from tsync_rta.admission import (_with_periods, load_admission, min_read_period,
                                 parse_admission, select_periods)
from tsync_rta.analysis import schedulability_test
from tsync_rta.blocking import have_highspy
from tsync_rta.model import TaskSetError

from test_cli import ROOT, run

EXAMPLE = ROOT / "examples" / "cache-admission.yaml"

# One core: get (e 1, Γʳ 0.5, prio 2) above set (e 2, Γʷ 1, prio 1), mutex, no remote
# cores: no spinning. By hand, the paper's test (slack 1: response time <= period; docs:
# "Admission control"):
#   get: b = 1 (set's non-preemptive section), r = 1 + 1 = 2 <= R  ->  R >= 2
#   set: r = 2 + ceil(r/R) * 1 <= U
#     U = 3: R in [2, 3) gives r = 2 + 1 = 3, ceil(3/R) = 2 -> 4 > 3; R = 3: r = 3. R* = 3
#     U = 4: R = 2: r = 3 -> ceil(3/2) = 2 -> 4 <= 4.                              R* = 2
#     U = 5: R = 2: r = 4 <= 5.                                                    R* = 2
#   requests/s: U=3: 1e6/3 + 1e6/3 = 666,667; U=4: 5e5 + 2.5e5 = 750,000;
#               U=5: 5e5 + 2e5 = 700,000 -> U = 4 is chosen.
ONE_CORE = {
    "cores": 1, "alpha": 0.0, "beta": 0.0, "policy": "mutex",
    "tasks": [
        {"name": "get", "e": 1, "p": "read", "core": 0, "prio": 2, "gamma_r": 0.5},
        {"name": "set", "e": 2, "p": "update", "core": 0, "prio": 1, "gamma_w": 1, "a": 1},
    ],
    "admission": {"update_periods": [3, 4, 5], "read_period": {"min": 1, "max": 100},
                  "resolution": 0.001, "slack": 1},
}


def one_core(**adm):
    """ONE_CORE with admission keys replaced (None removes one)."""
    doc = json.loads(json.dumps(ONE_CORE))
    for k, v in adm.items():
        if v is None:
            doc["admission"].pop(k, None)
        else:
            doc["admission"][k] = v
    return doc


def test_by_hand_one_core():
    ts, spec = parse_admission(ONE_CORE)
    adm = select_periods(ts, spec, "mutex", "inflation")
    got = {c.update_period: c.read_period for c in adm.candidates}
    assert got[3] == pytest.approx(3, rel=spec.resolution)
    assert got[3] >= 3 and got[4] >= 2 and got[5] >= 2
    assert got[4] == pytest.approx(2, rel=spec.resolution)
    assert got[5] == pytest.approx(2, rel=spec.resolution)
    assert adm.chosen.update_period == 4
    d = adm.to_dict()
    assert d["throughput_rps"] == pytest.approx(1e6 / got[4] + 1e6 / 4)
    assert d["get_rps"] == pytest.approx(1e6 / got[4]) and d["set_rps"] == 250000
    assert d["bound_objects"] is None and d["q_us"] is None   # a lock defers nothing


# ONE_CORE at the default slack 0.7 (every response time <= 0.7 x its period). By hand:
#   get: r = 1 + b 1 = 2 <= 0.7 R  ->  R >= 2 / 0.7 = 2.857
#   set: r = 2 + ceil(r/R) * 1 <= 0.7 U; every r >= 3 (2 + one get), so U = 3 (2.1) and
#        U = 4 (2.8) admit no R;
#     U = 5 (3.5): R in [2.857, 3): r = 2 + 1 = 3, ceil(3/R) = 2 -> 4 > 3.5; R = 3: r = 3.
#   chosen: U = 5, R = 3 (533,333 requests/s). The zero-slack rule chose U = 4, R = 2.
def test_slack_by_hand_one_core():
    ts, spec = parse_admission(one_core(slack=None))
    assert spec.slack == 0.7 and spec.cost == "p99.9" and spec.util_cap is None
    adm = select_periods(ts, spec, "mutex", "inflation")
    got = {c.update_period: c for c in adm.candidates}
    assert not got[3].schedulable and not got[4].schedulable
    assert got[5].read_period == pytest.approx(3, rel=spec.resolution)
    assert got[5].read_period >= 3
    assert adm.chosen.update_period == 5
    r = adm.chosen.result
    assert r.r["get"] <= 0.7 * adm.chosen.read_period
    assert r.r["set"] <= 0.7 * 5
    assert adm.to_dict()["slack"] == 0.7
    # the same from the command line overrides the document: --slack 1 is the paper's
    ts1, spec1 = parse_admission(one_core(slack=None), slack=1)
    assert select_periods(ts1, spec1, "mutex", "inflation").chosen.update_period == 4


# ONE_CORE at slack 1 with a utilisation cap of 0.8: u = 1/R + 2/U <= 0.8.
#   U = 3: R >= 1 / (0.8 - 2/3) = 7.5;   U = 4: R >= 1 / 0.3 = 3.333;
#   U = 5: R >= 1 / 0.4 = 2.5 (schedulable there: set r = 2 + ceil(3/2.5) = 4 <= 5).
#   requests/s: 466,667, 550,000, 600,000 -> U = 5, R = 2.5.
def test_util_cap_by_hand_one_core():
    ts, spec = parse_admission(one_core(util_cap=0.8))
    adm = select_periods(ts, spec, "mutex", "inflation")
    got = {c.update_period: c.read_period for c in adm.candidates}
    assert got[3] == pytest.approx(7.5, rel=spec.resolution) and got[3] >= 7.5
    assert got[4] == pytest.approx(10 / 3, rel=spec.resolution) and got[4] >= 10 / 3
    assert got[5] == pytest.approx(2.5, rel=spec.resolution) and got[5] >= 2.5
    assert adm.chosen.update_period == 5
    assert adm.to_dict()["util_cap"] == 0.8


def test_cost_statistics():
    doc = one_core()
    doc["alpha"] = {"mean": 0.0, "p99": 0.0, "p99.9": 0.0, "max": 0.0}
    doc["tasks"][0].update(e={"mean": 1, "p99": 1.1, "p99.9": 1.2, "max": 5},
                           gamma_r={"mean": 0.5, "p99": 0.6, "p99.9": 0.7, "max": 4})
    got = {}
    for stat in ("mean", "p99", "p99.9", "max"):
        ts, spec = parse_admission(doc, cost=stat)
        got[stat] = (ts.tasks[0].e, ts.tasks[0].gamma_r)
        assert spec.cost == stat
    assert got == {"mean": (1, 0.5), "p99": (1.1, 0.6), "p99.9": (1.2, 0.7), "max": (5, 4)}
    ts, spec = parse_admission(doc)               # default: p99.9
    assert ts.tasks[0].e == 1.2 and ts.tasks[1].e == 2   # a plain number is used as is
    doc["admission"]["cost"] = "max"
    assert parse_admission(doc)[0].tasks[0].e == 5
    with pytest.raises(TaskSetError) as ei:
        parse_admission(doc, cost="p50")
    assert str(ei.value).startswith("alpha:")   # the first map without it
    for bad in ("p100", "median", "p"):
        with pytest.raises(TaskSetError):
            parse_admission(doc, cost=bad)


def test_cli_cost_slack_and_cap(tmp_path):
    doc = one_core(slack=None)
    doc["tasks"][0].update(e={"mean": 1, "max": 1.5}, gamma_r={"mean": 0.5, "max": 0.5})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    # the default statistic p99.9 is not in the maps: exit 2, naming the field
    p = run("admission", path, "--json", "--blocking", "inflation", check=False)
    assert p.returncode == 2 and "tasks[0].e" in p.stderr
    d = json.loads(run("admission", path, "--json", "--blocking", "inflation",
                       "--cost-percentile", "mean", "--slack", "1").stdout)
    assert d["cost"] == "mean" and d["slack"] == 1 and d["update_period_us"] == 4
    d = json.loads(run("admission", path, "--json", "--blocking", "inflation",
                       "--cost-percentile", "mean").stdout)
    assert d["slack"] == 0.7 and d["update_period_us"] == 5
    d = json.loads(run("admission", path, "--json", "--blocking", "inflation",
                       "--cost-percentile", "mean", "--slack", "1", "--util-cap",
                       "0.8").stdout)
    assert d["util_cap"] == 0.8 and d["update_period_us"] == 5
    assert d["read_period_us"] == pytest.approx(2.5, rel=0.001)
    assert run("admission", path, "--json", "--slack", "1.5", check=False).returncode == 2


def brute_min_read(ts, spec, U, policy, blocking, q):
    """The least R on a fine geometric grid that schedulability_test accepts."""
    R = spec.read_min
    while R <= spec.read_max:
        if schedulability_test(_with_periods(ts, spec, U, R), q, policy, blocking,
                               spec.slack).schedulable:
            return R
        R *= 1.0005
    return None


@pytest.mark.parametrize("policy", ["rt", "mutex", "pf-rw"])
def test_matches_brute_force(policy):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["admission"] = {"update_periods": [12, 40], "read_period": {"min": 1.5, "max": 50},
                        "resolution": 0.005, "q": 20}
    ts, spec = parse_admission(doc)
    for U in spec.update_periods:
        c = min_read_period(ts, spec, U, policy, "inflation")
        want = brute_min_read(ts, spec, U, policy, "inflation", 20)
        assert c.schedulable == (want is not None)
        if want is not None:
            # the bisection's answer is schedulable and within the resolution of the least
            assert schedulability_test(_with_periods(ts, spec, U, c.read_period), 20, policy,
                                       "inflation", spec.slack).schedulable
            assert want / (1 + 0.001) <= c.read_period <= want * (1 + spec.resolution) + 1e-9


@pytest.mark.parametrize("policy", ["rt", "temporal", "mutex", "pf-rw"])
def test_larger_update_period_never_raises_min_read_period(policy):
    # At a fixed q every term of the analysis is non-increasing in a period, so R*(U) is
    # non-increasing in U (and set/s falls as 1/U). Fig. 16's q selection can break this.
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["admission"] = {"update_periods": {"min": 8, "max": 400, "steps": 12},
                        "read_period": {"min": 1.5, "max": 1000}, "q": 30}
    ts, spec = parse_admission(doc)
    adm = select_periods(ts, spec, policy, "inflation")
    rs = [c.read_period for c in adm.candidates if c.schedulable]
    assert rs, "some candidate must be schedulable"
    assert all(b <= a * (1 + spec.resolution) for a, b in zip(rs, rs[1:]))
    ok = [c.schedulable for c in adm.candidates]
    assert ok == sorted(ok)    # once schedulable, larger U stays schedulable


def test_tie_goes_to_the_smallest_update_period():
    doc = json.loads(json.dumps(ONE_CORE))
    # the update task issues no request: every candidate has the same get/s and set/s 0
    doc["tasks"][1] = {"name": "set", "e": 0.1, "p": "update", "core": 0, "prio": 1}
    doc["admission"]["update_periods"] = [50, 20, 30]
    doc["admission"]["read_period"] = {"min": 2, "max": 100}   # R = 2 always schedulable
    ts, spec = parse_admission(doc)
    adm = select_periods(ts, spec, "mutex", "inflation")
    assert len({round(c.throughput, 6) for c in adm.candidates}) == 1
    assert adm.chosen.update_period == 20


def test_geometric_grid():
    doc = json.loads(json.dumps(ONE_CORE))
    doc["admission"]["update_periods"] = {"min": 10, "max": 1000, "steps": 3}
    _, spec = parse_admission(doc)
    assert spec.update_periods == (10, 100, 1000)


def test_cli_json_contract(tmp_path):
    p = run("admission", EXAMPLE, "--json")
    d = json.loads(p.stdout)    # stdout is exactly one JSON object
    for k in ("schedulable", "policy", "update_period_us", "read_period_us", "q_us",
              "throughput_rps", "get_rps", "set_rps", "bound_objects", "bound_bytes",
              "candidates", "cost", "slack", "util_cap"):
        assert k in d
    assert d["schedulable"] is True and d["policy"] == "rt"
    assert d["throughput_rps"] == pytest.approx(d["get_rps"] + d["set_rps"])
    assert d["bound_bytes"] == d["bound_objects"] * 64
    for c in d["candidates"]:
        assert set(c) >= {"update_period_us", "read_period_us", "throughput_rps", "bound_objects"}
    # the chosen one is the best, and the smallest among the best
    best = max(c["throughput_rps"] for c in d["candidates"])
    assert d["throughput_rps"] == best
    assert d["update_period_us"] == min(c["update_period_us"] for c in d["candidates"]
                                        if c["throughput_rps"] == best)
    m = json.loads(run("admission", EXAMPLE, "--json", "--policy", "mutex").stdout)
    assert m["bound_objects"] is None and m["bound_bytes"] is None and m["q_us"] is None
    # the table form names the chosen candidate
    assert "<- chosen" in run("admission", EXAMPLE, "--no-progress").stdout


def test_cli_unschedulable_exit_1(tmp_path):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["admission"]["update_periods"] = [3, 4]     # shorter than a set job's e = 4 + SMR
    doc["admission"]["read_period"] = {"min": 2, "max": 5}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    p = run("admission", path, "--json", check=False)
    assert p.returncode == 1
    d = json.loads(p.stdout)
    assert d["schedulable"] is False and d["update_period_us"] is None
    assert d["throughput_rps"] == 0 and all(c["read_period_us"] is None for c in d["candidates"])


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["tasks"][0].update(p="often"), "tasks[0].p"),
    (lambda d: d["tasks"][0].pop("prio"), "tasks[0].prio"),
    (lambda d: d["admission"].pop("update_periods"), "admission.update_periods"),
    (lambda d: d["admission"].update(resolution=2), "admission.resolution"),
    (lambda d: d["admission"].update(speed=1), "admission.speed"),
    (lambda d: d["admission"].update(objective="latency"), "admission.objective"),
    (lambda d: d["admission"].update(cost="median"), "admission.cost"),
    (lambda d: d["admission"].update(slack=1.5), "admission.slack"),
    (lambda d: d["admission"].update(util_cap=0), "admission.util_cap"),
    (lambda d: d["admission"].update(update_periods={"min": 10, "max": 5, "steps": 2}),
     "admission.update_periods.max"),
    (lambda d: d["admission"].update(read_period={"min": 10, "max": 5}),
     "admission.read_period.max"),
    (lambda d: d.update(policy="rcu"), "policy"),
])
def test_bad_input_exit_2(tmp_path, mutate, field):
    doc = yaml.safe_load(EXAMPLE.read_text())
    mutate(doc)
    with pytest.raises(TaskSetError) as ei:
        parse_admission(doc)
    assert str(ei.value).startswith(field + ":")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    p = run("admission", path, "--json", check=False)
    assert p.returncode == 2 and field in p.stderr


def test_example_loads_and_every_policy_runs():
    ts, spec = load_admission(EXAMPLE)
    assert spec.read_tasks == ("get0", "get1") and spec.update_tasks == ("set0", "set1")
    blocking = "ilp" if have_highspy() else "inflation"
    tp = {}
    for pol in ("rt", "temporal", "urcu", "rt-single", "mutex", "pf-rw"):
        adm = select_periods(ts, spec, pol, blocking)
        assert adm.schedulable, pol
        tp[pol] = adm.chosen.throughput
        if pol in ("mutex", "pf-rw"):
            assert adm.to_dict()["bound_objects"] is None
        else:
            assert adm.to_dict()["bound_objects"] >= 1
    assert tp["rt"] >= tp["mutex"]   # the example's point: reads that never lock
