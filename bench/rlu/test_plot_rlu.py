"""pytest for bench/rlu/plot_rlu.py."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_rlu as plot  # noqa: E402

CSV = """structure,mechanism,threads,update_pct,ops_per_us,aborts_per_kop
list,rlu,1,2,1.5,0.000
list,rlu,2,2,2.5,1.250
list,rcu,1,2,1.0,0.000
list,rcu,2,2,3.0,0.000
hash,rlu,1,50,9.0,0.000
hash,rcu,1,50,4.0,0.000
"""


def write(tmp_path, text):
    p = tmp_path / "rlu.csv"
    p.write_text(text)
    return str(p)


def test_load_types_and_best(tmp_path):
    rows = plot.load(write(tmp_path, CSV))
    assert len(rows) == 6
    r = [x for x in rows if x["mechanism"] == "rlu" and x["threads"] == 2][0]
    assert r["ops_per_us"] == 2.5 and r["aborts_per_kop"] == 1.25
    best = plot.best_by_config(rows)
    assert best[("list", 1, 2)] == "rlu"
    assert best[("list", 2, 2)] == "rcu"
    assert best[("hash", 1, 50)] == "rlu"


def test_bad_header(tmp_path):
    with pytest.raises(plot.tp.InputError):
        plot.load(write(tmp_path, "a,b\n1,2\n"))


def test_bad_row(tmp_path):
    with pytest.raises(plot.tp.InputError):
        plot.load(write(tmp_path, CSV + "list,rlu,x,2,1,0\n"))


def test_main_writes_table_and_plots(tmp_path):
    out = tmp_path / "out"
    rc = plot.main([write(tmp_path, CSV), str(out), "--command", "tsync-bench rlu"])
    table = (out / "table.md").read_text()
    assert "## list" in table and "## hash" in table
    assert "| 2% | 2 | 2.500 (1.2) | 3.000 | rcu |" in table
    if rc == 0:
        assert (out / "rlu_list.png").stat().st_size > 0
        assert (out / "rlu_hash.png").stat().st_size > 0
    else:
        assert rc == plot.EXIT_NO_MATPLOTLIB
