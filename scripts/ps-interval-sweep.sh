#!/usr/bin/env bash
# scripts/ps-interval-sweep.sh BUILD_DIR PYTHON OUT_DIR - what ps's read interval
# (ps_config.read_interval_ns, docs/design.md §2.5) trades: tsync-bench smr for ps alone
# at 0, 10 and 50 % updates, one thread and two (THREADS overrides), at each interval
# of INTERVALS_US (default 10,50,200,1000; 50 is the library's default), in interleaved
# repeats (REPEATS, default 3: this VM is bimodal). Writes OUT_DIR/sweep.csv (one row per
# run: interval_us, repeat, then tsync-bench smr's columns), OUT_DIR/table.md (medians)
# and OUT_DIR/COMMAND.txt. Part of `make bench`'s smr suite (scripts/bench-suite.sh).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR PYTHON OUT_DIR}
py=${2:?usage: $0 BUILD_DIR PYTHON OUT_DIR}
out=${3:?usage: $0 BUILD_DIR PYTHON OUT_DIR}
intervals=${INTERVALS_US:-10,50,200,1000}
repeats=${REPEATS:-3}
threads=${THREADS:-1,2}
bin=$build/tsync-bench
[ -x "$bin" ] || { echo "ps-interval-sweep: no $bin" >&2; exit 1; }
mkdir -p "$out"
args=(smr -m ps -t "$threads" -u 0,10,50 --lat-every 1000 --seconds 1)
start=$(date +%s)
{
	echo "command:   for each repeat 1..$repeats, for each interval I in $intervals:"
	echo "           TSYNC_BENCH_PS_READ_INTERVAL_US=I $bin ${args[*]} -c -"
	echo "           then $py bench/smr/ps_interval_table.py $out/sweep.csv > $out/table.md"
	echo "commit:    $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
	echo "machine:   $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
	echo "started:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$out/COMMAND.txt"
csv=$out/sweep.csv
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
header=""
: > "$tmp"
for ((r = 1; r <= repeats; r++)); do
	for iv in ${intervals//,/ }; do
		echo "ps-interval-sweep: repeat $r, interval $iv us" >&2
		TSYNC_BENCH_PS_READ_INTERVAL_US=$iv "$bin" "${args[@]}" -c - 2>/dev/null > "$tmp.run"
		[ -n "$header" ] || header="interval_us,repeat,$(head -1 "$tmp.run")"
		tail -n +2 "$tmp.run" | sed "s/^/$iv,$r,/" >> "$tmp"
	done
done
rm -f "$tmp.run"
{ echo "$header"; cat "$tmp"; } > "$csv"
"$py" "${0%/*}/../bench/smr/ps_interval_table.py" "$csv" > "$out/table.md"
echo "elapsed:   $(($(date +%s) - start)) s" >> "$out/COMMAND.txt"
echo "ps-interval-sweep: wrote $csv and $out/table.md"
