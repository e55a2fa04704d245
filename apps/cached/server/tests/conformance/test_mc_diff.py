"""ctest cached_conformance_diff: mc_diff.py with fixed seeds against stock memcached.

Eight seeds x 20 sequences x 250 requests (40,000 requests, ~10 s); any difference not in
mc_diff.ALLOWED fails the test, with the request and both replies in the output."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.environ.get("TSYNC_CACHED", "")
MEMCACHED = os.environ.get("MEMCACHED") or shutil.which("memcached") or "/usr/bin/memcached"


@pytest.mark.parametrize("seed", range(1, 9))
def test_same_replies_as_memcached(seed):
    if not SERVER:
        pytest.skip("TSYNC_CACHED not set")
    if not os.path.exists(MEMCACHED):
        pytest.skip("stock memcached not installed")
    r = subprocess.run([sys.executable, os.path.join(HERE, "mc_diff.py"), "--tsync", SERVER,
                        "--memcached", MEMCACHED, "--seed", str(seed), "--sequences", "20",
                        "--requests", "250"], capture_output=True, text=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
