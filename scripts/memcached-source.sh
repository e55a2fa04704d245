#!/usr/bin/env bash
# scripts/memcached-source.sh DIR - make sure DIR holds memcached 1.6.18's source tree
# (Debian 12's source package `memcached`, the upstream tarball unpacked), for the
# conformance tests that run memcached's own test suite (t/*.t) against tsync-cached.
#
# Fetched once with `apt-get source --download-only` (Debian's archive is the only
# network used); a deb-src entry for Debian 12 is added when apt has none. Prints DIR's
# absolute path when the tree is there. A second call finds the tree and does nothing.
set -euo pipefail
VERSION=1.6.18
DEBVER=1.6.18-1
dir=${1:?usage: $0 DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tree="$dir/memcached-$VERSION"
if [ -f "$tree/t/lib/MemcachedTest.pm" ]; then
	echo "$tree"
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
have_src() { grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; }
if ! have_src; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "memcached-source: apt has no deb-src entry and this is not root; add one for" \
			"Debian 12 (bookworm) and run again" >&2
		exit 1
	fi
	cat >/etc/apt/sources.list.d/tsync-debsrc.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	echo "memcached-source: added /etc/apt/sources.list.d/tsync-debsrc.sources" >&2
fi
(
	cd "$dir"
	if ! ls memcached_"$VERSION".orig.tar.* >/dev/null 2>&1; then
		if ! apt-get source --download-only "memcached=$DEBVER" >&2 2>/dev/null; then
			[ "$(id -u)" -eq 0 ] && apt-get update -q -o DPkg::Lock::Timeout=300 >&2
			apt-get source --download-only "memcached=$DEBVER" >&2
		fi
	fi
	tar xf memcached_"$VERSION".orig.tar.*
) 
[ -f "$tree/t/lib/MemcachedTest.pm" ] || { echo "memcached-source: no t/ in $tree" >&2; exit 1; }
echo "$tree"
