#!/usr/bin/env bash
# scripts/check-format.sh [--fix] - the C and C++ sources against .clang-format.
#
# Without --fix (`make test-format`, a step of `make test`): lists every file clang-format
# would change, with the first lines it would change, and fails if there is one. With --fix
# (`make format`): rewrites them. Only clang-format 14 is used (Debian 12's clang-format-14):
# another major version lays out some constructs differently and would flag files that
# are formatted.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
[ "${1:-}" != --fix ] || fix=1

cf=
for c in clang-format-14 clang-format; do
	if command -v "$c" >/dev/null 2>&1 &&
		"$c" --version | grep -qE 'version 14\.'; then
		cf=$c
		break
	fi
done
if [ -z "$cf" ]; then
	echo "format: clang-format 14 not found (make deps installs clang-format-14)" >&2
	exit 1
fi

# The tracked sources; outside a git checkout (a release tarball), every source below the
# top directory except build trees.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cpp')
else
	mapfile -t files < <(find . -path './build*' -prune -o -path './.venv' -prune -o \
		-type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print | sed 's|^\./||' |
		sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
	echo "format: no sources found" >&2
	exit 1
fi

if [ "$fix" = 1 ]; then
	printf '%s\0' "${files[@]}" | xargs -0 "$cf" -i --style=file
	echo "format: ${#files[@]} files formatted with $cf"
	exit 0
fi

bad=()
for f in "${files[@]}"; do
	if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
		bad+=("$f")
	fi
done
if [ "${#bad[@]}" -eq 0 ]; then
	echo "format: ${#files[@]} files match .clang-format ($cf)"
	exit 0
fi
for f in "${bad[@]}"; do
	echo "format: $f differs from .clang-format; what $cf would change:"
	"$cf" --style=file "$f" | diff -u "$f" - | sed -n '3,20p' || true
done
echo "format: ${#bad[@]} of ${#files[@]} files differ; run \`make format\` and commit" >&2
exit 1
