"""Tests of bench/tsync_plot.py, the report scripts' shared module: python3 -m pytest bench/"""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tsync_plot as tp  # noqa: E402

FIELDS = ["name", "n", "x"]


def write(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_load_csv_types_and_duplicates(tmp_path):
    path = write(tmp_path, "name,n,x\na,1,0.5\nb,2,1.5\n\na,1,9\nc,3,2\n")
    rows = tp.load_csv(path, FIELDS, {"n": int, "x": float}, key=("name", "n"))
    # the later a,1 replaces the first in its place; the blank line is skipped
    assert [(r["name"], r["n"], r["x"]) for r in rows] == [("a", 1, 9.0), ("b", 2, 1.5),
                                                           ("c", 3, 2.0)]
    assert isinstance(rows[0]["n"], int) and isinstance(rows[0]["name"], str)
    # without a key every row stays, repeats included
    assert len(tp.load_csv(path, FIELDS, {"n": int})) == 4


def test_load_csv_errors_name_file_and_line(tmp_path):
    with pytest.raises(tp.InputError, match=r"not a demo CSV \(header a,b; expected name,n,x\)"):
        tp.load_csv(write(tmp_path, "a,b\n1,2\n"), FIELDS, what="demo")
    with pytest.raises(tp.InputError, match=r"t\.csv:3: 2 fields, expected 3"):
        tp.load_csv(write(tmp_path, "name,n,x\na,1,2\nb,2\n"), FIELDS)
    with pytest.raises(tp.InputError, match=r"t\.csv:2: invalid literal"):
        tp.load_csv(write(tmp_path, "name,n,x\na,one,2\n"), FIELDS, {"n": int})
    with pytest.raises(tp.InputError, match="No such file"):
        tp.load_csv(str(tmp_path / "missing.csv"), FIELDS)
    with pytest.raises(tp.InputError, match=r"header none"):
        tp.load_csv(write(tmp_path, ""), FIELDS)
    # InputError is a ValueError: callers that caught ValueError still do
    assert issubclass(tp.InputError, ValueError)


def test_load_csv_optional_cells_and_check(tmp_path):
    path = write(tmp_path, "name,n,x\na,,nan\nb,2.0, - \nc,-3,1\n")
    seen = []

    def check(row):
        if row["name"] == "c":
            raise ValueError("c refused")
        if row["x"] is None:
            row["x"] = 0.0
        seen.append(row["name"])

    types = {"n": tp.optional(tp.int_of_float), "x": tp.optional(float)}
    with pytest.raises(tp.InputError, match=r"t\.csv:4: c refused"):
        tp.load_csv(path, FIELDS, types, check=check)
    rows = tp.load_csv(write(tmp_path, "name,n,x\na,,nan\nb,2.0, - \n"), FIELDS, types,
                       check=check)
    assert [(r["n"], r["x"]) for r in rows] == [(None, 0.0), (2, 0.0)]
    assert seen[-2:] == ["a", "b"]


def test_rows_helpers():
    assert tp.unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert tp.ordered({"zz", "ps", "aa", "mcs"}, ["mcs", "ps", "rw"]) == ["mcs", "ps", "aa", "zz"]
    rows = [{"k": 1, "v": 3}, {"k": 2, "v": 5}, {"k": 1, "v": 1}, {"k": 1, "v": None}]
    assert list(tp.group(rows, lambda r: r["k"])) == [1, 2]
    assert tp.index(rows, "k")[(1,)]["v"] is None  # the later row wins
    assert tp.median([3, None, 1, float("nan"), 2]) == 2
    assert tp.median([None]) is None
    med = tp.medians(rows, lambda r: r["k"], ("v",))
    assert med == {1: {"v": 2, "runs": 3}, 2: {"v": 5, "runs": 1}}
    med = tp.medians([{"k": "a", "v": "4"}, {"k": "a", "v": ""}], lambda r: r["k"], ("v",),
                     lambda s: float(s) if s else None)
    assert med["a"] == {"v": 4.0, "runs": 2}


def test_ratios_and_formats():
    assert tp.ratio(3, 2) == 1.5
    assert tp.ratio(3, 0) is None and tp.ratio(None, 2) is None and tp.ratio(3, None) is None
    assert tp.fmt_x(tp.ratio(1, 3)) == "0.33x" and tp.fmt_x(None) == "n/a"
    assert tp.fmt_x(2.0, ".3g") == "2x"
    assert tp.ratio_text(3, 2) == "1.50"
    assert tp.ratio_text(1, 0) == "inf" and tp.ratio_text(0, 0) == "n/a"
    assert tp.fmt(1234.5, ",.1f") == "1,234.5"
    assert tp.fmt(None) == "n/a" and tp.fmt(math.nan, ".0f", "-") == "-"


def test_markdown_tables():
    assert tp.md_rule("lr") == "|---|---:|"
    assert tp.md_rule("lrl", spaced=True) == "| --- | ---: | --- |"
    lines = tp.md_table(["a", "b"], [[1, "x"], ["2", None]], "rr")
    assert lines == ["| a | b |", "|---:|---:|", "| 1 | x |", "| 2 | None |"]
    assert tp.md_table(["a"], [])[1] == "|---|"


def test_replace_block_and_refresh_doc(tmp_path):
    begin, end = tp.block_markers("study", "part")
    assert (begin, end) == ("<!-- study:part -->", "<!-- /study:part -->")
    doc = f"intro\n{begin}\nold\n{end}\noutro\n"
    assert tp.replace_block(doc, begin, end, "\nnew\n\n") == f"intro\n{begin}\nnew\n{end}\noutro\n"
    with pytest.raises(tp.InputError, match="no <!-- study:part -->"):
        tp.replace_block("no markers", begin, end, "x")
    with pytest.raises(tp.InputError):  # the end marker before the begin marker
        tp.replace_block(f"{end}\n{begin}\n", begin, end, "x")
    p = tmp_path / "doc.md"
    p.write_text(doc)
    tp.refresh_doc(str(p), begin, end, "fresh")
    assert p.read_text() == f"intro\n{begin}\nfresh\n{end}\noutro\n"
    with pytest.raises(tp.InputError, match=r"doc\.md: no"):
        tp.refresh_doc(str(p), "<!-- x -->", "<!-- /x -->", "y")
    assert p.read_text().count("fresh") == 1  # a failed refresh leaves the file alone


def test_series_and_colours():
    rows = [{"m": "a", "t": 4, "y": 1.0}, {"m": "a", "t": 1, "y": 2.0},
            {"m": "b", "t": 2, "y": 3.0}, {"m": "a", "t": 2, "y": None}]
    assert tp.series(rows, "t", "y", m="a") == ([1, 4], [2.0, 1.0])
    assert tp.series(rows, lambda r: r["t"] * 10, "y") == ([10, 20, 40], [2.0, 3.0, 1.0])
    known = ["ps", "mcs"]
    assert tp.color_of("ps", known) == "C0" and tp.color_of("mcs", known) == "C1"
    assert tp.color_of("zz", known) == f"C{(2 + 2 * ord('z')) % 10}"


def test_run_exit_statuses(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    doc = tmp_path / "doc.md"
    begin, end = tp.block_markers("t", "b")
    doc.write_text(f"{begin}\n{end}\n")

    def bad():
        raise tp.InputError("broken input")

    assert tp.run("prog", bad, str(out), lambda d: {}) == tp.BAD_INPUT
    assert "prog: broken input" in capsys.readouterr().err
    assert tp.run("prog", lambda: [], str(out), lambda d: {}, bad_input=2) == 2
    assert "prog: no rows" in capsys.readouterr().err
    # texts written, the doc block refreshed, then no plots without matplotlib
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    rc = tp.run("prog", lambda: [1, 2], str(out), lambda d: {"t.md": f"{len(d)} rows\n"},
                doc=(str(doc), begin, end, lambda d: f"sum {sum(d)}"),
                plots=lambda d, plt: pytest.fail("plotted without matplotlib"))
    assert rc == tp.NO_MATPLOTLIB
    assert (out / "t.md").read_text() == "2 rows\n"
    assert doc.read_text() == f"{begin}\nsum 3\n{end}\n"
    # a doc without the block: the texts stay written, the exit status says so
    rc = tp.run("prog", lambda: [5], str(out), lambda d: {"t.md": "again\n"},
                doc=(str(tmp_path / "none.md"), begin, end, str))
    assert rc == tp.BAD_INPUT and (out / "t.md").read_text() == "again\n"


def test_run_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"

    def plots(d, plt):
        fig, axes = tp.panel_grid(plt, 3, 2, 3, 2)
        assert len(axes) == 3 and len(fig.axes) == 4  # the fourth cell is blank
        for ax in axes:
            ax.plot(*tp.series([{"x": i, "y": i * v} for i in range(3) for v in d], "x", "y"),
                    label="line")
            tp.style_axes(ax, "title", "x", "y", ylog=False, xticks=[0, 1, 2])
        assert tp.fig_legend(fig, axes) is not None
        fig2, row = tp.panel_row(plt, 2, 3, 2)
        assert tp.fig_legend(fig2, row) is None  # no labels: no legend
        plt.close(fig2)
        return [tp.save(plt, fig, str(out / "f.png"), rect=(0, 0.1, 1, 1))]

    assert tp.run("prog", lambda: [1], str(out), lambda d: {}, plots=plots) == 0
    assert (out / "f.png").stat().st_size > 0
    assert f"prog: wrote {out / 'f.png'}" in capsys.readouterr().out


def test_csv_parser():
    a = tp.csv_parser(__doc__, "prog", "--command", "--clock").parse_args(
        ["in.csv", "out", "--clock", "tsc"])
    assert (a.csv, a.outdir, a.command, a.clock) == ("in.csv", "out", None, "tsc")
    with pytest.raises(SystemExit):
        tp.csv_parser(__doc__, "prog").parse_args(["in.csv"])
