#!/usr/bin/env bash
# apps/cached/server/tests/run_fuzz.sh FUZZER CORPUS SCRATCH SECONDS
# Run the libFuzzer parser harness for SECONDS, starting from the committed CORPUS (read
# only: libFuzzer writes new inputs to SCRATCH, the first directory it is given) with
# CACHED_FUZZ_MODE from the environment. Fails on a crash, a sanitizer report, a leak, a
# timeout of one input, or a contract violation the harness checks; the input that
# failed is left as SCRATCH/crash-* (or leak-*, timeout-*).
set -eu
fuzzer=$1
corpus=$2
scratch=$3
seconds=$4
mkdir -p "$scratch"
exec "$fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$scratch/" "$scratch" "$corpus"
