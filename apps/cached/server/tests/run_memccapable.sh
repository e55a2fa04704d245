#!/usr/bin/env bash
# apps/cached/server/tests/run_memccapable.sh SERVER MEMCCAPABLE
# Start tsync-cached on a free port on 127.0.0.1, run libmemcached's memccapable against it
# (27 ASCII + 27 binary tests), stop the server with SIGTERM and require a clean exit.
# Fails unless memccapable reports "All tests passed" with 54 [pass] lines.
set -u
server=$1
capable=$2
out=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT

pid=
for attempt in 1 2 3 4 5 6 7 8; do
  port=$(( 20000 + (RANDOM % 30000) ))
  "$server" -l 127.0.0.1 -p "$port" -t 2 -m 64 >"$out/server.log" 2>&1 &
  pid=$!
  # ready when it accepts a connection; gone if the port was taken
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then pid=; break; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break 2; fi
    sleep 0.05
  done
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  pid=
done
if [ -z "$pid" ]; then
  echo "could not start $server"; cat "$out/server.log"; exit 1
fi

timeout 120 "$capable" -h 127.0.0.1 -p "$port" >"$out/capable.log" 2>&1
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
