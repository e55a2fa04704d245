#!/usr/bin/env bash
# apps/cached/server/tests/run_memccapable.sh SERVER MEMCCAPABLE
# Start tsync-cached on 127.0.0.1, run libmemcached's memccapable against it (27 ASCII + 27
# binary tests), stop the server with SIGTERM and require a clean exit.
# Fails unless memccapable reports "All tests passed" with 54 [pass] lines.
# The server listens on a port the kernel picks (-p -1) and writes it to
# $MEMCACHED_PORT_FILENAME once it listens, as memcached does: no port is guessed, so none
# can be taken by another process between the guess and the bind.
set -u
server=$1
capable=$2
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT

MEMCACHED_PORT_FILENAME="$out/port" "$server" -l 127.0.0.1 -p -1 -t 2 -m 64 \
  >"$out/server.log" 2>&1 &
pid=$!
# a hang fails with a message after 120 s; nothing here is timed
for _ in $(seq 1 12000); do
  [ -e "$out/port" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    echo "$server exited $? before listening"; cat "$out/server.log"; pid=; exit 1
  fi
  sleep 0.01
done
port=$(sed -n 's/^TCP INET6\{0,1\}: \([0-9]*\)$/\1/p' "$out/port" 2>/dev/null)
if [ -z "$port" ]; then
  echo "$server never wrote its port"; cat "$out/server.log"; exit 1
fi

timeout 240 "$capable" -h 127.0.0.1 -p "$port" >"$out/capable.log" 2>&1
rc=$?
cat "$out/capable.log"
npass=$(grep -c '\[pass\]' "$out/capable.log")
kill -TERM "$pid"
wait "$pid"
src=$?
pid=
echo "memccapable exit $rc, $npass passed; server exit $src"
cat "$out/server.log"
[ "$rc" -eq 0 ] && [ "$npass" -eq 54 ] && grep -q 'All tests passed' "$out/capable.log" && [ "$src" -eq 0 ]
