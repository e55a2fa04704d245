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
          "misses_unexplained,max_lateness_ns,bound_measured_objects,shared_cpu_ms,"
          "zero_slack_kops,repeat")
# the columns before zero_slack_kops and repeat (the CSV of before issue 29's part 2)
OLD_HEADER = HEADER.rsplit(",zero_slack_kops,", 1)[0]


def rows(peak4=7, misses=0, unexplained4=0, measured4=40, shared4=0, zero_slack=400,
         repeat=1):
    out = [HEADER]
    # strict: at 4 cores rt-parsec gets 400 kops, mcs 250 -> 1.6x; bounds only for SMR.
    # 100,000 jobs per row: the goals are 100 unexplained misses and 2,000 misses.
    # Admitted request rates (cores x 1000 x (1/get period + 1/set period), kops) against
    # a zero-slack rate of 400 kops: rt-parsec 278.4 (1 core, 0.70), 556.7 (2, 1.39),
    # 533.3 (4, 1.33); mcs 482.7 (2, 1.21), 383.3 (4, 0.96); pf-rw 333.3 (4, 0.83).
    for d, c, gp, sp, gk, sk, peak, bound, dm, unx, late, bm, sh in (
            ("rt-parsec", 1, 4.5, 17.8, 220, 55, 2, 4, 0, 0, 0, 6, 0),
            ("rt-parsec", 2, 4.5, 17.8, 440, 110, 3, 8, 0, 0, 0, 30, 0),
            ("rt-parsec", 4, 10.0, 30.0, 400, 133, peak4, 12, misses, unexplained4, 25000,
             measured4, shared4),
            ("mcs", 2, 5.4, 17.8, 370, 110, "", "", 0, 0, 0, "", 0),
            ("mcs", 4, 16.0, 30.0, 250, 133, "", "", 1, 0, 7000, "", 0),
            ("pf-rw", 4, 20.0, 30.0, 200, 133, "", "", 0, 0, 0, "", 0)):
        out.append(f"strict,{d},{c},{gp},{sp},,{gk},{sk},2000,5000,{peak},{bound},{dm},"
                   f"100000,{unx},{late},{bm},{sh},{zero_slack},{repeat}")
    # overload, 4 cores: get p99 grows 1000 -> 1200 ns (1.2x) for rt-parsec,
    # 1000 -> 11000 (11x) for mcs, 1000 -> 9000 (9x) for pf-rw; 2 cores: other values
    for d, lo, hi in (("rt-parsec", 1000, 1200), ("mcs", 1000, 11000), ("pf-rw", 1000, 9000)):
        for off, p99 in ((100, lo), (500, (lo + hi) / 2), (1000, hi)):
            out.append(f"overload,{d},4,0,30,{off},{off * 0.9},100,{p99},4000,2,12,0,"
                       f"5000,0,0,20,0,,{repeat}")
        out.append(f"overload,{d},2,0,30,100,90,100,500,4000,2,12,0,5000,0,0,20,0,,{repeat}")
        out.append(f"overload,{d},2,0,30,1000,900,100,50000,4000,2,12,0,5000,0,0,20,0,,"
                   f"{repeat}")
    # relaxed (closed loop): one row per design and core count, no offered load
    for d, c, gk, p99 in (("rt-parsec", 2, 300, 900), ("rt-parsec", 4, 640, 1100),
                          ("mcs", 4, 500, 1500)):
        out.append(f"relaxed,{d},{c},0,30,,{gk},100,{p99},4000,2,12,0,5000,0,0,20,0,,{repeat}")
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
    assert ("| rt-parsec | 4 | 1 | 10.00 | 30.00 | 533.3 | 400.0 | 1.33 | 400.0 | 133.0 | "
            "2.00 | 5.00 | 7 | 12 | 40 | 100000 | 0 | 0 | 25.0 | 0.0 |") in md
    assert ("| mcs | 4 | 1 | 16.00 | 30.00 | 383.3 | 400.0 | 0.96 | 250.0 | 133.0 | 2.00 | "
            "5.00 | - | - | - | 100000 | 1 | 0 | 7.0 | 0.0 |") in md
    assert "Each row: one run per design and core count" in md
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
    assert t["zero_slack_ok"] is True
    assert t["admitted_over_zero_slack"][("rt-parsec", 1)] == pytest.approx(278.4 / 400,
                                                                            rel=1e-3)
    assert t["admitted_over_zero_slack"][("pf-rw", 4)] == pytest.approx(1000 / 3 / 400)
    text = "\n".join(lines)
    assert ("what the zero-slack rule (mean costs, slack 1, no cap) admits on the same "
            "calibration, every design and core count: **yes** (rt-parsec at 1 cores: "
            "278.4 / 400.0 kops = 0.70; rt-parsec at 2 cores: 556.8 / 400.0 kops = 1.39; "
            "mcs at 2 cores: 482.7 / 400.0 kops = 1.21;") in text
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


