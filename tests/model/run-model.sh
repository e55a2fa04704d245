#!/bin/sh
# tests/model/run-model.sh - check one Promela model with spin (tests/model/README.md).
#   run-model.sh <model.pml> pass|fail [spin -D options ...]
# Generates the verifier (spin -a), compiles pan.c (-O2 -DSAFETY: safety properties,
# assertions and invalid end states), runs ./pan in a private temporary directory and
# checks "errors: 0" (pass: the model holds) or errors > 0 (fail: the mutant is caught).
# Environment: SPIN (default spin), CC (default cc), PAN_MEM_MB (default 1024).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 model.pml pass|fail [-DNAME ...]" >&2; exit 2; }
model=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
expect=$2
shift 2
spin=${SPIN:-spin}
cc=${CC:-cc}
dir=$(mktemp -d "${TMPDIR:-/tmp}/tsync-model.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cp "$model" model.pml
"$spin" -o1 -a "$@" model.pml >spin.log 2>&1 || { cat spin.log; echo "FAIL: spin -a"; exit 1; }
"$cc" -w -O2 -DSAFETY -DMEMLIM="${PAN_MEM_MB:-1024}" -o pan pan.c || { echo "FAIL: cc pan.c"; exit 1; }
./pan -m200000 >pan.out 2>&1 || true
grep -E "assertion violated|invalid end state|errors:|states, stored|transitions|elapsed|out of memory|max search depth too small|MEMLIM|Search not completed" pan.out || true
errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | head -1)
# Without an error, an incomplete search proves nothing (pan says "reached -DMEMLIM
# bound" and "Search not completed" when the memory limit stops it; it also stops, with
# the same words, at the first error, which is a result).
if [ "${errors:-0}" -eq 0 ] && grep -qE "out of memory|max search depth too small|Search not completed" pan.out; then
	echo "FAIL: the search was not complete"; exit 1
fi
[ -n "$errors" ] || { cat pan.out; echo "FAIL: no pan result"; exit 1; }
case $expect in
pass) [ "$errors" -eq 0 ] && { echo "PASS: $(basename "$model") $* holds"; exit 0; }
      echo "FAIL: $(basename "$model") $*: counterexample found"
      "$spin" -o1 -t -p -g "$@" model.pml 2>&1 | tail -40; exit 1 ;;
fail) [ "$errors" -gt 0 ] && { echo "PASS: $(basename "$model") $* caught"; exit 0; }
      echo "FAIL: $(basename "$model") $*: mutant not caught"; exit 1 ;;
*) echo "bad expectation $expect" >&2; exit 2 ;;
esac
