#!/usr/bin/env bash
# scripts/conformance-results.sh [BUILD_DIR] - run memcached 1.6.18's own test suite
# (apps/cached/server/tests/conformance) against stock memcached and tsync-cached, and
# write what each passed to docs/results/conformance/: memcached.txt and tsync.txt (one
# line per file), summary.md (the totals side by side) and COMMAND.txt (the command, the
# commit and the machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=$root/docs/results/conformance
mkdir -p "$out"
src=$(bash "$root/scripts/memcached-source.sh" "$build/memcached-src")
mc=${MEMCACHED:-$(command -v memcached || echo /usr/bin/memcached)}
py=$(command -v python3)
suite=$root/apps/cached/server/tests/conformance/memcached_suite.py
"$py" "$suite" --server "$mc" --server-kind memcached --src "$src" >"$out/memcached.txt" || true
"$py" "$suite" --server "$build/tsync-cached" --server-kind tsync --src "$src" >"$out/tsync.txt" || true
{
	echo "# memcached 1.6.18's t/*.t: stock memcached and tsync-cached, same harness"
	echo
	echo "One fresh server per file (\`-t 4 -m 64\`), files as listed in"
	echo "\`apps/cached/server/tests/conformance/suite_files.txt\` (skipped files are not run)."
	echo
	echo "| server | files passed | assertions ok | not ok |"
	echo "| --- | --- | --- | --- |"
	for k in memcached tsync; do
		tail -n 1 "$out/$k.txt" | sed -E 's/^([a-z]+): ([0-9]+) of ([0-9]+) files passed, ([0-9]+) assertions ok, ([0-9]+) not ok$/| \1 | \2 of \3 | \4 | \5 |/'
	done
	echo
	echo "Files not passed by tsync-cached:"
	echo
	grep '^FAIL' "$out/tsync.txt" | sed 's/^/- /' || echo "- none"
} >"$out/summary.md"
{
	echo "bash scripts/conformance-results.sh $build"
	echo "commit: $(git -C "$root" rev-parse HEAD)"
	echo "machine: $(uname -srm), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "memcached: $("$mc" -V 2>&1 | head -n 1)"
} >"$out/COMMAND.txt"
cat "$out/summary.md"