def test_zero_slack_target_fails(tmp_path):
    # a zero-slack rate of 600 kops: rt-parsec at 1 core admits 278.4 = 0.46x (< 0.5),
    # pf-rw at 4 cores 333.3 = 0.56x; and an admission that found nothing schedulable at
    # 2 cores (empty periods) admitted 0 of the zero-slack rule's 300 kops
    lines = rows(zero_slack=600) + ["strict,pf-rw,2" + "," * 16 + "300,1"]
    write(tmp_path / "c.csv", lines)
    t, text = prc.targets(prc.load(str(tmp_path / "c.csv")))
    assert t["zero_slack_ok"] is False
    assert t["admitted_over_zero_slack"][("rt-parsec", 1)] == pytest.approx(278.4 / 600,
                                                                            rel=1e-3)
    assert t["admitted_over_zero_slack"][("pf-rw", 2)] == 0
    text = "\n".join(text)
    assert "every design and core count: **no** (rt-parsec at 1 cores: 278.4 / 600.0" in text
    assert "pf-rw at 2 cores: 0.0 / 300.0 kops = 0.00" in text
    assert "| pf-rw | 2 | 1 (1 admitted nothing) | - | - | 0.0 | 300.0 | 0.00 |" in \
        prc.table(prc.load(str(tmp_path / "c.csv")))
    # nothing schedulable for rt-parsec and mcs at 8 cores: their get ratio is n/a there
    write(tmp_path / "e.csv", lines + [f"strict,{d},8" + "," * 16 + "300,1"
                                       for d in ("rt-parsec", "mcs")])
    t, text = prc.targets(prc.load(str(tmp_path / "e.csv")))
    assert t["get_ratio"] is None and t["get_ratio_cores"] == 8
    assert "get rate at 8 cores: **n/a** (- / - kops" in "\n".join(text)
    # periods given (no admission, no zero-slack rate): n/a, not a failure
    write(tmp_path / "d.csv", [HEADER] + [r.rsplit(",", 2)[0] + ",,1" for r in rows()[1:]])
    t, text = prc.targets(prc.load(str(tmp_path / "d.csv")))
    assert t["zero_slack_ok"] is None and "n/a (no row has zero_slack_kops" in "\n".join(text)


def test_repeats_take_the_median(tmp_path):
    # three repeats of every configuration; rt-parsec at 4 cores: peak pending 7, 9, 20
    # -> 9; get kops 400, 500, 600 -> 500; the zero-slack rate 400, 800, 1000 -> 800, and
    # the median of the per-repeat ratios (533.3 / 400, / 800, / 1000) 533.3 / 800
    lines = rows()
    lines += rows(peak4=9, zero_slack=800, repeat=2)[1:]
    lines += rows(peak4=20, zero_slack=1000, repeat=3)[1:]
    kops = {"1": "400", "2": "500", "3": "600"}
    lines = [x.replace("strict,rt-parsec,4,10.0,30.0,,400,",
                       f"strict,rt-parsec,4,10.0,30.0,,{kops[x[-1]]},")
             if x.startswith("strict,rt-parsec,4,") else x for x in lines]
    # a later row of the same configuration and repeat replaces the earlier one: repeat
    # 1 of rt-parsec at 1 core again, with peak pending 3 instead of 2
    assert lines[1].startswith("strict,rt-parsec,1,") and ",220,55,2000,5000,2," in lines[1]
    lines.append(lines[1].replace(",220,55,2000,5000,2,", ",220,55,2000,5000,3,"))
    write(tmp_path / "c.csv", lines)
    assert len(prc.load_runs(str(tmp_path / "c.csv"))) == 3 * (len(rows()) - 1)
    rr = prc.load(str(tmp_path / "c.csv"))
    assert len(rr) == len(rows()) - 1
    r = next(x for x in rr if x["mode"] == "strict" and x["design"] == "rt-parsec"
             and x["cores"] == 4)
    assert r["runs"] == 3 and r["peak_pending"] == 9 and isinstance(r["peak_pending"], int)
    assert r["get_kops"] == 500 and r["zero_slack_kops"] == 800
    assert r["admitted_over_zero_slack"] == pytest.approx(1600 / 3 / 800)
    one = next(x for x in rr if x["mode"] == "strict" and x["cores"] == 1)
    assert one["peak_pending"] == 2      # repeat 1's replaced row: 3; repeats 2 and 3: 2
    t, text = prc.targets(rr)
    assert "every figure the median over 3 repeats per design and core count" in text[0]
    # two repeats: the median of 7 and 9 is 8, still an integer
    write(tmp_path / "d.csv", rows() + rows(peak4=9, repeat=2)[1:])
    r = next(x for x in prc.load(str(tmp_path / "d.csv")) if x["mode"] == "strict"
             and x["design"] == "rt-parsec" and x["cores"] == 4)
    assert r["peak_pending"] == 8 and r["runs"] == 2


def test_bad_csv(tmp_path):
    (tmp_path / "c.csv").write_text("a,b\n1,2\n")
    assert prc.main([str(tmp_path / "c.csv"), "--out", str(tmp_path / "o")]) == 1
    write(tmp_path / "d.csv", [HEADER, "fast,mcs,4,1,1,,1,1,1,1,,,0,1,0,0,,0,,1"])
    # the CSV of before the zero-slack rate and the repeats is refused too
    write(tmp_path / "f.csv", [OLD_HEADER, "strict,mcs,4,1,1,,1,1,1,1,,,0,1,0,0,,0"])
    assert prc.main([str(tmp_path / "f.csv"), "--out", str(tmp_path / "o")]) == 1
    # the CSV of before the new columns is refused, naming what it expects
    write(tmp_path / "e.csv", [HEADER.rsplit(",jobs,", 1)[0], "strict,mcs,4,1,1,,1,1,1,1,,,0"])
    assert prc.main([str(tmp_path / "e.csv"), "--out", str(tmp_path / "o")]) == 1
    assert prc.main([str(tmp_path / "d.csv"), "--out", str(tmp_path / "o")]) == 1
    assert prc.main([str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o")]) == 1
