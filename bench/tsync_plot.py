"""bench/tsync_plot.py - what the benchmark reports share.

Every report script (bench/smr/plot_smr.py for smr, bench/oplog/plot_oplog.py, bench/rlu/plot_rlu.py,
bench/cache/plot_cache.py, bench/vmdb/plot_vmdb.py, bench/prudence/plot_prudence.py,
bench/rt/plot_rt_cache.py, and the summary of bench/cached-net/cached_memeff.py) is its study's
configuration (CSV fields and types, the order of its designs, its targets) plus its own
tables and figures; the rest lives here:

  CSV      load_csv (header check, typed cells, optional() cells, later duplicates win),
           read_dicts, InputError
  rows     unique, ordered, group, index, median, medians, ratio
  text     fmt, fmt_x, ratio_text, md_row, md_rule, md_table, write_text
  docs     block_markers, replace_block, refresh_doc (generated blocks in README.md/docs)
  figures  pyplot, panel_row, panel_grid, series, style_axes, fig_legend, color_of, save
  main     parser, csv_parser, fail, run (load, write the texts, refresh a doc block, plot or exit 3)

The scripts run as `python bench/<study>/<script>.py`; each puts bench/ on sys.path before
`import tsync_plot` (the pytest files import the scripts, so the same line serves them).
"""
import argparse
import csv
import math
import os
import statistics
import sys

NO_MATPLOTLIB = 3  # exit status: the text outputs are written, matplotlib is missing
BAD_INPUT = 1      # exit status: a missing or malformed CSV, directory or document block
DPI = 110
NULLS = ("", "nan", "null", "none", "-")


class InputError(ValueError):
    """A CSV, directory or document the report cannot use; the message names it."""


# ---------------------------------------------------------------- CSV

def optional(conv):
    """A cell converter for a column that may not apply: an empty cell (or nan, null,
    none, -) is None, anything else conv(cell)."""
    def convert(cell):
        cell = cell.strip()
        return None if cell.lower() in NULLS else conv(cell)
    return convert


def int_of_float(cell):
    """An integer written either way ("3" or "3.0")."""
    return int(float(cell))


def load_csv(path, fields, types=None, key=None, what="tsync-bench", check=None):
    """Rows of the CSV at path as dicts: the header must be exactly `fields`, every row
    as many cells; types {field: converter} converts those cells (the rest stay strings);
    check(row) may refuse a row (ValueError) or amend it. key (field names): a later row
    with the same key replaces the earlier one in its place; None keeps every row.
    Raises InputError naming the file and line."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    types = types or {}
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != fields:
            got = ",".join(header) if header else "none"
            raise InputError(f"{path}: not a {what} CSV (header {got}; expected "
                             f"{','.join(fields)})")
        rows = {} if key else []
        for n, rec in enumerate(reader, start=2):
            if not rec:
                continue
            if len(rec) != len(fields):
                raise InputError(f"{path}:{n}: {len(rec)} fields, expected {len(fields)}")
            row = dict(zip(fields, rec))
            try:
                for k, conv in types.items():
                    row[k] = conv(row[k])
                if check:
                    check(row)
            except ValueError as e:
                raise InputError(f"{path}:{n}: {e}") from None
            if key:
                rows[tuple(row[k] for k in key)] = row
            else:
                rows.append(row)
    return list(rows.values()) if key else rows


def read_dicts(path):
    """Every row of a CSV as a dict of strings (csv.DictReader)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- rows

def unique(xs):
    """xs without repeats, in the order of first appearance."""
    return list(dict.fromkeys(xs))


def ordered(names, known):
    """names in the order of `known`, the others after it, alphabetically."""
    names = set(names)
    return [n for n in known if n in names] + sorted(names - set(known))


def group(rows, key):
    """{key(row): [rows]}, groups in the order of their first row."""
    out = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def index(rows, *fields):
    """{(row[f] for f in fields): row}; a later row of the same key wins."""
    return {tuple(r[f] for f in fields): r for r in rows}


def median(xs):
    """The median of the values that are not None (or NaN); None when there are none."""
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else None


def medians(rows, key, cols, conv=None):
    """Medians over repeats: {key(row): {col: median, ..., "runs": rows in the group}};
    conv converts each cell first (e.g. a CSV string to a float or None)."""
    conv = conv or (lambda v: v)
    out = {}
    for k, rs in group(rows, key).items():
        out[k] = {c: median(conv(r[c]) for r in rs) for c in cols}
        out[k]["runs"] = len(rs)
    return out


def ratio(a, b):
    """a / b, or None when a is None or b is None or 0."""
    return a / b if a is not None and b else None


# ---------------------------------------------------------------- text

def fmt(x, spec=".2f", empty="n/a"):
    """x formatted with spec, or `empty` for None and NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return empty
    return format(x, spec)


def fmt_x(r, spec=".2f"):
    """A ratio as "1.23x", or "n/a"."""
    return "n/a" if r is None else f"{format(r, spec)}x"


def ratio_text(num, den):
    """num / den with 2 decimals; "inf" for x / 0 with x > 0, "n/a" for 0 / 0."""
    if den == 0:
        return "inf" if num > 0 else "n/a"
    return f"{num / den:.2f}"


def md_row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def md_rule(align, spaced=False):
    """A Markdown table's rule: one column per character of align, "l" (---) or "r"
    (---:); spaced: "| --- | ---: |" rather than "|---|---:|"."""
    cols = ["---:" if a == "r" else "---" for a in align]
    return md_row(cols) if spaced else "|" + "".join(c + "|" for c in cols)


def md_table(header, body, align=None, spaced=False):
    """The lines of a Markdown table; align as md_rule's (default: every column "l")."""
    return ([md_row(header), md_rule(align or "l" * len(header), spaced)]
            + [md_row(cells) for cells in body])


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


