"""tests/docs/test_api_docs.py - docs that cannot drift (ctest: docs_api, label docs).

test_tree_*: every public function and macro of include/tsync/*.h is in docs/api.md,
and every header is in api.md's module table and README.md's API map (check_api_docs.py
says how each is found). The other tests feed the checker small fake headers and docs and
show that it finds each declaration shape the headers use and that it fails when a name,
a table row or a map entry is missing: a checker that cannot fail checks nothing.
"""
import pathlib
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_api_docs as cad  # noqa: E402

# ---- the real tree ----------------------------------------------------------------------


def test_tree_docs_complete():
    headers, problems = cad.check_tree(cad.ROOT)
    assert len(headers) >= 15, "include/tsync/*.h not found under %s" % cad.ROOT
    assert problems == [], "\n" + "\n".join(problems)


def test_tree_parser_sees_the_known_api():
    """A parser that found nothing would pass the check above: anchor it on names each
    header is known to declare, one of each shape."""
    api = {}
    for p in (cad.ROOT / "include/tsync").glob("*.h"):
        api[p.name] = cad.header_api(p.read_text())
    funcs = set().union(*(f for f, _ in api.values()))
    macs = set().union(*(m for _, m in api.values()))
    # plain declarations, static inline definitions, #if-branch definitions
    assert {"ps_create", "ps_free", "ps_ns_alloc_extent", "oplog_log", "mvrlu_try_lock",
            "ps_enter", "tsync_thread_id", "tsync_arch_counter",
            "tsync_clock_before"} <= funcs
    # object-like and function-like macros; include guards are not API
    assert {"PS_CONFIG_INIT", "TSYNC_THREADS_MAX", "OPLOG_OP_INIT", "TSYNC_LIKELY"} <= macs
    assert "TSYNC_PS_H" not in macs and "TSYNC_THREAD_H" not in macs
    # internal names and function-pointer typedefs are not API
    assert not {n for n in funcs | macs if "__" in n}
    assert "ps_mem_grace_fn" not in funcs and "oplog_counter_release_fn" not in funcs
    # every header accounted for, the umbrella header too (it declares nothing)
    assert api["tsync.h"] == (set(), set())
    assert len(funcs) > 150


# ---- the parser on fake headers ---------------------------------------------------------

FAKE_HEADER = textwrap.dedent(r"""
    /* fake.h - every shape.  int in_comment(void); */
    #ifndef FAKE_H
    #define FAKE_H
    #include <stdint.h>
    #ifdef __cplusplus
    extern "C" {
    #endif
    #define FAKE_CONST 64u
    #define FAKE_INIT {sizeof(struct fake_cfg), 0}
    #define FAKE_MAX(a, b) \
            ((a) > (b) ? (a) : (b))
    #define FAKE__INTERNAL 1
    struct fake_cfg {
            int size;
            void (*hook)(int x); /* a member, not a function */
    };
    enum fake_mode { FAKE_A, FAKE_B = 2 };
    typedef void (*fake_fn)(struct fake_cfg *c, void *arg);
    typedef int fake_int;
    extern _Thread_local unsigned fake__tid __attribute__((tls_model("initial-exec")));
    extern int fake_variable;
    void (*fake_fn_pointer)(int);
    int fake__slow(void) __attribute__((cold, noreturn));
    struct fake_cfg *fake_create(const struct fake_cfg *cfg,
                                 unsigned flags,   // a line comment
                                 void *arg);
    __attribute__((warn_unused_result)) int
    fake_attr_first(void);
    int fake_attr_last(int x) __attribute__((nonnull(1)));
    static inline __attribute__((always_inline)) uint64_t fake_inline(struct fake_cfg *c)
    {
            if (c->size) {
                    int not_a_function(int);
                    return (uint64_t)fake_variable;
            }
            return "}{;"[0];
    }
    #if defined(__x86_64__)
    static inline void fake_arch(void) { __asm__ volatile("pause"); }
    #else
    static inline void fake_arch(void) {}
    static inline void fake_generic_only(void) {}
    #endif
    static const struct fake_cfg fake_default = {sizeof(struct fake_cfg), 0};
    _Static_assert(sizeof(int) >= 2, "int");
    #ifdef __cplusplus
    }
    #endif
    #endif /* FAKE_H */
    """)

