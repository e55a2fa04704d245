#!/usr/bin/env bash
# scripts/deps.sh PKG... - make sure the Debian packages tsync needs are installed.
#
# Called by `make deps` (and so by `make test` and `make bench`). A second run is instant:
# one dpkg-query call decides what is missing, and apt-get runs only for that.
#   - everything present: prints one line, exits 0;
#   - something missing, running as root: apt-get update + install (noninteractive);
#   - something missing, not root: prints the `sudo apt-get install ...` line and fails
#     (set TSYNC_SKIP_DEPS=1 to go on anyway, e.g. with tools installed another way);
#   - no dpkg (not Debian): checks for the commands the build needs and goes on.
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 PKG..." >&2
	exit 2
fi
if [ "${TSYNC_SKIP_DEPS:-0}" = 1 ]; then
	echo "deps: TSYNC_SKIP_DEPS=1, not checking packages"
	exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: no dpkg-query (not a Debian system); checking commands only"
	status=0
	for c in cmake make cc pkg-config python3; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "deps: missing command: $c" >&2
			status=1
		fi
	done
	exit "$status"
fi

# One query for all packages. Unknown packages are left out of the output (error on
# stderr), so anything not printed as "ii" counts as missing.
installed=$({ dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "$@" 2>/dev/null || true; } |
	awk '$2 == "ii" { print $1 }' | sort -u)
missing=()
for p in "$@"; do
	if ! grep -qxF -- "${p%%:*}" <<<"$installed"; then
		missing+=("$p")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "deps: all $# Debian packages present"
	exit 0
fi

echo "deps: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root; install them with:" >&2
	echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
	echo "deps: (or set TSYNC_SKIP_DEPS=1 to build with what is there)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300)
for try in 1 2 3; do
	if apt-get update -q -o DPkg::Lock::Timeout=300 </dev/null; then
		break
	fi
	[ "$try" -eq 3 ] && { echo "deps: apt-get update failed" >&2; exit 1; }
	sleep $((try * 5))
done
for try in 1 2 3; do
	if apt-get install "${apt_opts[@]}" --no-install-recommends "${missing[@]}" </dev/null; then
		echo "deps: installed ${missing[*]}"
		exit 0
	fi
	[ "$try" -eq 3 ] && { echo "deps: apt-get install ${missing[*]} failed" >&2; exit 1; }
	sleep $((try * 5))
done
