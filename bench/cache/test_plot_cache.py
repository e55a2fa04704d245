"""pytest for bench/cache/plot_cache.py."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_cache as report_cache  # noqa: E402

CSV = """variant,threads,set_pct,mops,get_p99_ns,set_p99_ns
ps,1,10,10,100,300
ps,2,10,20,110,400
ps-nocrp,2,10,21,100,380
mcs-clock,2,10,10,900,1000
locked,2,10,5,2000,3000
"""


def write(tmp_path, text):
    p = tmp_path / "cache.csv"
    p.write_text(text)
    return str(p)


def test_targets_computed(tmp_path):
    rows = report_cache.load(write(tmp_path, CSV))
    t = {name: (v, met) for name, v, _, met in report_cache.targets(rows)}
    assert t["ps / locked throughput"] == (4.0, True)
    assert t["ps / mcs-clock throughput"] == (2.0, True)
    assert t["ps get p99 / locked get p99"] == (pytest.approx(0.055), True)
    v, met = t["ps / ps-nocrp throughput"]
    assert v == pytest.approx(20 / 21) and met


def test_target_missed(tmp_path):
    rows = report_cache.load(write(tmp_path, CSV.replace("locked,2,10,5,", "locked,2,10,15,")))
    t = {name: met for name, _, _, met in report_cache.targets(rows)}
    assert t["ps / locked throughput"] is False


def test_bad_header(tmp_path):
    with pytest.raises(ValueError):
        report_cache.load(write(tmp_path, "a,b\n1,2\n"))
    assert report_cache.main([write(tmp_path, "a,b\n"), str(tmp_path / "o")]) == 2


def test_table_and_plots(tmp_path):
    out = tmp_path / "out"
    rc = report_cache.main([write(tmp_path, CSV), str(out), "--command", "tsync-bench cache"])
    assert rc in (0, 3)
    md = (out / "table.md").read_text()
    assert "| locked | 2 | 10 | 5.000 | 2000 | 3000 |" in md
    assert "ps / locked throughput | 4.00 | >= 2.5 | yes" in md
    if rc == 0:
        assert (out / "cache_mops.png").stat().st_size > 0
        assert (out / "cache_get_p99.png").stat().st_size > 0
