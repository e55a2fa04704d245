#!/usr/bin/env python3
"""tests/docs/check_api_docs.py - the public API in include/tsync/ against its docs.

Checks, for the tree it is given (default: this repository):

  1. every public function and public macro of every header include/tsync/*.h appears in
     docs/api.md as a code span: `name` or `name(...)`;
  2. every header include/tsync/*.h appears in api.md's module table (the table whose
     header row starts "| module | header |") as `<tsync/NAME.h>`;
  3. every header appears in README.md's "## API map" section (as NAME.h, e.g.
     `<tsync/ps_ns.h>` or a bare `oplog_list.h`);
  4. every contract is a short checklist: at most CONTRACT_MAX_LINES lines of comment
     (CONTRIBUTING.md, "Habits of the house"; the reasoning goes to docs/design.md §9).
     A contract is a block comment at column 0 directly above a file-scope declaration
     (a function, typedef, enum, struct or #define), or one that has a title line
     (" * name - what it does"); a block that holds several titled contracts (as
     arch.h's primitives, defined once per target below it) counts each title apart.

The headers are found by glob, so a header or function added later is checked without
touching this file. Standard library only: it runs as a script (prints what is missing,
exits 1) and is imported by test_api_docs.py (pytest, ctest test docs_api).

Public: declared in a header of include/tsync/ and not internal. Internal names contain a
double underscore (ps__slot, tsync__self, PS__DEPTH_MASK), as the headers' own rule says;
a header's include guard (#ifndef X / #define X) is not API either.

The parser is a small one for C declarations at file scope, not a C parser; it relies on
the headers being plain C11 (no macros that expand to declarations) and is tested on the
shapes they use (test_api_docs.py): multi-line declarations and definitions, GNU
__attribute__((...)) anywhere in a declaration, `static inline` definitions with bodies,
struct/enum/union definitions, typedefs (function-pointer ones included), extern
variables, `#if/#elif/#else` alternatives (every branch counts), extern "C" blocks.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Words that may precede '(' in a declaration without naming a function.
C_KEYWORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "_Bool", "bool", "struct", "union", "enum", "const", "volatile", "restrict",
    "static", "inline", "extern", "register", "_Thread_local", "_Atomic", "_Alignas",
    "_Alignof", "_Static_assert", "static_assert", "sizeof", "typeof", "__typeof__",
    "_Noreturn", "_Generic", "return", "if", "while", "for", "switch",
}


def is_internal(name):
    """Internal names contain a double underscore (tsync__self, ps__slot, PS__X)."""
    return "__" in name


# ---- header parsing -------------------------------------------------------------------

def strip_comments(text):
    """Drops /* */ and // comments, keeping string and character literals intact and
    every newline (so line-based preprocessor handling still works)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def logical_lines(text):
    """Joins backslash-continued lines (a multi-line #define is one line)."""
    return re.sub(r"\\\n", " ", text).split("\n")


def include_guard(lines):
    """The name of the header's include guard: the first #ifndef X directly followed by
    #define X, or None."""
    directives = [l.strip() for l in lines if l.strip().startswith("#")]
    for a, b in zip(directives, directives[1:]):
        m = re.match(r"#\s*ifndef\s+(\w+)\s*$", a)
        if m and re.match(r"#\s*define\s+%s\s*$" % re.escape(m.group(1)), b):
            return m.group(1)
    return None


def macros(lines):
    """Every macro #defined (object-like and function-like), include guard excepted."""
    guard = include_guard(lines)
    names = set()
    for l in lines:
        m = re.match(r"\s*#\s*define\s+(\w+)", l)
        if m and m.group(1) != guard:
            names.add(m.group(1))
    return names


def drop_cplusplus_blocks(text):
    """Removes `#ifdef __cplusplus ... #endif` (the extern "C" { and its }), which no C
    compiler sees."""
    return re.sub(r"^[ \t]*#[ \t]*ifdef[ \t]+__cplusplus\b.*?^[ \t]*#[ \t]*endif\b[^\n]*",
                  "", text, flags=re.S | re.M)


def drop_balanced(text, opener):
    """Removes every `opener(...)` with balanced parentheses, e.g. __attribute__((x(y)))."""
    out, i = [], 0
    for m in re.finditer(re.escape(opener) + r"\s*\(", text):
        if m.start() < i:
            continue  # inside one already removed
        depth, j = 0, m.end() - 1
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        out.append(text[i:m.start()])
        out.append(" ")
        i = j
    out.append(text[i:])
    return "".join(out)


