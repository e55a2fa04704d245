"""pytest for bench/prudence/plot_prudence.py (ctest bench_prudence_plot_pytest)."""
import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot_prudence",
                                              os.path.join(HERE, "plot_prudence.py"))
pp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pp)

HEADER = ("workload,allocator,threads,readers,size,mops,p50_ns,p99_ns,p999_ns,"
          "helper_cpu_pct,peak_rss_kib,slab_churn")


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def pairs_rows():
    rows = [HEADER]
    # three repeats each; medians: malloc 2, jemalloc 4, tcmalloc 5, ps-kmem 10 at 64 B
    for a, vals in (("malloc-call-rcu", (1, 2, 9)), ("jemalloc-call-rcu", (4, 4, 4)),
                    ("tcmalloc-call-rcu", (5, 3, 6)), ("ps-kmem", (10, 11, 1))):
        for v in vals:
            churn = "7" if a == "ps-kmem" else ""
            rows.append(f"pairs,{a},2,0,64,{v},50,100,200,12.5,4096,{churn}")
    return rows


def test_pairs_medians_and_ratios(tmp_path):
    write(tmp_path / "pairs.csv", pairs_rows())
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    med = pp.pairs_medians(pp.tp.read_dicts(tmp_path / "pairs.csv"))
    assert med[("malloc-call-rcu", 2, 0, 64)]["mops"] == 2
    assert med[("ps-kmem", 2, 0, 64)]["mops"] == 10
    assert med[("ps-kmem", 2, 0, 64)]["slab_churn"] == 7
    assert med[("malloc-call-rcu", 2, 0, 64)]["slab_churn"] is None  # empty, not 0
    md = (tmp_path / "summary_pairs.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| 64 |"))
    # ps-kmem 10 / malloc 2 = 5x; / best of production peers (tcmalloc 5) = 2x
    assert "| 5.00x | 2.00x |" in row
    # the targets lines: 5x >= 4x met; 2x >= 1.5x met
    assert ("- 2 thread(s): ps-kmem / malloc-call-rcu is 5.00x at least (64 B, 0 reader(s)); "
            "target 4x: met at every size and reader count.") in md


def test_pairs_call(tmp_path):
    # ps-call (glibc malloc + ps_call) and ps-call-free join the peers: their own ratios to
    # malloc-call-rcu (target 2x) and to the best glibc-malloc peer (ck-epoch 4 here)
    rows = pairs_rows()
    for a, vals in (("ck-epoch", (4, 3, 5)), ("ps-call", (6, 7, 5)),
                    ("ps-call-free", (6, 6, 6))):
        for v in vals:
            rows.append(f"pairs,{a},2,0,64,{v},50,100,200,0.0,4096,")
    for a, v in (("malloc-call-rcu", 2), ("ck-epoch", 4), ("ps-call", 3)):
        rows.append(f"pairs,{a},2,1,64,{v},50,100,200,0.0,4096,")
    write(tmp_path / "pairs.csv", rows)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    med = pp.pairs_medians(pp.tp.read_dicts(tmp_path / "pairs.csv"))
    assert med[("ps-call", 2, 0, 64)]["mops"] == 6
    assert med[("ps-call", 2, 0, 64)]["slab_churn"] is None
    assert pp.call_ratios(med, 2, 0, 64) == (3.0, 1.5)
    md = (tmp_path / "summary_pairs.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| size |"))
    # --list order: the peers, then ps-call, ps-call-free, then ps_mem / ps_kmem
    assert head.startswith("| size | malloc-call-rcu | jemalloc-call-rcu | tcmalloc-call-rcu | "
                           "ck-epoch | ps-call | ps-call-free | ps-kmem |")
    assert head.endswith("| vs malloc | vs best | ps-call vs malloc | ps-call vs best |")
    row = next(line for line in md.splitlines() if line.startswith("| 64 |"))
    assert row.endswith("| 5.00x | 2.00x | 3.00x | 1.50x |")
    assert ("- 2 thread(s): ps-call / malloc-call-rcu is 1.50x at least (64 B, 1 reader(s)); "
            "target 2x: short at 64 B/1r (1.50x).") in md
    assert ("- 2 thread(s): ps-call / the best glibc-malloc peer (malloc-call-rcu, "
            "malloc-call-rcu-all, ck-epoch) is 0.75x at least (64 B, 1 reader(s)), 1.50x at "
            "most (64 B, 0 reader(s)).") in md
    assert pp.line_style("ps-call") == {"linestyle": "--"}
    assert pp.line_style("ps-kmem") == {}