# ---------------------------------------------------------------- generated blocks

def block_markers(study, name):
    """The markers of a generated block in a document: <!-- study:name --> and
    <!-- /study:name -->."""
    return f"<!-- {study}:{name} -->", f"<!-- /{study}:{name} -->"


def replace_block(doc, begin, end, text):
    """doc with the lines between the markers begin and end replaced by text (stripped;
    the markers stay). Raises InputError when they are missing or out of order."""
    i, j = doc.find(begin), doc.find(end)
    if i < 0 or j < i:
        raise InputError(f"no {begin} ... {end} block")
    return doc[:i + len(begin)] + "\n" + text.strip() + "\n" + doc[j:]


def refresh_doc(path, begin, end, text):
    """replace_block on the file at path, in place; InputError names the file."""
    try:
        with open(path) as f:
            doc = replace_block(f.read(), begin, end, text)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    write_text(path, doc)


# ---------------------------------------------------------------- figures

def pyplot():
    """matplotlib.pyplot on the Agg backend; ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def panel_row(plt, n, width, height):
    """A figure of n panels side by side, each width x height inches: (fig, [axes])."""
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def panel_grid(plt, n, ncol, width, height):
    """A figure of n panels, at most ncol a row (the cells past n blank): (fig, [axes])."""
    ncol = min(ncol, n)
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(width * ncol, height * nrow), squeeze=False)
    cells = list(axes.flat)
    for ax in cells[n:]:
        ax.axis("off")
    return fig, cells[:n]


def series(rows, x, y, **match):
    """(xs, ys) of the rows whose fields equal `match`, sorted by x; rows whose y is None
    are left out. x and y: field names or functions of a row."""
    fx = x if callable(x) else (lambda r: r[x])
    fy = y if callable(y) else (lambda r: r[y])
    pts = sorted((fx(r), fy(r)) for r in rows
                 if all(r[k] == v for k, v in match.items()) and fy(r) is not None)
    return [p[0] for p in pts], [p[1] for p in pts]


def style_axes(ax, title=None, xlabel=None, ylabel=None, ylog=False, xticks=None,
               fontsize=None, grid="both"):
    """Title, labels, a log y axis, ticks at xticks, and a light grid (grid: "both",
    "y", or None for none)."""
    if title is not None:
        ax.set_title(title, fontsize=fontsize)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if ylog:
        ax.set_yscale("log")
    if xticks is not None:
        ax.set_xticks(xticks)
    if grid:
        ax.grid(True, axis=grid, which="both", alpha=0.3)


def fig_legend(fig, axes, order=None, **kw):
    """One legend for the figure of every label in `axes` (first handle of each; order:
    a list the labels follow, see ordered()); nothing when there are no labels."""
    handles = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if not handles:
        return None
    labels = ordered(handles, order) if order is not None else list(handles)
    kw.setdefault("fontsize", 8)
    kw.setdefault("loc", "lower center")
    kw.setdefault("ncol", min(6, len(labels)))
    return fig.legend([handles[k] for k in labels], labels, **kw)


def color_of(name, known):
    """A fixed colour (matplotlib's default cycle) per name, the same in every panel and
    figure: by position in known, else by the name's characters."""
    i = known.index(name) if name in known else len(known) + sum(map(ord, name))
    return f"C{i % 10}"


def save(plt, fig, path, rect=None):
    """Lay out (tight, within rect), write at DPI and close; returns path."""
    if rect is None:
        fig.tight_layout()
    else:
        fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- main

def parser(doc, prog=None):
    """An ArgumentParser whose description is the first line of the script's docstring."""
    return argparse.ArgumentParser(prog=prog or os.path.basename(sys.argv[0]),
                                   description=doc.strip().splitlines()[0])


def csv_parser(doc, prog, *options):
    """parser() for `SCRIPT CSV OUTDIR [--OPTION VALUE]...`: options are names such as
    "--command" (each an optional string)."""
    ap = parser(doc, prog)
    ap.add_argument("csv")
    ap.add_argument("outdir")
    for o in options:
        ap.add_argument(o)
    return ap


def fail(prog, msg, rc=BAD_INPUT):
    print(f"{prog}: {msg}", file=sys.stderr)
    return rc


def run(prog, load, outdir, texts, doc=None, plots=None, bad_input=BAD_INPUT):
    """A report's main: data = load() (InputError: its message, exit bad_input; nothing
    loaded: "no rows", the same); texts(data) -> {file name: text}, written into outdir
    (made); doc: None or (path, begin, end, text_of(data)), whose block is refreshed
    (InputError: exit bad_input, the texts stay written); then plots(data, plt) -> the
    paths it wrote, each announced. Returns the exit status: 0, bad_input, or
    NO_MATPLOTLIB when matplotlib is missing (texts and doc written, no plots)."""
    try:
        data = load()
    except InputError as e:
        return fail(prog, e, bad_input)
    if not data:
        return fail(prog, "no rows", bad_input)
    os.makedirs(outdir, exist_ok=True)
    for name, text in texts(data).items():
        write_text(os.path.join(outdir, name), text)
    if doc:
        path, begin, end, text_of = doc
        try:
            refresh_doc(path, begin, end, text_of(data))
        except InputError as e:
            return fail(prog, e, bad_input)
    if plots is None:
        return 0
    try:
        plt = pyplot()
    except ImportError as e:
        return fail(prog, f"matplotlib missing ({e}): the tables are in {outdir}, no plots "
                    "(Debian: apt install python3-matplotlib)", NO_MATPLOTLIB)
    for path in plots(data, plt):
        print(f"{prog}: wrote {path}")
    return 0
