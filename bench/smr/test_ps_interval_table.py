"""pytest for bench/smr/ps_interval_table.py: medians per (threads, updates, interval)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ps_interval_table  # noqa: E402

HEADER = ("interval_us,repeat,mechanism,threads,update_pct,read_mops,update_mops,"
          "read_p50_ns,read_p99_ns,update_p50_ns,update_p99_ns,peak_pending")


def write(tmp_path, rows):
    p = tmp_path / "sweep.csv"
    p.write_text("\n".join([HEADER] + rows) + "\n")
    return str(p)


def test_medians_and_order(tmp_path, capsys):
    path = write(tmp_path, [
        "50,1,ps,2,10,10.0,1.0,20,40,100,900,300",
        "10,1,ps,2,10,8.0,1.0,20,40,100,700,100",
        "50,2,ps,2,10,12.0,1.0,20,40,100,1100,500",
        "50,3,ps,2,10,40.0,2.0,20,40,100,5000,400",
        "50,1,ps,1,0,30.0,0.0,20,40,0,0,0",
    ])
    ps_interval_table.main(path)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    rows = lines[2:]
    # Sorted by threads, then updates, then interval.
    assert rows[0] == "| 1 | 0 | 50 | 30.0 | - | 0 | 1 |"
    assert rows[1] == "| 2 | 10 | 10 | 9.0 | 700 | 100 | 1 |"
    # Medians of three repeats, each column on its own: 13.0 Mops, p99 1100, pending 400.
    assert rows[2] == "| 2 | 10 | 50 | 13.0 | 1100 | 400 | 3 |"
    assert len(rows) == 3


def test_empty_sweep_fails(tmp_path):
    path = write(tmp_path, [])
    with pytest.raises(SystemExit):
        ps_interval_table.main(path)
