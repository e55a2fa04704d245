#!/usr/bin/env bash
# run_suite.sh TSYNC_CACHED SRC_CACHE_DIR - ctest cached_conformance_suite: memcached
# 1.6.18's own t/*.t (fetched by scripts/memcached-source.sh) run first against stock
# memcached, proving suite_files.txt, then against tsync-cached; both must pass the
# files listed "run" (see memcached_suite.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../../.." && pwd)
bin=${1:?usage: $0 TSYNC_CACHED SRC_CACHE_DIR}
cache=${2:?usage: $0 TSYNC_CACHED SRC_CACHE_DIR}
src=$(bash "$root/scripts/memcached-source.sh" "$cache")
mc=${MEMCACHED:-$(command -v memcached || echo /usr/bin/memcached)}
status=0
python3 "$here/memcached_suite.py" --server "$mc" --server-kind memcached --src "$src" --check || status=1
python3 "$here/memcached_suite.py" --server "$bin" --server-kind tsync --src "$src" --check || status=1
exit $status
