"""Tests of bench/smr/plot_smr.py on a small synthetic CSV: python3 -m pytest bench/"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_smr as report  # noqa: E402

HEADER = ("mechanism,threads,update_pct,read_mops,update_mops,read_p50_ns,read_p99_ns,"
          "update_p50_ns,update_p99_ns,peak_pending")
# Totals (read+update Mops) and update p99s chosen so every ratio is easy to check.
ROWS = """\
ps,1,0,30,0,20,40,0,0,0
ps,2,0,60,0,20,40,0,0,0
ps,1,50,10,10,20,40,80,100,5
ps,2,50,16,16,25,50,90,200,9
urcu-mb-sync,1,0,10,0,60,120,0,0,0
urcu-mb-sync,2,0,15,0,60,120,0,0,0
urcu-mb-sync,1,50,1,1,70,150,900,2500,0
urcu-mb-sync,2,50,0.5,0.5,90,300,5000,40000,0
ck-epoch-call,1,0,40,0,15,30,0,0,0
ck-epoch-call,2,0,0,0,0,0,0,0,0
ck-epoch-call,1,50,4,4,20,30,60,50,100
ck-epoch-call,2,50,8,8,20,40,70,400,300
"""


@pytest.fixture
def csv_path(tmp_path):
    p = tmp_path / "smr.csv"
    p.write_text(HEADER + "\n" + ROWS)
    return p


def md_tables(text):
    """{(section, caption): [rows as dicts]} for each markdown table in the report."""
    tables, section, caption, lines = {}, None, None, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        elif line and not line.startswith("|"):
            caption = line.split(":")[0]
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|-"):
            head = [c.strip() for c in line.strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(head, (c.strip() for c in lines[i].strip("|").split("|")))))
                i += 1
            tables[(section, caption)] = rows
            continue
        i += 1
    return tables


def run(csv_path, outdir, *extra):
    return report.main(["smr", str(csv_path), str(outdir), "--command", "tsync-bench smr x",
                        "--clock", "tsync rdtsc"] + list(extra))


def test_table_ratios(csv_path, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the table needs no matplotlib
    out = tmp_path / "out"
    assert run(csv_path, out) == report.tp.NO_MATPLOTLIB
    text = (out / "table.md").read_text()
    assert "`tsync-bench smr x`" in text and "tsync rdtsc" in text
    assert "CPUs" in text and "clocksource" in text
    t = md_tables(text)

    thr = {r["threads"]: r for r in t[("50% updates", "Throughput")]}
    assert float(thr["1"]["ps Mops"]) == pytest.approx(20)
    assert float(thr["1"]["urcu-mb-sync"]) == pytest.approx(10.0)   # 20 / 2
    assert float(thr["1"]["ck-epoch-call"]) == pytest.approx(2.5)   # 20 / 8
    assert float(thr["2"]["urcu-mb-sync"]) == pytest.approx(32.0)   # 32 / 1
    assert float(thr["2"]["ck-epoch-call"]) == pytest.approx(2.0)   # 32 / 16

    p99 = {r["threads"]: r for r in t[("50% updates", "Update p99")]}
    assert p99["1"]["ps p99 ns"] == "100"
    assert float(p99["1"]["urcu-mb-sync"]) == pytest.approx(25.0)   # 2500 / 100
    assert float(p99["1"]["ck-epoch-call"]) == pytest.approx(0.5)   # 50 / 100
    assert float(p99["2"]["urcu-mb-sync"]) == pytest.approx(200.0)  # 40000 / 200

    ro = {r["threads"]: r for r in t[("0% updates", "Throughput")]}
    assert float(ro["1"]["urcu-mb-sync"]) == pytest.approx(3.0)     # 30 / 10
    assert float(ro["1"]["ck-epoch-call"]) == pytest.approx(0.75)   # 30 / 40
    assert ro["2"]["ck-epoch-call"] == "inf"                        # 60 / 0
    assert ("0% updates", "Update p99") not in t                    # no updates, no p99 table


def test_pngs(csv_path, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    assert run(csv_path, out) == 0
    assert (out / "table.md").exists()
    for name in ("smr_throughput.png", "smr_p99.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_missing_baseline(tmp_path):
    p = tmp_path / "smr.csv"
    p.write_text(HEADER + "\n" + "".join(l + "\n" for l in ROWS.splitlines()
                                         if not l.startswith("ps,")))
    text = report.smr_table(report.load_smr(p), machine={"nproc": 2, "cpu": "x",
                                                         "clocksource": "tsc"})
    assert "No `ps` rows" in text
    rows = {r["threads"]: r for r in md_tables(text)[("50% updates", "Throughput")]}
    assert float(rows["1"]["urcu-mb-sync"]) == pytest.approx(2.0)


def test_bad_input(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("mechanism,threads\nps,1\n")
    assert report.main(["smr", str(p), str(tmp_path / "o")]) == 1
    p.write_text(HEADER + "\nps,1,0,x,0,0,0,0,0,0\n")
    with pytest.raises(report.tp.InputError):
        report.load_smr(p)


def test_ratio_format():
    assert report.tp.ratio_text(3, 2) == "1.50"
    assert report.tp.ratio_text(1, 0) == "inf"
    assert report.tp.ratio_text(0, 0) == "n/a"


def test_summary_headline_ratios(csv_path):
    rows = report.load_smr(str(csv_path))
    got = dict(report.smr_summary(rows, threads=[1, 2]))
    # read-only, 1 thread: ck-epoch-call (40) is the best peer and beats ps (30)
    assert got["read-only, 1 threads: ps / best peer (ck-epoch-call), total throughput"] \
        == "0.75 (ps loses)"
    # read-only, 2 threads: urcu-mb-sync (15) is the best peer (ck-epoch-call did 0)
    assert got["read-only, 2 threads: ps / best peer (urcu-mb-sync), total throughput"] \
        == "4.00"
    # 50 %: ps 32 against ck-epoch-call 16; p99: ck-epoch-call 400 against ps 200
    assert got["50% updates, 2 threads: ps / best peer (ck-epoch-call), total throughput"] \
        == "2.00"
    assert got["50% updates, 2 threads: best peer's update p99 (ck-epoch-call) / ps's"] \
        == "2.00"
    # 1 thread: the lowest peer p99 is ck-epoch-call's 50 against ps's 100: ps loses
    assert got["50% updates, 1 threads: best peer's update p99 (ck-epoch-call) / ps's"] \
        == "0.50 (ps loses)"
    assert got["ps peak pending objects, any run"] == "9"
    # no 10 % rows: no 10 % figures; the unsafe control is never a peer
    assert not any(k.startswith("10% updates") for k in got)


def test_summary_ignores_the_unsafe_control(csv_path, tmp_path):
    p = tmp_path / "smr2.csv"
    p.write_text(HEADER + "\n" + ROWS + "unsafe,1,0,999,0,1,1,0,0,0\n")
    got = dict(report.smr_summary(report.load_smr(str(p)), threads=[1]))
    assert "read-only, 1 threads: ps / best peer (ck-epoch-call), total throughput" in got


def test_readme_block_replaced_between_markers(csv_path, tmp_path):
    rows = report.load_smr(str(csv_path))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- RESULTS -->\nold table\n<!-- /RESULTS -->\noutro\n")
    assert report.main(["readme", str(readme), "--section", f"Paper layout={csv_path}",
                        "--section", f"Slots={csv_path}", "--command", "make bench"]) == 0
    text = readme.read_text()
    assert "old table" not in text
    assert text.startswith("intro\n<!-- RESULTS -->\nCommand: `make bench`")
    assert "**Paper layout**" in text and "**Slots**" in text
    assert text.count("| figure | measured |") == 2
    assert report.main(["readme", str(readme), "--section", "no-equals-sign"]) == 1
    assert text.rstrip().endswith("<!-- /RESULTS -->\noutro")
    assert "| figure | measured |" in text
    with pytest.raises(report.tp.InputError):
        report.tp.replace_block("no markers here", report.README_BEGIN, report.README_END, "x")
