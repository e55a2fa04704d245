"""CLI smoke tests: analyze, generate, experiment, validate (against a fake bench)."""
import csv
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TASKSET = {
    "cores": 2, "alpha": 0.5, "beta": 0.1, "obj_size": 128,
    "tasks": [
        {"name": "r0", "e": 1000, "p": 10000, "core": 0, "prio": 2, "gamma_r": 50},
        {"name": "w0", "e": 2000, "p": 20000, "core": 0, "prio": 1, "gamma_w": 40, "a": 1},
        {"name": "w1", "e": 1500, "p": 15000, "core": 1, "prio": 2, "gamma_w": 60, "a": 2},
        {"name": "c1", "e": 3000, "p": 40000, "core": 1, "prio": 1},
    ],
}


def run(*args, env=None, check=True):
    e = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "tsync_rta", *map(str, args)],
                       capture_output=True, text=True, env=e, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"rc={p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def taskset(tmp_path):
    path = tmp_path / "ts.json"
    path.write_text(json.dumps(TASKSET))
    return path


def test_analyze_json(taskset):
    out = json.loads(run("analyze", taskset, "--blocking", "inflation").stdout)
    assert out["schedulable"] is True
    assert out["q_us"] == 10000  # smallest candidate (min period) is schedulable
    assert out["memory_bound_bytes"] == out["memory_bound_objects"] * 128
    names = [t["name"] for t in out["tasks"]]
    assert names == ["r0", "w0", "w1", "c1"]
    r0 = out["tasks"][0]
    assert r0["Delta_r_us"] >= 50 and r0["r_us"] >= 1000
    assert {s["host"] for s in out["reclaimers"]} == {"w0", "w1"}
    assert out["delta_us"] > 0


def test_analyze_policies_and_fixed_q(taskset):
    u = json.loads(run("analyze", taskset, "--policy", "urcu", "--blocking", "inflation").stdout)
    assert len(u["reclaimers"]) == 1
    t = json.loads(run("analyze", taskset, "--policy", "temporal", "--q", "30000",
                       "--blocking", "inflation").stdout)
    assert t["q_us"] == 30000 and t["grace_us"] == t["Delta_star_us"]


def test_analyze_rejects_bad_input(tmp_path):
    bad = dict(TASKSET, tasks=[dict(TASKSET["tasks"][0], p=-1)])
    path = tmp_path / "bad.yaml"
    import yaml
    path.write_text(yaml.safe_dump(bad))
    p = run("analyze", path, check=False)
    assert p.returncode == 2 and "tasks[0].p" in p.stderr


def test_generate_then_analyze(tmp_path):
    run("generate", "--cores", "2", "--seed", "3", "--out", tmp_path / "g.yaml")
    out = json.loads(run("analyze", tmp_path / "g.yaml", "--blocking", "inflation").stdout)
    assert len(out["tasks"]) == 20
    run("generate", "--cores", "2", "--count", "3", "--format", "json", "--out", tmp_path / "many")
    assert len(list((tmp_path / "many").glob("*.json"))) == 3


def test_experiment_writes_csv_and_png(tmp_path):
    p = run("experiment", "--vary", "util", "--values", "0.6,0.9", "--sets", "3",
            "--cores", "2", "--blocking", "inflation", "--no-progress", "--out", tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "sched-util.csv")))
    assert len(rows) == 2 * 6
    assert {r["policy"] for r in rows} == {"rt", "temporal", "urcu", "rt-single", "mutex",
                                           "pf-rw"}
    for r in rows:
        assert 0 <= float(r["fraction"]) <= 1 and int(r["sets"]) == 3
        if r["policy"] in ("mutex", "pf-rw"):
            assert r["mem_objects_mean"] == ""      # a lock defers nothing: no G*
    assert (tmp_path / "sched-util.png").stat().st_size > 1000


def test_experiment_same_result_whatever_jobs(tmp_path):
    out = {}
    for jobs in (1, 2):
        run("experiment", "--vary", "cores-read-heavy", "--values", "2,3", "--sets", "3",
            "--blocking", "inflation", "--no-progress", "--jobs", jobs,
            "--out", tmp_path / f"j{jobs}")
        out[jobs] = (tmp_path / f"j{jobs}" / "sched-cores-read-heavy.csv").read_text()
    assert out[1] == out[2]


def fake_bench(tmp_path):
    sh = tmp_path / "tsync-bench"
    sh.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "fake_bench.py"}" "$@"\n')
    sh.chmod(sh.stat().st_mode | stat.S_IEXEC)
    return sh


@pytest.mark.parametrize("policy", ["rt", "temporal"])
def test_validate_with_fake_bench(tmp_path, taskset, policy):
    bench = fake_bench(tmp_path)
    args_out = tmp_path / "argv.json"
    p = run("validate", taskset, "--bench", bench, "--policy", policy, "--blocking", "inflation",
            "--seconds", "1", "--out", tmp_path / "report.json",
            env={"FAKE_PEAK": "2", "FAKE_ARGS_OUT": str(args_out)})
    assert "measured peak_pending: 2 objects" in p.stdout and "OK:" in p.stdout
    argv = json.loads(args_out.read_text())
    assert argv[:3] == ["rt", "--policy", policy]
    assert argv[argv.index("--q-us") + 1] == "10000"
    assert "period_us=20000,wcet_us=2000,allocs=1,reads=0,core=0,prio=1" in argv
    assert "period_us=10000,wcet_us=1000,allocs=0,reads=1,core=0,prio=2" in argv
    if policy == "temporal":
        assert int(argv[argv.index("--grace-us") + 1]) >= 50
    rep = json.loads((tmp_path / "report.json").read_text())
    # the measured overheads were plugged in: α = 1.5 us, Γʷ = 30 us
    assert rep["ok"] is True and rep["G_star_objects"] >= 2
    assert rep["with_measured"]["schedulable"] is True


def test_validate_detects_violation(tmp_path, taskset):
    bench = fake_bench(tmp_path)
    p = run("validate", taskset, "--bench", bench, "--blocking", "inflation",
            env={"FAKE_PEAK": "100000"}, check=False)
    assert p.returncode == 1
    assert "FAIL: peak_pending 100000 >" in p.stdout


def test_validate_reports_a_broken_bench(tmp_path, taskset):
    p = run("validate", taskset, "--bench", tmp_path / "missing-bench", check=False)
    assert p.returncode == 2 and "could not run" in p.stderr
