#!/usr/bin/env bash
# scripts/check-install.sh PREFIX - check an installed tsync the way a user would use it.
#
# Checks that the documentation is installed (README.md, LICENSE and docs/*.md under
# <datadir>/doc/tsync, with the examples; not docs/results/), then builds the INSTALLED copy
# of examples/ (a standalone project) against the tsync installed under PREFIX twice:
#   1. CMake: find_package(tsync) with CMAKE_PREFIX_PATH=PREFIX, linking tsync::tsync and
#      tsync::tsync_static;
#   2. pkg-config: examples/Makefile.pkgconfig with PKG_CONFIG_PATH=PREFIX/.../pkgconfig;
# and runs every example binary. Used by `make test` (step test-install).
set -euo pipefail
prefix=${1:?usage: $0 PREFIX}
prefix=$(cd "$prefix" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/tsync-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT

run() {
	echo "+ $*"
	"$@"
}
run_example() { # run_example BINARY: run it (bounded), fail loudly on a non-zero exit
	local bin=$1
	[ -x "$bin" ] || { echo "check-install: $bin was not built" >&2; exit 1; }
	echo "+ $bin"
	if ! timeout 120 "$bin"; then
		echo "check-install: $bin failed" >&2
		exit 1
	fi
}

echo "check-install: tsync installed under $prefix"
# every public header of the source tree (install(DIRECTORY include/tsync)), as it is there
for h in "$root"/include/tsync/*.h; do
	f=include/tsync/$(basename "$h")
	cmp -s "$h" "$prefix/$f" || { echo "check-install: $prefix/$f missing or not the source tree's" >&2; exit 1; }
done

# ---- 0. documentation and examples under <datadir>/doc/tsync ------------------------
# CMakeLists.txt installs them to ${CMAKE_INSTALL_DATADIR}/doc/tsync (share/doc/tsync
# unless configured otherwise): README.md, LICENSE, docs/*.md, and examples/ (its sources,
# CMakeLists.txt and Makefile.pkgconfig); every such file of the source tree must be there.
readme=$(find "$prefix" -path '*/doc/tsync/README.md' | head -n 1)
[ -n "$readme" ] || { echo "check-install: no doc/tsync/README.md under $prefix" >&2; exit 1; }
docdir=$(dirname "$readme")
want=(README.md LICENSE)
for f in "$root"/docs/*.md; do want+=("docs/$(basename "$f")"); done
for f in "$root"/examples/*.c "$root"/examples/*.h "$root"/examples/*.cpp "$root"/examples/CMakeLists.txt "$root"/examples/Makefile.pkgconfig; do
	want+=("examples/$(basename "$f")")
done
for f in "${want[@]}"; do
	cmp -s "$root/$f" "$docdir/$f" ||
		{ echo "check-install: $docdir/$f missing or not the source tree's $f" >&2; exit 1; }
done
if [ -e "$docdir/docs/results" ]; then
	echo "check-install: $docdir/docs/results installed (the measured data stay in the source tree)" >&2
	exit 1
fi
echo "check-install: ${#want[@]} documentation and example files under $docdir"
examples=$docdir/examples

# ---- 1. CMake find_package ------------------------------------------------------------
run cmake -S "$examples" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTSYNC_EXAMPLES_WERROR=ON >"$work/cmake.log" ||
	{ cat "$work/cmake.log"; exit 1; }
found=$(sed -n 's/^tsync_DIR:PATH=//p' "$work/cmake/CMakeCache.txt")
case "$found" in
	"$prefix"/*) echo "check-install: find_package(tsync) used $found" ;;
	*) echo "check-install: find_package(tsync) found '$found', not the package under $prefix" >&2
	   exit 1 ;;
esac
run cmake --build "$work/cmake" -j "$jobs"
for ex in rcu_list node_lock ns_fd call_malloc worker_pool rcu_list_static; do
	run_example "$work/cmake/$ex"
done
run_example "$work/cmake/hash_map"
run_example "$work/cmake/cxx_map" # C++17
run_example "$work/cmake/ps_hash_kv"

# ---- 2. pkg-config --------------------------------------------------------------------
pc=$(find "$prefix" -name tsync.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || { echo "check-install: no tsync.pc under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
# Compare real paths: a relocatable tsync.pc (prefix=${pcfiledir}/../..) is fine too.
pc_prefix=$(pkg-config --variable=prefix tsync)
if [ "$(cd "$pc_prefix" 2>/dev/null && pwd -P)" != "$(cd "$prefix" && pwd -P)" ]; then
	echo "check-install: $pc says prefix=$pc_prefix, but it was installed under $prefix" >&2
	exit 1
fi
echo "check-install: pkg-config --cflags --libs tsync: $(pkg-config --cflags --libs tsync)"
run make -s -f "$examples/Makefile.pkgconfig" O="$work/pc" EXTRA_CFLAGS=-Werror
for ex in rcu_list node_lock ns_fd call_malloc worker_pool; do
	run_example "$work/pc/$ex"
done
run_example "$work/pc/hash_map"
run_example "$work/pc/cxx_map" # C++17
run_example "$work/pc/ps_hash_kv"
echo "check-install: ok (docs installed; CMake find_package and pkg-config builds of the installed examples/ ran)"