def file_scope_chunks(code):
    """Splits preprocessed code (no comments, no directives) into file-scope chunks.

    Yields (head, has_body): head is the text of a declaration up to its ';', or of a
    definition up to its '{' (a function body is skipped, has_body=True). A struct, union
    or enum body, or an initialiser's braces, stays part of its chunk (they end at ';').
    """
    head, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if c == ";":
            yield "".join(head), False
            head = []
        elif c == "{":
            text = "".join(head)
            # A function definition: the head ends with its parameter list ')'.
            is_function = re.search(r"\)\s*$", drop_balanced(text, "__attribute__")) and \
                "=" not in text
            depth = 0
            j = i
            while j < n:  # to the matching '}'
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
                if depth == 0:
                    break
            if is_function:
                yield text, True
                head = []
            else:
                head.append(code[i:j])
            i = j
            continue
        else:
            head.append(c)
        i += 1
    if "".join(head).strip():
        yield "".join(head), False


def function_name(head):
    """The name a file-scope declaration or definition declares as a function, or None.

    `int f(void)`, `struct ps *ps_create(const struct ps_config *cfg)`, attributes
    anywhere: 'f', 'ps_create'. Not functions: typedefs (`typedef void (*fn)(int)`),
    variables (`extern int x`, `void (*hook)(int)`), struct/enum definitions.
    """
    head = drop_balanced(head, "__attribute__")
    head = drop_balanced(head, "_Alignas")
    head = re.sub(r"\[\[.*?\]\]", " ", head)          # C2x [[attributes]]
    head = re.sub(r"\{.*\}", " ", head, flags=re.S)    # struct/enum bodies
    head = head.strip()
    if not head or re.match(r"typedef\b", head):
        return None
    # The declarator: the identifier directly before the first '(' at paren depth 0.
    m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
    if not m or m.group(1) in C_KEYWORDS:
        return None  # no '(' (a variable), or `void (*ptr)(...)` (a function pointer)
    if head[:m.start()].count("(") != head[:m.start()].count(")"):
        return None
    return m.group(1)


def header_api(text):
    """(functions, macros) that a header's text declares, internal names excepted."""
    text = strip_comments(text)
    lines = logical_lines(text)
    names_macros = {n for n in macros(lines) if not is_internal(n)}
    text = drop_cplusplus_blocks("\n".join(lines))
    # Every #if/#elif/#else branch is kept (directives dropped), so a function defined
    # once per architecture is seen in each branch.
    code = "\n".join(l for l in text.split("\n") if not l.strip().startswith("#"))
    funcs = set()
    for head, _ in file_scope_chunks(code):
        name = function_name(head)
        if name and not is_internal(name):
            funcs.add(name)
    return funcs, names_macros


# ---- contract length -------------------------------------------------------------------

# "About a dozen lines" (CONTRIBUTING.md): the comment's lines between /* and */.
CONTRACT_MAX_LINES = 13

# A contract's title line: " * name - ..." or " * name, other_name - ...".
TITLE = re.compile(r"^ \* ([A-Za-z_]\w*)(?:, [A-Za-z_]\w*)* - ")


