"""pytest for bench/rt/plot_rt_cache.py (synthetic tsync-bench rt-cache CSV)."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot_rt_cache", os.path.join(HERE, "plot_rt_cache.py"))
prc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prc)

HEADER = ("mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,"
          "get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses")


def rows(peak4=7, misses=0):
    out = [HEADER]
    # strict: at 4 cores rt-parsec gets 400 kops, mcs 250 -> 1.6x; bounds only for SMR
    for d, c, gp, sp, gk, sk, peak, bound, dm in (
            ("rt-parsec", 2, 4.5, 17.8, 440, 110, 3, 8, 0),
            ("rt-parsec", 4, 10.0, 30.0, 400, 133, peak4, 12, misses),
            ("mcs", 2, 5.4, 17.8, 370, 110, "", "", 0),
            ("mcs", 4, 16.0, 30.0, 250, 133, "", "", 1),
            ("pf-rw", 4, 20.0, 30.0, 200, 133, "", "", 0)):
        out.append(f"strict,{d},{c},{gp},{sp},,{gk},{sk},2000,5000,{peak},{bound},{dm}")
    # relaxed, 4 cores: get p99 grows 1000 -> 1200 ns (1.2x) for rt-parsec,
    # 1000 -> 11000 (11x) for mcs, 1000 -> 9000 (9x) for pf-rw; 2 cores: other values
    for d, lo, hi in (("rt-parsec", 1000, 1200), ("mcs", 1000, 11000), ("pf-rw", 1000, 9000)):
        for off, p99 in ((100, lo), (500, (lo + hi) / 2), (1000, hi)):
            out.append(f"relaxed,{d},4,10,30,{off},{off * 0.9},100,{p99},4000,2,12,0")
        out.append(f"relaxed,{d},2,10,30,100,90,100,500,4000,2,12,0")
        out.append(f"relaxed,{d},2,10,30,1000,900,100,50000,4000,2,12,0")
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
    assert "| rt-parsec | 4 | 10.00 | 30.00 | 400.0 | 133.0 | 2.00 | 5.00 | 7 | 12 | 0 |" in md
    assert "| mcs | 4 | 16.00 | 30.00 | 250.0 | 133.0 | 2.00 | 5.00 | - | - | 1 |" in md
    t, lines = prc.targets(prc.load(str(tmp_path / "c.csv")))
    assert t["peak_within_bound"] is True
    assert t["deadline_misses"] == 1
    assert t["get_ratio"] == pytest.approx(1.6) and t["get_ratio_cores"] == 4
    assert t["p99_growth"]["rt-parsec"] == pytest.approx(1.2)
    assert t["p99_growth"]["mcs"] == pytest.approx(11)
    assert t["p99_growth"]["pf-rw"] == pytest.approx(9)
    assert t["relaxed_smr_ok"] is True and t["relaxed_locks_larger"] is True
    text = "\n".join(lines)
    assert "**yes**" in text and "**1.60x**" in text and "goal >= 1.3x: met" in text


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
    write(tmp_path / "d.csv", [HEADER, "fast,mcs,4,1,1,,1,1,1,1,,,0"])
    assert prc.main([str(tmp_path / "d.csv"), "--out", str(tmp_path / "o")]) == 1
    assert prc.main([str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o")]) == 1
