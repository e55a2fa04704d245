"""bench/hash/test_plot_hash.py - plot_hash.py: medians over repeats, the target
verdicts (a met and a missed target each), the resize comparison, and the figures."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plot_hash as report_hash  # noqa: E402

HDR = "table,threads,update_pct,keys,mops,lookup_p50_ns,lookup_p99_ns,update_p99_ns,resizes,peak_rss_kib\n"
RHDR = "table,phase,keys,lookups,lookup_p50_ns,lookup_p99_ns,seconds,resizes,peak_rss_kib\n"


def write(d, steady, resize=None):
    with open(os.path.join(d, "hash.csv"), "w") as f:
        f.write(HDR + "".join(r + "\n" for r in steady))
    if resize is not None:
        with open(os.path.join(d, "hash_resize.csv"), "w") as f:
            f.write(RHDR + "".join(r + "\n" for r in resize))


STEADY = [
    # three repeats of ps-hash at 10 %: median mops 30, update p99 300
    "ps-hash,2,10,1000,30,10,30,300,0,100",
    "ps-hash,2,10,1000,10,10,30,900,0,100",
    "ps-hash,2,10,1000,31,10,30,200,0,100",
    "urcu-lfht,2,10,1000,10,20,40,500,0,100",
    "ck-hs,2,10,1000,40,10,20,250,0,100",
    "ps-hash,2,0,1000,20,10,30,0,0,100",
    "urcu-lfht,2,0,1000,25,10,30,0,0,100",
]
RESIZE = [
    "ps-hash,grow,1000,50,10,50,0.1,4,100",
    "ps-hash,shrink,1000,50,10,500,0.1,4,100",
    "ps-hash,steady,1000,50,10,100,0.1,0,100",
]


def test_medians_and_targets(tmp_path):
    d = str(tmp_path)
    write(d, STEADY, RESIZE)
    assert report_hash.main(["x", d]) == 0
    md = open(os.path.join(d, "table.md")).read()
    assert "| ps-hash | 2 | 10 | 1000 | 30.00 | 10 | 30 | 300 | 0 | 100 | 3 |" in md
    assert "| 1000 keys, 10 %: ps-hash / urcu-lfht throughput | 3.00 | >= 1.5 | yes |" in md
    assert "| 1000 keys, 10 %: ps-hash / ck-hs throughput | 0.75 | >= 1.0 | no |" in md
    assert "| 1000 keys, 10 %: ps-hash update p99 / urcu-lfht's | 0.60 | <= 1.0 | yes |" in md
    assert "| 1000 keys, 10 %: ps-hash update p99 / ck-hs's | 1.20 | <= 1.0 | no |" in md
    assert "| 1000 keys, read-only: ps-hash / urcu-lfht throughput | 0.80 | >= 1.0 | no |" in md
    assert "| resize (grow): ps-hash lookup p99 / steady p99 | 0.50 | <= 2.0 | yes |" in md
    assert "| resize (shrink): ps-hash lookup p99 / steady p99 | 5.00 | <= 2.0 | no |" in md


def test_without_resize_and_figures(tmp_path):
    d = str(tmp_path)
    write(d, STEADY)
    r = subprocess.run([sys.executable, os.path.join(HERE, "plot_hash.py"), d],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = open(os.path.join(d, "table.md")).read()
    assert "Resize runs" not in md and "resize (grow)" not in md
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    for f in ("throughput.png", "latency.png"):
        assert os.path.getsize(os.path.join(d, f)) > 1000
    assert not os.path.exists(os.path.join(d, "resize.png"))


def test_committed_results_parse():
    """docs/results/hash, if present, is what the report reads."""
    d = os.path.join(HERE, "..", "..", "docs", "results", "hash")
    if not os.path.exists(os.path.join(d, "hash.csv")):
        return
    steady = report_hash.medians(report_hash.read_csv(os.path.join(d, "hash.csv")),
                                 report_hash.STEADY_KEYS, report_hash.NUM)
    assert {k[0] for k in steady} >= {"ps-hash", "urcu-lfht", "ck-hs", "rwlock"}
    assert all(m["mops"] > 0 for m in steady.values())


def test_doc_block(tmp_path):
    d = str(tmp_path)
    write(d, STEADY, RESIZE)
    doc = tmp_path / "hash.md"
    doc.write_text("intro\n<!-- hash:targets -->\nold figures\n<!-- /hash:targets -->\nend\n")
    assert report_hash.main(["x", d, "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("intro\n<!-- hash:targets -->\n| target | value | bound | met |\n")
    assert "old figures" not in text
    assert "| 1000 keys, 10 %: ps-hash / urcu-lfht throughput | 3.00 | >= 1.5 | yes |" in text
    assert text.endswith("<!-- /hash:targets -->\nend\n")
    bad = tmp_path / "bad.md"
    bad.write_text("no markers\n")
    assert report_hash.main(["x", d, "--doc", str(bad)]) == 1
    assert bad.read_text() == "no markers\n"