def contracts(text):
    """Every contract of a header: (line number of its first line, what it documents,
    its length in lines). See check 4 in the module's docstring."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("/*"):
            i += 1
            continue
        j = i
        while "*/" not in lines[j]:
            j += 1
        after = lines[j + 1] if j + 1 < len(lines) else ""
        code = after.strip() and not after.startswith((" ", "\t", "/", "#if", "#endif",
                                                        "#include", "#else", "#elif"))
        titled = any(TITLE.match(l) for l in lines[i:j + 1])
        if (code or titled) and i > 0:
            body = lines[i:j + 1]
            if body[0].strip() == "/*":
                body = body[1:]
            if body and body[-1].strip() == "*/":
                body = body[:-1]
            starts = [k for k, l in enumerate(body) if TITLE.match(l)]
            if len(starts) <= 1:
                m = re.match(r"#\s*define\s+(\w+)", after) or \
                    re.search(r"([A-Za-z_]\w*)\s*[({]|(\w+)\s*$", after)
                name = TITLE.match(body[starts[0]]).group(1) if starts else (
                    m.group(m.lastindex) if m else after.strip())
                out.append((i + 1, name, len(body)))
            else:
                ends = starts[1:] + [len(body)]
                for a, b in zip(starts, ends):
                    n = b - a
                    while n > 0 and body[a + n - 1].strip() == "*":
                        n -= 1  # the blank line before the next title
                    out.append((i + 1 + a, TITLE.match(body[a]).group(1), n))
        i = j + 1
    return out


# ---- docs parsing ---------------------------------------------------------------------

def code_spans(md):
    """The contents of every inline code span of a Markdown text (fenced code blocks are
    not spans and do not count)."""
    md = re.sub(r"^```.*?^```", "", md, flags=re.S | re.M)
    return [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", md, flags=re.S)]


def documented_names(md):
    """Names that appear as a code span `name` or `name(...)`."""
    names = set()
    for span in code_spans(md):
        m = re.fullmatch(r"([A-Za-z_]\w*)(\(.*\))?", span, flags=re.S)
        if m:
            names.add(m.group(1))
    return names


def module_table(md):
    """The rows of api.md's module table: the table whose header row starts
    '| module | header |'. Returns its text ('' if there is none)."""
    m = re.search(r"^\|\s*module\s*\|\s*header\s*\|.*?(?=^[^|]|\Z)", md, flags=re.S | re.M)
    return m.group(0) if m else ""


def section(md, title):
    """The text of the Markdown section '## title', up to the next '## ' ('' if none)."""
    m = re.search(r"^##\s+%s\s*$(.*?)(?=^##\s|\Z)" % re.escape(title), md, flags=re.S | re.M)
    return m.group(1) if m else ""


def mentions_header(text, header):
    """Does text name header (e.g. 'rlu.h'), not as part of another name ('mvrlu.h')?"""
    return re.search(r"(?<![\w.])%s(?!\w)" % re.escape(header), text) is not None


# ---- the check ------------------------------------------------------------------------

def check(headers, api_md, readme_md):
    """headers: {file name: text}. Returns a list of problems, each one line; [] if none."""
    problems = []
    documented = documented_names(api_md)
    table = module_table(api_md)
    api_map = section(readme_md, "API map")
    if not table:
        problems.append("docs/api.md: no module table (a row '| module | header | ...')")
    if not api_map:
        problems.append("README.md: no '## API map' section")
    for fname in sorted(headers):
        funcs, macs = header_api(headers[fname])
        for kind, names in (("function", funcs), ("macro", macs)):
            for name in sorted(names - documented):
                problems.append("docs/api.md: %s %s of <tsync/%s> is not documented "
                                "(no code span `%s` or `%s(...)`)"
                                % (kind, name, fname, name, name))
        if table and "<tsync/%s>" % fname not in table:
            problems.append("docs/api.md: <tsync/%s> is missing from the module table"
                            % fname)
        if api_map and not mentions_header(api_map, fname):
            problems.append("README.md: %s is missing from the API map" % fname)
        for line, name, n in contracts(headers[fname]):
            if n > CONTRACT_MAX_LINES:
                problems.append("include/tsync/%s:%d: the contract of %s is %d lines (at "
                                "most %d: move the reasoning to docs/design.md §9 and "
                                "link it)" % (fname, line, name, n, CONTRACT_MAX_LINES))
    return problems


def check_tree(root):
    headers = {p.name: p.read_text() for p in sorted((root / "include/tsync").glob("*.h"))}
    api_md = (root / "docs/api.md").read_text()
    readme_md = (root / "README.md").read_text()
    return headers, check(headers, api_md, readme_md)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=pathlib.Path, default=ROOT, help="the source tree")
    ap.add_argument("--list", action="store_true",
                    help="print every public name found, per header, and exit")
    args = ap.parse_args(argv)
    headers, problems = check_tree(args.root)
    if args.list:
        for fname in sorted(headers):
            funcs, macs = header_api(headers[fname])
            print("%s: functions %s; macros %s" % (fname, " ".join(sorted(funcs)),
                                                    " ".join(sorted(macs))))
        return 0
    for p in problems:
        print(p)
    if problems:
        print("check_api_docs: %d problem(s)" % len(problems), file=sys.stderr)
        return 1
    print("check_api_docs: ok (%d headers)" % len(headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
