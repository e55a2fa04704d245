"""pytest for bench/oplog/plot_oplog.py: parsing, targets, crossover, plots."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_oplog as plot  # noqa: E402

HEADER = "benchmark,variant,threads,param,ops_per_ms,p99_ns\n"


def write(tmp_path, text, name="in.csv"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def counter_csv():
    rows = []
    # atomic flat at 100; oplog grows with rarer reads: loses at 1 and 10, wins from 100
    for n, o in [(1, 10), (10, 60), (100, 150), (1000, 320), (10000, 400)]:
        rows.append(f"counter,atomic,2,{n},100.0,50")
        rows.append(f"counter,oplog-counter,2,{n},{o}.0,20")
        rows.append(f"counter,percpu,2,{n},300.0,20")
    return HEADER + "\n".join(rows) + "\n"


def test_counter_targets_and_crossover(tmp_path):
    path = write(tmp_path, counter_csv())
    out = tmp_path / "out"
    rc = plot.main([path, str(out), "--command", "tsync-bench oplog counter"])
    assert rc in (0, plot.tp.NO_MATPLOTLIB)
    s = (out / "summary_counter.md").read_text()
    assert "tsync-bench oplog counter" in s
    assert "at least 3.20x (target >= 3x: met)" in s
    assert "oplog-counter vs atomic, 2 threads: N >= 100" in s
    # percpu at 300: oplog only wins from 1000
    assert "oplog-counter vs percpu, 2 threads: N >= 1000" in s
    if rc == 0:
        assert (out / "oplog_counter.png").stat().st_size > 0


def test_crossover_always_never():
    rows = [{"variant": "oplog-x", "threads": 1, "param": p, "ops_per_ms": 5.0, "p99_ns": 1}
            for p in (1, 10)]
    rows += [{"variant": "peer", "threads": 1, "param": p, "ops_per_ms": 1.0, "p99_ns": 1}
             for p in (1, 10)]
    assert plot.crossover(rows, "oplog-x", "peer", 1)[0] == "always"
    for r in rows:
        if r["variant"] == "peer":
            r["ops_per_ms"] = 9.0
    assert plot.crossover(rows, "oplog-x", "peer", 1)[0] == "never"
    assert plot.crossover(rows, "oplog-x", "peer", 7) is None


def test_list_zero_param_is_rarest(tmp_path):
    text = HEADER + "\n".join([
        "list,lockfree,2,0,100.0,10", "list,oplog-local-absorb,2,0,1200.0,10",
        "list,lockfree,2,4,100.0,10", "list,oplog-local-absorb,2,4,50.0,10",
        "list,lockfree,1,0,80.0,10", "list,oplog-local-absorb,1,0,90.0,10",
    ]) + "\n"
    out = tmp_path / "o"
    rc = plot.main([write(tmp_path, text), str(out)])
    assert rc in (0, plot.tp.NO_MATPLOTLIB)
    s = (out / "summary_list.md").read_text()
    assert "reads never: 12.00x (target >= 10x: met)" in s
    assert "reads 4: 0.50x (target >= 10x: NOT met)" in s
    assert "oplog-local-absorb vs lockfree, 2 threads: only without reads" in s


@pytest.mark.parametrize("bad", [
    "a,b,c\n",
    HEADER + "counter,atomic,x,1,1.0,1\n",
    HEADER + "counter,atomic,1,1,1.0\n",
    HEADER + "nosuch,atomic,1,1,1.0,1\n",
    HEADER + "counter,atomic,1,1,1.0,1\nrmap,mutex,1,1,1.0,1\n",
    HEADER,
])
def test_bad_input(tmp_path, bad):
    assert plot.main([write(tmp_path, bad), str(tmp_path / "o")]) == 1
