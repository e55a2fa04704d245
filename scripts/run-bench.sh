#!/usr/bin/env bash
# scripts/run-bench.sh BUILD_DIR ARGS... - run BUILD_DIR/tsync-bench ARGS and, when ARGS
# name an output directory (--out DIR), write DIR/COMMAND.txt: the exact command line, the
# commit, and the machine it ran on (CPU count and model, kernel, OS, compiler), so that
# every result in docs/results/ says how it was made. Used by `make bench`
# (scripts/bench-suite.sh). With TSYNC_BENCH_APPEND=1 and DIR/COMMAND.txt present, only a
# further "command:" line is appended (several commands writing into one directory).
set -euo pipefail
build_dir=${1:?usage: $0 BUILD_DIR ARGS...}
shift
bin=""
for c in "$build_dir/tsync-bench" "$build_dir/bench/tsync-bench"; do
	if [ -x "$c" ]; then bin=$c; break; fi
done
if [ -z "$bin" ]; then
	echo "run-bench: no tsync-bench under $build_dir (configured with -DTSYNC_BUILD_BENCH=OFF?)" >&2
	exit 1
fi

# The results directory: --out DIR among ARGS, or TSYNC_BENCH_OUT for a subcommand that
# writes files named otherwise (rt: --json FILE).
out=${TSYNC_BENCH_OUT:-}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case "${args[i]}" in
		--out) out=${out:-${args[i + 1]:-}} ;;
		--out=*) out=${out:-${args[i]#--out=}} ;;
	esac
done

# Shell-quote only the words that need it, so the line reads like what was typed.
quote() {
	local a out=()
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./,:=+@%-]+$ ]]; then
			out+=("$a")
		else
			out+=("'${a//\'/\'\\\'\'}'")
		fi
	done
	echo "${out[*]}"
}
cmdline=$(quote "$bin" "$@")
echo "+ $cmdline"
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# A subcommand may write DIR/COMMAND.txt itself (rt-cache: how its threads were
# scheduled, the clock): keep those lines, below ours.
own=""
if [ -n "$out" ] && [ "${TSYNC_BENCH_APPEND:-0}" != 1 ]; then rm -f "$out/COMMAND.txt"; fi
[ -z "$out" ] || [ ! -f "$out/COMMAND.txt" ] || own=$(cat "$out/COMMAND.txt")
t0=$SECONDS
"$bin" "$@"
elapsed=$((SECONDS - t0))

[ -n "$out" ] || exit 0
mkdir -p "$out"
wrote=""
if [ -f "$out/COMMAND.txt" ] && [ "$(cat "$out/COMMAND.txt")" != "$own" ]; then
	wrote=$(cat "$out/COMMAND.txt")
	[ -z "$own" ] || printf '%s\n' "$own" >"$out/COMMAND.txt"
fi
# A further command writing into the same directory (scripts/bench-suite.sh): one more line.
if [ "${TSYNC_BENCH_APPEND:-0}" = 1 ] && [ -f "$out/COMMAND.txt" ]; then
	echo "command:   $cmdline   (started $start, ${elapsed} s)" >>"$out/COMMAND.txt"
	[ -z "$wrote" ] || sed 's/^/           /' <<<"$wrote" >>"$out/COMMAND.txt"
	echo "run-bench: appended to $out/COMMAND.txt"
	exit 0
fi
cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -p)
tscflags=$(grep -o -w -E 'constant_tsc|nonstop_tsc|tsc_reliable' /proc/cpuinfo 2>/dev/null |
	sort -u | paste -sd ' ' - || true)
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
ccpath=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
cc=$("${ccpath:-cc}" --version 2>/dev/null | head -n 1 || true)
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
commit=$(git rev-parse HEAD 2>/dev/null || echo "none (no commit yet)")
if git rev-parse --verify -q HEAD >/dev/null 2>&1 &&
	{ ! git diff-index --quiet HEAD -- . ':(exclude)docs/results' ':(exclude)README.md' 2>/dev/null ||
	  [ -n "$(git ls-files --others --exclude-standard -- . ':(exclude)docs/results' 2>/dev/null | head -n 1)" ]; }; then
	commit="$commit (with uncommitted changes)"
fi
{
	echo "# How the results in this directory were produced (written by scripts/run-bench.sh)"
	echo "command:   $cmdline"
	[ -z "${MAKELEVEL:-}" ] || echo "via:       make bench"
	echo "started:   $start"
	echo "elapsed:   ${elapsed} s"
	echo "commit:    $commit"
	echo "build:     ${btype:-?}, $cc"
	echo "nproc:     $(nproc) (online CPUs: $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo ?))"
	echo "cpu:       ${cpu:-unknown}"
	echo "tsc flags: ${tscflags:-none reported}"
	echo "memory:    ${mem:-unknown}"
	echo "kernel:    $(uname -srvm)"
	echo "os:        ${os:-unknown}"
	[ -z "$wrote" ] || { echo "tsync-bench wrote:"; sed 's/^/           /' <<<"$wrote"; }
} >"$out/COMMAND.txt"
echo "run-bench: wrote $out/COMMAND.txt"
