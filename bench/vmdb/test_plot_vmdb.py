"""pytest for bench/vmdb/plot_vmdb.py (ctest bench_vmdb_plot_pytest)."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot_vmdb", os.path.join(HERE, "plot_vmdb.py"))
pv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pv)

HEADER = "design,backend,layout,threads,op,pages,count,avg_ns,p50_ns,p99_ns,p999_ns,max_ns"


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def rows():
    out = [HEADER]
    # model: ps 100 ns at 1 thread, 200 at 2; global-lock 300 and 1000; linux map only
    for d, t, avg in (("ps", 1, 100), ("ps", 2, 200), ("global-lock", 1, 300),
                      ("global-lock", 2, 1000)):
        out.append(f"{d},model,shared,{t},map,1,50,{avg},{avg / 2},{avg * 5},{avg * 10},"
                   f"{avg * 20}")
        out.append(f"{d},model,shared,{t},revoke,14,6,{avg * 14},{avg * 10},{avg * 20},"
                   f"{avg * 30},{avg * 40}")
        out.append(f"{d},model,shared,{t},lookup,1,50,{avg / 10},{avg / 20},{avg / 5},{avg},"
                   f"{avg * 2}")
    out.append("global-lock,model,shared,2,wait,0,7,3000,2000,9000,30000,2500000")
    out.append("linux,model,shared,1,map,1,50,5000,4000,9000,20000,30000")
    out.append("linux,model,shared,2,map,1,50,8000,6000,19000,40000,50000")
    # private layout and memfd: their own sections
    out.append("ps,model,private,2,map,1,50,150,75,750,1500,3000")
    out.append("ps,memfd,shared,2,map,1024,4,2500000,2000000,4000000,4000000,4000000")
    return out


def test_table(tmp_path):
    write(tmp_path / "vmdb.csv", rows())
    assert pv.main([str(tmp_path)]) in (0, pv.NO_MATPLOTLIB)
    md = (tmp_path / "table.md").read_text()
    heads = ["## model backend, shared layout", "## model backend, private layout",
             "## memfd backend, shared layout"]
    assert all(h in md for h in heads)
    assert [md.index(h) for h in heads] == sorted(md.index(h) for h in heads)
    # global-lock at 2 threads: 1000 / ps's 200 = 5x; / its own 300 at 1 thread = 3.33x
    assert ("| global-lock | 2 | 50 | 1.0 us | 500 ns | 5.0 us | 10.0 us | 20.0 us | 5.00x "
            "| 3.33x |") in md
    assert "| ps | 1 | 50 | 100 ns | 50 ns | 500 ns | 1.0 us | 2.0 us | 1.00x | 1.00x |" in md
    assert "### revoke (14 mappings)" in md
    assert "### map, 1024 pages" in md
    assert "### lock wait" in md
    assert ("| global-lock | 2 | 7 | 3.0 us | 2.0 us | 9.0 us | 30.0 us | 2.50 ms | n/a | n/a |"
            in md)
    assert "| ps | 2 | 4 | 2.50 ms | 2.00 ms | 4.00 ms | 4.00 ms | 4.00 ms | 1.00x | n/a |" in md
    # the summary at 2 threads: linux 8000 / 200 = 40x on map; n/a where it has no row;
    # lock waits are not an operation of ps's, so no column
    summ = md[md.index("### Mean latency over ps's at 2 thread(s) (model backend, shared"):]
    line = next(ln for ln in summ.splitlines() if ln.startswith("| linux |"))
    assert line == "| linux | 40.00x | n/a | n/a |"
    p50 = md[md.index("### p50 latency over ps's at 2 thread(s) (model backend, shared"):]
    line = next(ln for ln in p50.splitlines() if ln.startswith("| global-lock |"))
    assert line.startswith("| global-lock | 5.00x |")
    p999 = md[md.index("### p99.9 latency over ps's at 2 thread(s) (model backend, shared"):]
    line = next(ln for ln in p999.splitlines() if ln.startswith("| global-lock |"))
    assert line.startswith("| global-lock | 5.00x |")


def test_plots(tmp_path):
    write(tmp_path / "vmdb.csv", rows())
    rc = pv.main([str(tmp_path)])
    if rc == pv.NO_MATPLOTLIB:
        return
    assert rc == 0
    for g in ("model_shared", "model_private", "memfd_shared"):
        assert (tmp_path / f"vmdb_{g}.png").stat().st_size > 0
        assert (tmp_path / f"vmdb_{g}_tail.png").stat().st_size > 0


def test_later_row_wins(tmp_path):
    lines = rows() + ["ps,model,shared,1,map,1,50,400,200,2000,4000,5000"]
    write(tmp_path / "vmdb.csv", lines)
    got = [r for r in pv.load(str(tmp_path / "vmdb.csv"))
           if (r["design"], r["backend"], r["layout"], r["threads"], r["op"])
           == ("ps", "model", "shared", 1, "map")]
    assert len(got) == 1 and got[0]["avg_ns"] == 400
    # the same configuration in the other layout is another row
    assert any(r["layout"] == "private" and r["design"] == "ps"
               for r in pv.load(str(tmp_path / "vmdb.csv")))


def test_bad_input(tmp_path):
    assert pv.main([str(tmp_path)]) == 1  # no vmdb.csv
    write(tmp_path / "vmdb.csv", ["design,backend,threads", "ps,model,1"])
    assert pv.main([str(tmp_path)]) == 1  # wrong header
    write(tmp_path / "vmdb.csv", [HEADER, "ps,model,shared,1,map,1,50,100"])
    assert pv.main([str(tmp_path)]) == 1  # short row
    write(tmp_path / "vmdb.csv", [HEADER, "ps,model,shared,one,map,1,50,100,50,500,1000,2000"])
    assert pv.main([str(tmp_path)]) == 1  # not a number
    # the header before layouts and max_ns (a CSV of an older tsync-bench vmdb)
    write(tmp_path / "vmdb.csv", ["design,backend,threads,op,pages,count,avg_ns,p50_ns,p99_ns,"
                                  "p999_ns", "ps,model,1,map,1,50,100,50,500,1000"])
    assert pv.main([str(tmp_path)]) == 1
    write(tmp_path / "vmdb.csv", [HEADER])
    assert pv.main([str(tmp_path)]) == 1  # no rows


def test_fmt_ns():
    assert pv.fmt_ns(999) == "999 ns"
    assert pv.fmt_ns(1500) == "1.5 us"
    assert pv.fmt_ns(2.5e6) == "2.50 ms"
    assert pv.fmt_ns(None) == "n/a"


def test_targets_and_doc(tmp_path):
    lines = [HEADER]
    # at 2 threads, shared layout: ps p99.9 100 and mean 50; rwlock 400 / 200 (0.25x and
    # 0.25x: met); global-lock 150 / 80 (0.667x and 0.625x: not met); frame-ticket mean 40
    # (throughput 0.80x: not met)
    for d, p999, avg in (("ps", 100, 50), ("rwlock", 400, 200), ("global-lock", 150, 80),
                         ("frame-ticket", 120, 40)):
        for op in ("map", "unmap"):
            lines.append(f"{d},model,shared,2,{op},1,10,{avg},{avg},{avg},{p999},{p999 * 2}")
    lines.append("rwlock,model,shared,2,wait,0,5,1000,800,9000,9000,3000000")
    # the private layout's rows do not count for the shared layout's targets
    lines.append("ps,model,private,2,map,1,10,5000,5000,5000,5000,5000")
    lines.append("ns-walk,model,shared,2,lookup,1,10,30,27,40,50,60")
    lines.append("bare-trie,model,shared,2,lookup,1,10,24,18,30,40,50")
    lines.append("linux,model,shared,2,map,1,10,5000,4000,9000,9000,9000")
    write(tmp_path / "vmdb.csv", lines)
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- vmdb:targets -->\nold\n<!-- /vmdb:targets -->\nafter\n")
    assert pv.main([str(tmp_path), "--doc", str(doc)]) in (0, pv.NO_MATPLOTLIB)
    text = doc.read_text()
    assert "old" not in text and text.startswith("before\n") and text.endswith("after\n")
    assert "At 2 thread(s), model backend, shared layout." in text
    assert "| map 1 page vs rwlock | p99.9 | 0.25x | <= 0.33x | yes |" in text
    assert "| map 1 page vs rwlock | mean | 0.25x | <= 0.50x | yes |" in text
    assert "| map 1 page vs global-lock | p99.9 | 0.667x | <= 0.33x | no |" in text
    assert "| unmap 1 page vs global-lock | mean | 0.625x | <= 0.50x | no |" in text
    assert "| unmap 1 page vs rwlock | throughput | 4x | >= 1.00x | yes |" in text
    assert "| unmap 1 page vs frame-ticket | throughput | 0.8x | >= 1.00x | no |" in text
    assert "| map 1 page vs frame-ticket | p99.9 | 0.833x | (context) | |" in text
    assert "| lookup: namespace walk vs bare trie walk | mean | 1.25x | <= 1.50x | yes |" in text
    assert "| lookup: namespace walk vs bare trie walk | p50 | 1.5x | <= 1.50x | yes |" in text
    assert "| map 1 page vs Linux mmap/munmap | mean | 0.01x | (context) | |" in text
    assert "| map 1 page vs Linux mmap/munmap | p50 | 0.0125x | (context) | |" in text
    assert "| rwlock | 5 | 1.0 us | 9.0 us | 3.00 ms |" in text
    # scaling: rows at 1 thread are needed; with only 2-thread rows there is no such table
    assert "Scaling, model backend" not in text
    write(tmp_path / "vmdb.csv", rows())  # ps 100 -> 200, global-lock 300 -> 1000 (map)
    assert pv.main([str(tmp_path), "--doc", str(doc)]) in (0, pv.NO_MATPLOTLIB)
    text = doc.read_text()
    assert "Scaling, model backend, shared layout: mean at 2 threads" in text
    assert "| global-lock | 3.33x | n/a |" in text and "| ps | 2.00x | n/a |" in text
    # a doc without the block is an error, and is left alone
    bad = tmp_path / "bad.md"
    bad.write_text("no block\n")
    assert pv.main([str(tmp_path), "--doc", str(bad)]) == 1
    assert bad.read_text() == "no block\n"
