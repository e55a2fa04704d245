#!/usr/bin/env bash
# scripts/run-steps.sh MAKE STEP... - run `MAKE test-STEP` for each step in order, stop at the
# first failure, and print how long each took. Used by `make test`.
set -euo pipefail
make_cmd=$1
shift
if [ "$#" -eq 0 ]; then
	echo "test: no steps selected (TEST_STEPS is empty)" >&2
	exit 1
fi
summary=()
t_all=$SECONDS
for step in "$@"; do
	echo
	echo "==> test-$step"
	t0=$SECONDS
	# shellcheck disable=SC2086  # MAKE may carry flags
	if ! $make_cmd test-"$step" DEPS_DONE=1; then
		summary+=("test-$step: FAILED after $((SECONDS - t0)) s")
		echo
		echo "==> summary"
		printf '  %s\n' "${summary[@]}"
		echo "make test: FAILED in step test-$step" >&2
		exit 1
	fi
	summary+=("test-$step: ok ($((SECONDS - t0)) s)")
done
echo
echo "==> summary"
printf '  %s\n' "${summary[@]}"
echo "make test: all steps passed ($*) in $((SECONDS - t_all)) s"
