"""docs/rt-analysis.md's results block is generated from docs/results/rt/analysis/
(`tsync-rta docs-check`); a number edited by hand, or data regenerated without the docs,
fails here."""
import re
import shutil

import pytest

from tsync_rta import docs


def test_docs_block_matches_committed_data():
    diff = docs.check()
    assert diff == [], "\n".join(diff) + "\nrun: tsync-rta docs-check --write"


def test_the_block_quotes_the_data():
    body = docs.generate()
    import json
    d = json.loads((docs.RESULTS / "validate" / "validate-rt.json").read_text())
    assert f"α_max {d['measured']['alpha_ns_max'] / 1000:.1f} µs" in body
    assert f"peak_pending = {d['peak_pending']} ≤ {d['G_star_objects']}" in body


def test_a_hand_edited_number_is_caught(tmp_path):
    doc = tmp_path / "rt-analysis.md"
    shutil.copy(docs.DOC, doc)
    text = doc.read_text()
    head, body, tail = docs._split(text)
    # change the first number of the generated block by one digit
    m = re.search(r"\d+\.\d", body)
    assert m, "the block quotes numbers"
    old = m.group(0)
    new = old[:-1] + str((int(old[-1]) + 1) % 10)
    doc.write_text(head + "\n" + body.replace(old, new, 1) + "\n" + tail)
    assert docs.check(doc) != []
    assert docs.write(doc) is True and docs.check(doc) == []


def test_missing_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("no block\n")
    with pytest.raises(ValueError):
        docs.check(doc)
