"""pytest for bench/rt/plot_rt_cache.py (synthetic tsync-bench rt-cache CSV)."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot_rt_cache", os.path.join(HERE, "plot_rt_cache.py"))
prc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prc)

HEADER = ("mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,"
          "get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses,jobs,"
          "misses_unexplained,max_lateness_ns,bound_measured_objects,shared_cpu_ms")


def rows(peak4=7, misses=0, unexplained4=0, measured4=40, shared4=0):
    out = [HEADER]
    # strict: at 4 cores rt-parsec gets 400 kops, mcs 250 -> 1.6x; bounds only for SMR.
    # 100,000 jobs per row: the goals are 100 unexplained misses and 2,000 misses.
    for d, c, gp, sp, gk, sk, peak, bound, dm, unx, late, bm, sh in (
            ("rt-parsec", 1, 4.5, 17.8, 220, 55, 2, 4, 0, 0, 0, 6, 0),
            ("rt-parsec", 2, 4.5, 17.8, 440, 110, 3, 8, 0, 0, 0, 30, 0),
            ("rt-parsec", 4, 10.0, 30.0, 400, 133, peak4, 12, misses, unexplained4, 25000,
             measured4, shared4),
            ("mcs", 2, 5.4, 17.8, 370, 110, "", "", 0, 0, 0, "", 0),
            ("mcs", 4, 16.0, 30.0, 250, 133, "", "", 1, 0, 7000, "", 0),
            ("pf-rw", 4, 20.0, 30.0, 200, 133, "", "", 0, 0, 0, "", 0)):
        out.append(f"strict,{d},{c},{gp},{sp},,{gk},{sk},2000,5000,{peak},{bound},{dm},"
                   f"100000,{unx},{late},{bm},{sh}")
    # overload, 4 cores: get p99 grows 1000 -> 1200 ns (1.2x) for rt-parsec,
    # 1000 -> 11000 (11x) for mcs, 1000 -> 9000 (9x) for pf-rw; 2 cores: other values
    for d, lo, hi in (("rt-parsec", 1000, 1200), ("mcs", 1000, 11000), ("pf-rw", 1000, 9000)):
        for off, p99 in ((100, lo), (500, (lo + hi) / 2), (1000, hi)):
            out.append(f"overload,{d},4,0,30,{off},{off * 0.9},100,{p99},4000,2,12,0,"
                       f"5000,0,0,20,0")
        out.append(f"overload,{d},2,0,30,100,90,100,500,4000,2,12,0,5000,0,0,20,0")
        out.append(f"overload,{d},2,0,30,1000,900,100,50000,4000,2,12,0,5000,0,0,20,0")
    # relaxed (closed loop): one row per design and core count, no offered load
    for d, c, gk, p99 in (("rt-parsec", 2, 300, 900), ("rt-parsec", 4, 640, 1100),
                          ("mcs", 4, 500, 1500)):
        out.append(f"relaxed,{d},{c},0,30,,{gk},100,{p99},4000,2,12,0,5000,0,0,20,0")
    return out


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")


def test_outputs_and_targets(tmp_path):
    write(tmp_path / "c.csv", rows())
    rc = prc.main([str(tmp_path / "c.csv"), "--out", str(tmp_path / "o")])
    assert rc in (0, prc.NO_MATPLOTLIB)
    md = (tmp_path / "o" / "table.md").read_text()
    if rc == 0:
        for f in ("fig14.png", "fig15.png"):
            assert (tmp_path / "o" / f).stat().st_size > 1000
    # strict table: ns -> us, empty bound shown as '-'
    assert ("| rt-parsec | 4 | 10.00 | 30.00 | 400.0 | 133.0 | 2.00 | 5.00 | 7 | 12 | 40 | "
            "100000 | 0 | 0 | 25.0 | 0.0 |") in md
    assert ("| mcs | 4 | 16.00 | 30.00 | 250.0 | 133.0 | 2.00 | 5.00 | - | - | - | 100000 | "
            "1 | 0 | 7.0 | 0.0 |") in md
    t, lines = prc.targets(prc.load(str(tmp_path / "c.csv")))
    assert t["peak_within_bound"] is True
    assert t["deadline_misses"] == 1
    assert t["get_ratio"] == pytest.approx(1.6) and t["get_ratio_cores"] == 4
    assert t["p99_growth"]["rt-parsec"] == pytest.approx(1.2)
    assert t["p99_growth"]["mcs"] == pytest.approx(11)
    assert t["p99_growth"]["pf-rw"] == pytest.approx(9)
    assert t["relaxed_smr_ok"] is True and t["relaxed_locks_larger"] is True
    assert t["unexplained_ok"] is True and t["misses_ok"] is True
    assert t["misses_worst"] == pytest.approx(1e-5) and t["max_lateness_ns"] == 25000
    assert t["peak_within_measured_bound"] is True and t["peak_within_bound_1core"] is True
    assert t["observed_over_measured"] == {1: pytest.approx(2 / 6), 2: pytest.approx(0.1),
                                           4: pytest.approx(7 / 40)}
    assert t["shared_rows"] == 0
    text = "\n".join(lines)
    # relaxed (closed loop) at each design's largest core count; the overload sweep apart
    assert "- rt-parsec: **640.0 kops**, get p99 1.10 us (4 cores;" in text
    assert "- mcs: **500.0 kops**, get p99 1.50 us (4 cores;" in text
    assert "**Overload sweep**" in text
    assert "| rt-parsec | 4 | 640.0 | 100.0 | 1.10 | 4.00 | 5000 | 0 | 0.0 |" in md
    assert "**yes**" in text and "**1.60x**" in text and "many-core figure: met here" in text


def test_miss_and_measured_bound_targets(tmp_path):
    # 150 unexplained of 100,000 jobs (> 0.1 %), 2,500 misses (> 2 %), a peak above the
    # measured bound, a row whose CPU another task took
    write(tmp_path / "c.csv", rows(peak4=50, misses=2500, unexplained4=150, measured4=40,
                                   shared4=3.5))
    t, lines = prc.targets(prc.load(str(tmp_path / "c.csv")))
    assert t["unexplained_ok"] is False and t["unexplained_worst"] == pytest.approx(0.0015)
    assert t["misses_ok"] is False and t["misses_worst"] == pytest.approx(0.025)
    assert t["peak_within_measured_bound"] is False
    assert t["peak_within_bound_1core"] is True     # the 4-core row is not checked there
    assert t["shared_rows"] == 1
    text = "\n".join(lines)
    assert "150 of 100000 = 0.150 %" in text and "rt-parsec at 4 cores, 3.5 ms" in text


def test_violations(tmp_path):
    write(tmp_path / "c.csv", rows(peak4=13, misses=5))
    t, lines = prc.targets(prc.load(str(tmp_path / "c.csv")))
    assert t["peak_within_bound"] is False and t["deadline_misses"] == 6
    assert "**no**" in "\n".join(lines)


def test_doc_block(tmp_path):
    write(tmp_path / "c.csv", rows())
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{prc.DOC_BEGIN}\nstale\n{prc.DOC_END}\ntail\n")
    assert prc.main([str(tmp_path / "c.csv"), "--out", str(tmp_path / "o"),
                     "--doc", str(doc)]) in (0, prc.NO_MATPLOTLIB)
    text = doc.read_text()
    assert "stale" not in text and "1.60x" in text
    assert text.startswith("intro\n" + prc.DOC_BEGIN) and text.endswith(prc.DOC_END + "\ntail\n")
    # no markers: exit 1
    doc.write_text("nothing here\n")
    assert prc.main([str(tmp_path / "c.csv"), "--out", str(tmp_path / "o"),
                     "--doc", str(doc)]) == 1


def test_bad_csv(tmp_path):
    (tmp_path / "c.csv").write_text("a,b\n1,2\n")
    assert prc.main([str(tmp_path / "c.csv"), "--out", str(tmp_path / "o")]) == 1
    write(tmp_path / "d.csv", [HEADER, "fast,mcs,4,1,1,,1,1,1,1,,,0,1,0,0,,0"])
    # the CSV of before the new columns is refused, naming what it expects
    write(tmp_path / "e.csv", [HEADER.rsplit(",jobs,", 1)[0], "strict,mcs,4,1,1,,1,1,1,1,,,0"])
    assert prc.main([str(tmp_path / "e.csv"), "--out", str(tmp_path / "o")]) == 1
    assert prc.main([str(tmp_path / "d.csv"), "--out", str(tmp_path / "o")]) == 1
    assert prc.main([str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o")]) == 1