FAKE_FUNCS = {"fake_create", "fake_attr_first", "fake_attr_last", "fake_inline",
              "fake_arch", "fake_generic_only"}
FAKE_MACROS = {"FAKE_CONST", "FAKE_INIT", "FAKE_MAX"}


def test_parser_finds_every_shape():
    funcs, macs = cad.header_api(FAKE_HEADER)
    assert funcs == FAKE_FUNCS
    assert macs == FAKE_MACROS


@pytest.mark.parametrize("internal", ["fake__slow", "fake__tid", "FAKE__INTERNAL"])
def test_parser_skips_internal(internal):
    funcs, macs = cad.header_api(FAKE_HEADER)
    assert internal not in funcs | macs


# ---- the check on fake docs -------------------------------------------------------------

def fake_api_md(names, headers=("fake.h",)):
    rows = "".join("| fake | `<tsync/%s>` | — |\n" % h for h in headers)
    body = "\n".join("- `%s(x)`: does a thing." % n for n in sorted(names))
    return ("# API\n\n| module | header | paper |\n| --- | --- | --- |\n%s\n%s\n"
            % (rows, body))


def fake_readme(headers=("fake.h",)):
    return ("# r\n\n## API map\n\n| header | functions |\n| --- | --- |\n%s\n"
            "## Using it\n\n`<tsync/later.h>` is not in the map\n"
            % "".join("| `<tsync/%s>` | ... |\n" % h for h in headers))


ALL = FAKE_FUNCS | FAKE_MACROS


def test_check_passes_when_complete():
    assert cad.check({"fake.h": FAKE_HEADER}, fake_api_md(ALL), fake_readme()) == []


@pytest.mark.parametrize("missing", sorted(ALL))
def test_check_fails_on_a_missing_name(missing):
    problems = cad.check({"fake.h": FAKE_HEADER}, fake_api_md(ALL - {missing}),
                         fake_readme())
    assert len(problems) == 1 and " %s of <tsync/fake.h>" % missing in problems[0]


@pytest.mark.parametrize("mention", [
    "fake_create without backticks",             # prose, not a code span
    "`fake_create_other()`",                     # another name with the same prefix
    "`struct fake_create`",                      # a span that is not the name
    "```c\nfake_create(cfg, 0, NULL);\n```",     # a fenced code block, not a span
])
def test_check_wants_a_code_span_of_the_name(mention):
    md = fake_api_md(ALL - {"fake_create"}) + "\n" + mention + "\n"
    problems = cad.check({"fake.h": FAKE_HEADER}, md, fake_readme())
    assert [p for p in problems if "fake_create " in p], problems


@pytest.mark.parametrize("span", ["`fake_create`", "`fake_create(cfg, flags, arg)`",
                                  "``fake_create()``"])
def test_check_accepts_name_or_call(span):
    md = fake_api_md(ALL - {"fake_create"}) + "\nSee " + span + ".\n"
    assert cad.check({"fake.h": FAKE_HEADER}, md, fake_readme()) == []


def test_check_fails_on_a_header_missing_from_the_module_table():
    headers = {"fake.h": FAKE_HEADER, "other.h": "int other_fn(void);\n"}
    md = fake_api_md(ALL | {"other_fn"}, headers=("fake.h",))
    md += "\n`<tsync/other.h>` is mentioned in prose but not in the table.\n"
    problems = cad.check(headers, md, fake_readme(("fake.h", "other.h")))
    assert problems == ["docs/api.md: <tsync/other.h> is missing from the module table"]


def test_check_fails_on_a_header_missing_from_the_readme_map():
    headers = {"fake.h": FAKE_HEADER, "rlu.h": "", "mvrlu.h": ""}
    md = fake_api_md(ALL, headers=("fake.h", "rlu.h", "mvrlu.h"))
    # mvrlu.h in the map does not count for rlu.h; later.h outside the section does not
    # count at all
    problems = cad.check(headers, md, fake_readme(("fake.h", "mvrlu.h")))
    assert problems == ["README.md: rlu.h is missing from the API map"]