def test_pairs_call_absent(tmp_path):
    write(tmp_path / "pairs.csv", pairs_rows())
    pp.main([str(tmp_path)])
    md = (tmp_path / "summary_pairs.md").read_text()
    assert "ps-call" not in md  # no ps-call rows: no ps-call columns or lines


def test_pairs_onoff(tmp_path):
    rows = [HEADER]
    for a, vals, churn in (("ps-kmem", (10, 12, 11), 3), ("ps-kmem-off", (5, 6, 4), 9)):
        for v in vals:
            rows.append(f"pairs,{a},2,1,64,{v},50,100,200,0.0,4096,{churn}")
    write(tmp_path / "pairs.csv", rows)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    md = (tmp_path / "summary_pairs.md").read_text()
    assert "| 2 | 1 | 64 | 11.00 | 5.00 | 2.20x | 3 | 9 |" in md
    assert "vs malloc" not in md  # an on/off run has no peer tables


COUNTS = ",allocs,cache_hits,merge_hits,frees,frees_now"


def test_pairs_fig7_fig12(tmp_path):
    # the counts columns: Fig. 7 (object-cache hits without a refill) and Fig. 12 (the
    # deferred share of frees) per tsync allocator, the median of each run's rate
    rows = [HEADER + COUNTS]
    for a, counts in (("ps-mem", ((1000, 900, 50, 1000, 0), (1000, 800, 0, 1000, 0),
                                  (1000, 960, 0, 1000, 0))),
                      ("ps-kmem", ((2000, 1000, 600, 300, 100),) * 3)):
        for c in counts:
            rows.append(f"pairs,{a},2,1,64,10,50,100,200,0.0,4096,7," + ",".join(map(str, c)))
    for v in (1, 2, 3):  # a peer: no counts
        rows.append(f"pairs,malloc-call-rcu,2,1,64,{v},50,100,200,12.5,4096,,,,,,")
    write(tmp_path / "pairs.csv", rows)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    med = pp.pairs_medians(pp.tp.read_dicts(tmp_path / "pairs.csv"))
    # ps-mem's runs: 95 %, 80 %, 96 % -> 95; ps-kmem: 1600 / 2000 = 80 %, 300 / 400 = 75 %
    assert med[("ps-mem", 2, 1, 64)]["hit_pct"] == pytest.approx(95.0)
    assert med[("ps-kmem", 2, 1, 64)]["hit_pct"] == pytest.approx(80.0)
    assert med[("ps-kmem", 2, 1, 64)]["deferred_pct"] == pytest.approx(75.0)
    assert med[("malloc-call-rcu", 2, 1, 64)]["hit_pct"] is None
    md = (tmp_path / "summary_pairs.md").read_text()
    fig7 = md.index("## Object-cache hits (Prudence (ASPLOS 2016) Fig. 7)")
    fig12 = md.index("## Deferred frees (Prudence (ASPLOS 2016) Fig. 12)")
    assert fig7 < fig12
    assert "| threads | readers | size | ps-mem | ps-kmem |" in md[fig7:]  # no peer column
    assert "| 2 | 1 | 64 | 95.0 | 80.0 |" in md[fig7:fig12]
    assert "| 2 | 1 | 64 | 100.0 | 75.0 |" in md[fig12:]


def test_pairs_rates_absent(tmp_path):
    # a CSV from before the counts columns: no Fig. 7 / Fig. 12 tables
    write(tmp_path / "pairs.csv", pairs_rows())
    pp.main([str(tmp_path)])
    assert "Fig. 7" not in (tmp_path / "summary_pairs.md").read_text()


def test_pairs_onoff_rates(tmp_path):
    # Prudence on against off (the paper's Fig. 7 compares Prudence with SLUB)
    rows = [HEADER + COUNTS]
    for a, hits in (("ps-kmem", 900), ("ps-kmem-off", 600)):
        for _ in range(3):
            rows.append(f"pairs,{a},1,1,256,10,50,100,200,0.0,4096,3,1000,{hits},0,1000,0")
    write(tmp_path / "pairs.csv", rows)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    md = (tmp_path / "summary_pairs.md").read_text()
    assert "| 1 | 1 | 256 | 90.0 | 60.0 |" in md
    assert "| 1 | 1 | 256 | 10.00 | 10.00 | 1.00x | 3 | 3 |" in md


def test_pairs_target_short():
    med = {("ps-kmem", 1, r, s): {"mops": m} for r, s, m in ((0, 16, 6.0), (1, 16, 9.0))}
    med.update({("malloc-call-rcu", 1, r, 16): {"mops": 2.0} for r in (0, 1)})
    med.update({("jemalloc-call-rcu", 1, r, 16): {"mops": 5.0} for r in (0, 1)})
    lines = pp.targets_lines(med, [(1, 0), (1, 1)], [16])
    assert lines[0] == ("- 1 thread(s): ps-kmem / malloc-call-rcu is 3.00x at least (16 B, "
                        "0 reader(s)); target 4x: short at 16 B/0r (3.00x).")
    assert lines[1].endswith("1.20x at least (16 B, 0 reader(s)); target 1.5x: short at "
                             "16 B/0r (1.20x).")


