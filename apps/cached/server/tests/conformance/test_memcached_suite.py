"""pytest for memcached_suite.py's known-race rule: only the exact failure re-runs."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memcached_suite as ms  # noqa: E402

TOUCH_BLOCK = b"\n".join([
    b"ok 2188 - Flags is set properly",
    b"ok 2189 - toast2 = toast2",
    b"ok 2190 - Expected read length",
    b"ok 2191 - Got proper response magic",
    b"ok 2192 - Expected read length",
    b"ok 2193 - Got proper response magic",
    b"ok 2194 - Expected opaque",
    b"Memcache Error (1): Not found at t/binary.t line 661.",
    b"# Looks like your test exited with 255 just after 2194.",
])


def result(out, rc=255, notok=0, passed=False):
    return dict(out=out, rc=rc, notok=notok, passed=passed, ok=2194, why="perl exit 255")


# the same race at the section's GAT (set 'toast2' with a 1 s expiry, then GAT) and at
# its first touch (right after the section's flush): seen under load-hunt
GAT_BLOCK = b"\n".join([
    b"ok 2177 - Flags is set properly",
    b"ok 2178 - toast = toast",
    b"ok 2179 - Expected read length",
    b"ok 2180 - Got proper response magic",
    b"ok 2181 - Expected read length",
    b"ok 2182 - Got proper response magic",
    b"ok 2183 - Expected opaque",
    b"Memcache Error (1): Not found",
    b"# Looks like your test exited with 255 just after 2183.",
])
FIRST_TOUCH_BLOCK = b"\n".join([
    b"ok 2166 - Expected error state of 'exists' (2)",
    b"ok 2167 - Expected read length",
    b"ok 2168 - Got proper response magic",
    b"ok 2169 - Expected read length",
    b"ok 2170 - Got proper response magic",
    b"Memcache Error (1): Not found",
])


def test_touch_race_is_recognised():
    assert ms.known_race("binary.t", result(TOUCH_BLOCK)) is not None
    assert ms.known_race("binary.t", result(GAT_BLOCK)) is not None
    assert ms.known_race("binary.t", result(FIRST_TOUCH_BLOCK)) is not None
    # the GAT's race with another error is a failure
    assert ms.known_race("binary.t", result(
        GAT_BLOCK.replace(b"Memcache Error (1)", b"Memcache Error (5)"))) is None


def test_other_files_and_failures_are_not():
    assert ms.known_race("noreply.t", result(TOUCH_BLOCK)) is None
    assert ms.known_race("binary.t", result(TOUCH_BLOCK, rc=1)) is None
    assert ms.known_race("binary.t", result(TOUCH_BLOCK, notok=1)) is None
    assert ms.known_race("binary.t", result(TOUCH_BLOCK, rc=0, passed=True)) is None
    # another error (EXISTS), or NOT_FOUND far from the touch test, is a failure
    assert ms.known_race("binary.t", result(
        TOUCH_BLOCK.replace(b"Memcache Error (1)", b"Memcache Error (2)"))) is None
    far = b"\n".join([b"ok %d - x" % i for i in range(1, 20)] +
                     [b"ok 20 - toast2 = toast2"] +
                     [b"ok %d - y" % i for i in range(21, 40)] +
                     [b"Memcache Error (1): Not found at t/binary.t line 661."])
    assert ms.known_race("binary.t", result(far)) is None


REUSE = b"\n".join([b"ok %d - stored key%d" % (i + 1, i) for i in range(20)] +
                   [b"not ok 21 - Memory grows..",
                    b"#   Failed test 'Memory grows..'",
                    b"# Looks like you failed 1 test of 21."])


def test_reuse_race_is_recognised():
    r = dict(out=REUSE, rc=1, notok=1, ok=20, passed=False)
    assert ms.known_race("issue_14.t", r) is not None
    # a store that failed, or the check in another file, is a failure
    assert ms.known_race("issue_14.t", dict(r, ok=19, notok=2)) is None
    assert ms.known_race("issue_14.t", dict(r, out=REUSE.replace(b"not ok 21 - Memory",
                                                                 b"not ok 21 - Other"))) is None
    assert ms.known_race("binary.t", r) is None


def test_run_file_reruns_once_and_says_why(monkeypatch):
    calls = []

    def fake(name, args, shim, timeout):
        calls.append(name)
        if len(calls) == 1:
            return dict(result(TOUCH_BLOCK), name=name)
        return dict(name=name, ok=5594, notok=0, plan=5594, passed=True, why="", out=b"",
                    rc=0)

    monkeypatch.setattr(ms, "run_file_once", fake)
    r = ms.run_file("binary.t", None, None, 1)
    assert calls == ["binary.t", "binary.t"]
    assert r["passed"] and "run again" in r["why"]


def test_the_same_race_twice_fails(monkeypatch):
    monkeypatch.setattr(ms, "run_file_once",
                        lambda name, args, shim, timeout: dict(result(TOUCH_BLOCK), name=name))
    r = ms.run_file("binary.t", None, None, 1)
    assert not r["passed"] and "run again" in r["why"]
