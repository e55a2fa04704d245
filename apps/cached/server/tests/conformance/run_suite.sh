#!/usr/bin/env bash
# run_suite.sh TSYNC_CACHED SRC_CACHE_DIR - ctest cached_conformance_suite: memcached
# 1.6.18's own t/*.t (fetched by scripts/memcached-source.sh) run first against stock
# memcached, proving suite_files.txt, then against tsync-cached; both must pass the
# files listed "run" (see memcached_suite.py).
#
# The stock memcached pass proves the list, and its outcome depends only on the memcached
# binary, the suite's files, the list and the harness. So it runs once per combination:
# a pass leaves a stamp named by a hash of all four in SRC_CACHE_DIR (the build tree), and
# a later run with the same four skips it. TSYNC_CONFORMANCE_REFERENCE=always runs it
# every time. tsync-cached's pass always runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../../.." && pwd)
bin=${1:?usage: $0 TSYNC_CACHED SRC_CACHE_DIR}
cache=${2:?usage: $0 TSYNC_CACHED SRC_CACHE_DIR}
src=$(bash "$root/scripts/memcached-source.sh" "$cache")
mc=${MEMCACHED:-$(command -v memcached || echo /usr/bin/memcached)}
status=0

mc_version=$("$mc" -V 2>&1 | head -n 1 || true)
key=$( {
	echo "$mc_version"
	sha256sum "$mc" | cut -d' ' -f1
	sha256sum "$here/suite_files.txt" "$here/memcached_suite.py" | cut -d' ' -f1
	(cd "$src" && find t -type f -print0 | sort -z | xargs -0 sha256sum)
} | sha256sum | cut -c1-16)
stamp="$cache/reference-pass.$key"
if [ -f "$stamp" ] && [ "${TSYNC_CONFORMANCE_REFERENCE:-}" != always ]; then
	echo "memcached: reference pass skipped: it passed on $(cat "$stamp") with this binary" \
		"($mc_version), the same t/ files, list and harness (stamp $stamp;" \
		"TSYNC_CONFORMANCE_REFERENCE=always runs it again)"
elif python3 "$here/memcached_suite.py" --server "$mc" --server-kind memcached --src "$src" --check; then
	rm -f "$cache"/reference-pass.*
	date -u +%Y-%m-%dT%H:%M:%SZ >"$stamp"
else
	status=1
fi
python3 "$here/memcached_suite.py" --server "$bin" --server-kind tsync --src "$src" --check || status=1
exit $status