def test_pairs_missing_peer_is_na(tmp_path):
    rows = [r for r in pairs_rows() if "malloc-call-rcu," not in r or "jemalloc" in r
            or "tcmalloc" in r]
    write(tmp_path / "pairs.csv", rows)
    pp.main([str(tmp_path)])
    md = (tmp_path / "summary_pairs.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| 64 |"))
    assert "| n/a | 2.00x |" in row


def test_slope():
    assert pp.slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert pp.slope([(1, 1)]) is None
    assert pp.slope([(1, 1), (1, 2)]) is None


def endurance_files(tmp_path, killed):
    write(tmp_path / "endurance.csv", [
        HEADER,
        "endurance,ps-kmem,1,1,512,2.5,100,200,300,0.0,3072,4",
        "endurance,malloc-call-rcu,1,1,512,,,,,,9000," if killed else
        "endurance,malloc-call-rcu,1,1,512,1.0,100,200,300,50.0,9000,",
    ])
    write(tmp_path / "endurance_runs.csv", [
        "allocator,threads,readers,size,repeat,live_kib,limit_mib,outcome,wall_s,"
        "cache_churn,cache_misses,peak_slabs,ft",
        "ps-kmem,1,1,512,0,2048,8,ok,4.1,12,40,33,1.25",
        f"malloc-call-rcu,1,1,512,0,2048,8,{'killed-oom' if killed else 'ok'},2.0,,,,",
    ])
    series = ["allocator,threads,readers,size,repeat,t_s,rss_kib,pending"]
    for i in range(1, 41):
        t = i * 0.1
        series.append(f"ps-kmem,1,1,512,0,{t:.1f},3000,10")
        if not killed or t <= 1.5:
            series.append(f"malloc-call-rcu,1,1,512,0,{t:.1f},{1000 + 2000 * t:.0f},{100 * i}")
    write(tmp_path / "endurance_series.csv", series)


def test_endurance_summary(tmp_path):
    endurance_files(tmp_path, killed=False)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    runs = {r["allocator"]: r for r in pp.endurance_runs(
        pp.tp.read_dicts(tmp_path / "endurance_runs.csv"), pp.tp.read_dicts(tmp_path / "endurance.csv"),
        pp.tp.read_dicts(tmp_path / "endurance_series.csv"))}
    assert runs["ps-kmem"]["slope_kib_s"] == pytest.approx(0.0)
    assert runs["ps-kmem"]["peak_over_live"] == pytest.approx(1.5)
    assert runs["malloc-call-rcu"]["slope_kib_s"] == pytest.approx(2000.0)
    assert runs["malloc-call-rcu"]["peak_pending"] == 4000
    assert runs["ps-kmem"]["ft"] == pytest.approx(1.25)
    assert runs["malloc-call-rcu"]["cache_churn"] is None
    md = (tmp_path / "summary_endurance.md").read_text()
    assert "| ps-kmem | 1 | 1 | 8 | ok | 2.500 |" in md
    assert "| 4 | 12 | 33 | 1.25 |" in md


def test_endurance_waits(tmp_path):
    # the runs file's alloc_waits and wait_timeouts: "waits (timed out)", empty for a peer
    endurance_files(tmp_path, killed=False)
    runs = (tmp_path / "endurance_runs.csv").read_text().splitlines()
    runs[0] += ",peak_slab_kib,alloc_waits,wait_timeouts"
    runs[1] += ",1056,12,3"
    runs[2] += ",,,"
    write(tmp_path / "endurance_runs.csv", runs)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    md = (tmp_path / "summary_endurance.md").read_text()
    assert "| 4 | 12 | 33 | 1.25 | 12 (3) |" in md
    assert next(line for line in md.splitlines()
                if line.startswith("| malloc-call-rcu |")).endswith("|  |  |  |  |  |")


def test_endurance_killed_run(tmp_path):
    endurance_files(tmp_path, killed=True)
    pp.main([str(tmp_path)])
    runs = {r["allocator"]: r for r in pp.endurance_runs(
        pp.tp.read_dicts(tmp_path / "endurance_runs.csv"), pp.tp.read_dicts(tmp_path / "endurance.csv"),
        pp.tp.read_dicts(tmp_path / "endurance_series.csv"))}
    k = runs["malloc-call-rcu"]
    assert k["outcome"] == "killed-oom"
    assert k["mops"] is None
    assert k["end_t_s"] == pytest.approx(1.5)
    md = (tmp_path / "summary_endurance.md").read_text()
    assert "| malloc-call-rcu | 1 | 1 | 8 | killed-oom | n/a |" in md


