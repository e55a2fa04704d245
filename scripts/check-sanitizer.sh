#!/usr/bin/env bash
# scripts/check-sanitizer.sh CC thread|address
#
# Builds and runs a tiny two-thread program with -fsanitize=KIND so that a missing runtime
# (Debian's clang only *recommends* libclang-rt-14-dev) fails here with a clear message
# instead of as a link error deep in the build. Prints on stdout the command prefix the
# test run needs: empty, or `setarch ARCH -R` when the sanitizer cannot start with the
# kernel's address-space randomisation (clang 14's TSan with vm.mmap_rnd_bits > 28:
# "FATAL: ThreadSanitizer: unexpected memory mapping").
set -euo pipefail
cc=${1:?usage: $0 CC thread|address}
kind=${2:?usage: $0 CC thread|address}
case "$kind" in
	thread) flags=(-fsanitize=thread) ;;
	address) flags=(-fsanitize=address,undefined) ;;
	*) echo "check-sanitizer: unknown kind $kind" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tsync-san.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/t.c" <<'C'
#include <pthread.h>
#include <stdatomic.h>
static atomic_int x;
static void *run(void *a) { atomic_fetch_add(&x, 1); return a; }
int main(void)
{
	pthread_t t;
	if (pthread_create(&t, 0, run, 0)) return 1;
	atomic_fetch_add(&x, 1);
	pthread_join(t, 0);
	return atomic_load(&x) == 2 ? 0 : 1;
}
C
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "check-sanitizer: compiler '$cc' not found (apt-get install clang)" >&2
	exit 1
fi
if ! "$cc" -std=c11 -g "${flags[@]}" -pthread "$tmp/t.c" -o "$tmp/t" 2>"$tmp/err"; then
	cat "$tmp/err" >&2
	echo "check-sanitizer: '$cc ${flags[*]}' cannot build a program." >&2
	echo "  On Debian 12: apt-get install libclang-rt-14-dev (clang's sanitizer runtimes)." >&2
	exit 1
fi
if "$tmp/t" >"$tmp/out" 2>&1; then
	exit 0
fi
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R "$tmp/t" >/dev/null 2>&1; then
	echo "check-sanitizer: -fsanitize=$kind needs ASLR off here; tests run under setarch -R" >&2
	echo "setarch $(uname -m) -R"
	exit 0
fi
cat "$tmp/out" >&2
echo "check-sanitizer: a -fsanitize=$kind program built with $cc does not run on this machine" >&2
exit 1
