"""Input validation: bad task sets are rejected with the offending field named."""
import json

import pytest

from tsync_rta.model import TaskSetError, dump_taskset, load_taskset, parse_taskset

GOOD = {"cores": 2, "alpha": 1, "beta": 0.1,
        "tasks": [{"e": 2, "p": 10, "core": 0, "gamma_w": 1, "a": 1},
                  {"e": 3, "p": 20, "core": 1, "gamma_r": 1}]}


def bad(mutate):
    d = json.loads(json.dumps(GOOD))
    mutate(d)
    with pytest.raises(TaskSetError) as ei:
        parse_taskset(d)
    return str(ei.value)


def test_good_and_defaults():
    ts = parse_taskset(GOOD)
    t0, t1 = ts.tasks
    assert (t0.name, t0.writes, t0.reads, t1.reads, t1.writes) == ("t0", 1, 0, 1, 0)
    assert ts.policy == "rt" and ts.obj_size == 64 and ts.q is None


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.pop("cores"), "cores"),
    (lambda d: d.update(cores=0), "cores"),
    (lambda d: d.update(alpha=-1), "alpha"),
    (lambda d: d.update(beta="x"), "beta"),
    (lambda d: d.update(policy="general"), "policy"),
    (lambda d: d.update(reclaim="sometimes"), "reclaim"),
    (lambda d: d.update(q=0), "q"),
    (lambda d: d.update(q_search={"min": 5, "max": 1, "step": 1}), "q_search.max"),
    (lambda d: d.update(q_search={"min": 5, "max": 10}), "q_search.step"),
    (lambda d: d.update(tasks=[]), "tasks"),
    (lambda d: d.update(bogus=1), "bogus"),
    (lambda d: d["tasks"][1].update(p=0), "tasks[1].p"),
    (lambda d: d["tasks"][1].pop("e"), "tasks[1].e"),
    (lambda d: d["tasks"][0].update(core=2), "tasks[0].core"),
    (lambda d: d["tasks"][0].update(a=1.5), "tasks[0].a"),
    (lambda d: d["tasks"][0].update(gamma_w=-1), "tasks[0].gamma_w"),
    (lambda d: d["tasks"][0].update(gamma_w=5), "tasks[0].e"),
    (lambda d: d["tasks"][1].update(gama_r=1), "tasks[1].gama_r"),
    (lambda d: d["tasks"][0].update(writes=1, gamma_w=0), "tasks[0].gamma_w"),
    (lambda d: d["tasks"][0].update(quiesce="yes"), "tasks[0].quiesce"),
    (lambda d: d["tasks"][1].update(name="t0", core=0), "tasks[1].name"),
    (lambda d: (d["tasks"][0].update(prio=1), d["tasks"][1].update(prio=1, core=0)), "tasks[1].prio"),
    (lambda d: d["tasks"][0].update(e=float("inf")), "tasks[0].e"),
])
def test_bad_field_is_named(mutate, field):
    msg = bad(mutate)
    assert msg.startswith(field + ":"), msg


def test_rate_monotonic_default_priorities():
    d = {"cores": 1, "alpha": 0, "beta": 0,
         "tasks": [{"e": 1, "p": 30, "core": 0}, {"e": 1, "p": 10, "core": 0},
                   {"e": 1, "p": 20, "core": 0}]}
    prios = [t.prio for t in parse_taskset(d).tasks]
    assert prios[1] > prios[2] > prios[0]


def test_yaml_and_json_round_trip(tmp_path):
    ts = parse_taskset(GOOD)
    for name in ("ts.yaml", "ts.json"):
        dump_taskset(ts, tmp_path / name)
        assert load_taskset(tmp_path / name) == ts


def test_unparseable_files(tmp_path):
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(TaskSetError, match="invalid JSON"):
        load_taskset(tmp_path / "x.json")
    (tmp_path / "x.yaml").write_text("a: [1,\n")
    with pytest.raises(TaskSetError, match="invalid YAML"):
        load_taskset(tmp_path / "x.yaml")
    (tmp_path / "y.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(TaskSetError, match="^<top>"):
        load_taskset(tmp_path / "y.yaml")
