"""Make `tsync_rta` importable without installing it (`make test` runs
`/usr/bin/python3 -m pytest python` on the source tree)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)