def test_check_fails_without_table_or_map():
    problems = cad.check({"fake.h": FAKE_HEADER}, "# API\n" + fake_api_md(ALL)
                         .split("| --- | --- | --- |\n| fake | `<tsync/fake.h>` | — |\n")[1],
                         "# r\n")
    assert any("no module table" in p for p in problems)
    assert any("no '## API map'" in p for p in problems)


def test_a_new_header_in_the_tree_is_checked(tmp_path):
    """The headers come from a glob: a header added later, with its functions, is
    checked without touching the checker; the script exits 1 and names what is missing."""
    (tmp_path / "include/tsync").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "include/tsync/fake.h").write_text(FAKE_HEADER)
    (tmp_path / "docs/api.md").write_text(fake_api_md(ALL))
    (tmp_path / "README.md").write_text(fake_readme())
    script = pathlib.Path(cad.__file__)
    ok = subprocess.run([sys.executable, str(script), "--root", str(tmp_path)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    (tmp_path / "include/tsync/added.h").write_text(
        "#ifndef ADDED_H\n#define ADDED_H\nvoid added_fn(int x);\n#endif\n")
    bad = subprocess.run([sys.executable, str(script), "--root", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "function added_fn of <tsync/added.h> is not documented" in bad.stdout
    assert "<tsync/added.h> is missing from the module table" in bad.stdout
    assert "added.h is missing from the API map" in bad.stdout


# ---- contract length --------------------------------------------------------------------

def test_tree_contracts_found():
    """The length check passes above only if it saw the contracts: anchor it on known
    ones, each shape (a function, an enum, a #define, a block of titled contracts)."""
    found = {}
    for p in (cad.ROOT / "include/tsync").glob("*.h"):
        for line, name, n in cad.contracts(p.read_text()):
            found[name] = max(found.get(name, 0), n)
    for name in ("ps_alloc", "ps_create", "ps_policy", "PS_READ_INTERVAL_NS",
                 "tsync_arch_counter_ordered", "tsync_arch_relax", "oplog_log"):
        assert 3 <= found.get(name, 0) <= cad.CONTRACT_MAX_LINES, (name, found.get(name))
    assert len(found) > 150


def fake_contract(lines, title="fake_do - does a thing."):
    body = [" * " + title, " *"] + [" * Progress:   line %d." % k for k in range(lines - 2)]
    return "/*\n" + "\n".join(body) + "\n */\nint fake_do(int x);\n"


@pytest.mark.parametrize("lines", [cad.CONTRACT_MAX_LINES, cad.CONTRACT_MAX_LINES + 1])
def test_check_fails_on_a_long_contract(lines):
    header = "/* fake.h - a header. */\n#ifndef F\n#define F\n" + fake_contract(lines)
    problems = cad.check({"fake.h": header}, fake_api_md({"fake_do"}), fake_readme())
    if lines <= cad.CONTRACT_MAX_LINES:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problems[0].startswith("include/tsync/fake.h:4: the contract of fake_do is "
                                      "%d lines" % lines)


def test_titled_contracts_count_apart():
    """A block with several titled contracts over an #if (as arch.h's) counts per title:
    two short ones pass together; one long one is named."""
    short = " * fake_a - one.\n *   Progress: x.\n *\n * fake_b - two.\n *   Progress: y.\n"
    long_b = " * fake_b - two.\n" + " *   Progress: y.\n" * cad.CONTRACT_MAX_LINES
    for body, want in ((short * 4, []), (short + long_b, ["fake_b"])):
        header = ("/* fake.h */\n#include <x.h>\n/*\n" + body +
                  " */\n#if X\nint fake_a(void);\n#endif\n")
        got = [n for _, n, k in cad.contracts(header) if k > cad.CONTRACT_MAX_LINES]
        assert got == want, cad.contracts(header)