def test_ablation_summary(tmp_path):
    # ps-kmem (on), ps-kmem-off and one policy off, two repeats each
    rows, runs = [HEADER], ["allocator,threads,readers,size,repeat,live_kib,limit_mib,outcome,"
                            "wall_s,cache_churn,cache_misses,peak_slabs,ft"]
    for name, mops, churn in (("ps-kmem", (2.0, 3.0), (100, 140)),
                              ("ps-kmem-off", (2.5, 2.5), (200, 200)),
                              ("ps-kmem-no-latent-slab", (1.0, 1.5), (300, 500))):
        for rep in range(2):
            rows.append(f"endurance,{name},2,1,512,{mops[rep]},1,2,3,0.0,4096,{churn[rep]}")
            runs.append(f"{name},2,1,512,{rep},2048,0,ok,20,7,9,30,1.5")
    write(tmp_path / "endurance.csv", rows)
    write(tmp_path / "endurance_runs.csv", runs)
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    md = (tmp_path / "summary_endurance.md").read_text()
    # medians: on 2.5 Mops, churn 120; off churn 200 -> 0.60x; no-latent-slab 1.25 Mops
    assert "| ps-kmem | 2 | 2.500 | 1.00x | 2.00 | 120 | 0.60x | 7 | 30 | 1.50 |" in md
    assert "| ps-kmem-off | 2 | 2.500 | 1.00x | 2.00 | 200 | 1.00x |" in md
    assert "| ps-kmem-no-latent-slab | 2 | 1.250 | 0.50x | 2.00 | 400 | 2.00x |" in md
    # not an ablation without ps-kmem-off
    assert pp.ablation_summary([r for r in pp.endurance_runs(
        pp.tp.read_dicts(tmp_path / "endurance_runs.csv"), pp.tp.read_dicts(tmp_path / "endurance.csv"),
        []) if r["allocator"] != "ps-kmem-off"]) is None


def test_cache_summary(tmp_path):
    write(tmp_path / "mem.csv", [
        "variant,threads,set_pct,prudence,mops,cache_misses,cache_churn,slab_churn,peak_slabs,"
        "slab_bytes,live_bytes,ft",
        "ps,2,50,on,3.0,100,10,0,50,100,80,1.25",
        "ps,2,50,off,2.0,300,30,2,52,100,80,1.25",
        "ps,2,50,on,5.0,200,20,0,54,100,80,1.35",
        "ps,2,50,off,2.5,400,50,4,56,100,80,1.45",
    ])
    assert pp.main([str(tmp_path)]) in (0, pp.NO_MATPLOTLIB)
    md = (tmp_path / "summary_cache.md").read_text()
    on = md.index("| 2 | 50 | on | 2 | 4.000 | 150 | 15 | 0 | 52 | 1.300 |")
    off = md.index("| 2 | 50 | off | 2 | 2.250 | 350 | 40 | 3 | 54 | 1.350 |")
    assert on < off


def test_plots_written(tmp_path):
    pytest.importorskip("matplotlib")
    write(tmp_path / "pairs.csv", pairs_rows())
    endurance_files(tmp_path, killed=True)
    assert pp.main([str(tmp_path)]) == 0
    assert (tmp_path / "pairs.png").stat().st_size > 1000
    assert (tmp_path / "endurance.png").stat().st_size > 1000


def test_empty_dir(tmp_path):
    assert pp.main([str(tmp_path)]) == 1


def test_doc_block(tmp_path):
    d = tmp_path / "pairs"
    d.mkdir()
    write(d / "pairs.csv", pairs_rows())
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- prudence:pairs -->\nold figures\n<!-- /prudence:pairs -->\nend\n")
    assert pp.main([str(d), "--doc", str(doc)]) in (0, pp.NO_MATPLOTLIB)
    text = doc.read_text()
    assert "old figures" not in text
    assert text.startswith("intro\n<!-- prudence:pairs -->\n")
    assert text.endswith("<!-- /prudence:pairs -->\nend\n")
    assert "| 5.00x | 2.00x |" in text
    assert "# Alloc + deferred-free pairs" not in text  # the title stays out


def test_doc_without_block(tmp_path):
    write(tmp_path / "pairs.csv", pairs_rows())
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    assert pp.main([str(tmp_path), "--doc", str(doc)]) == 1
    assert doc.read_text() == "no markers\n"
