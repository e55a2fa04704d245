# bench/smr/detect_unsafe.cmake - ctest bench_smr_detects_unsafe.
# cmake -DBENCH=/path/to/tsync-bench -P detect_unsafe.cmake
# The 'unsafe' control frees nodes that readers may still hold; the readers' node check
# must notice, so the run must fail with the check's diagnostic. With two workers the
# control stages the use-after-free once, deterministically (smr/peers/unsafe.c: a reader
# holds its node until an update has freed it, then checks it), so the check is exercised
# in every run whatever the scheduling, rather than left to catch a free in the
# nanoseconds between a reader's load and its check. 50 % updates: the first reader holds,
# the other worker's next update frees; 0 %: the other worker frees in its thread_fini;
# 100 %: no reader, so the first worker to finish holds in its thread_fini. Fails if a run
# completes (the check caught nothing), or fails without the check's diagnostic.
# Time limits 3 x 30 s (each run lasts about its 1 s), inside the test's TIMEOUT of 120 s.
cmake_minimum_required(VERSION 3.25)
if(NOT BENCH)
  message(FATAL_ERROR "usage: cmake -DBENCH=path/to/tsync-bench -P detect_unsafe.cmake")
endif()
foreach(pct 50 0 100)
  execute_process(
    COMMAND ${BENCH} smr --layout slots --mechanisms unsafe --threads 2 --updates ${pct}
            --seconds 1 --no-pin --csv -
    OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 30)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the unsafe control (${pct} % updates) ran to completion: the "
                        "readers' check caught nothing\n${err}")
  endif()
  if(NOT err MATCHES "FATAL: mechanism 'unsafe': a reader of slot [0-9]+ saw")
    message(FATAL_ERROR "the unsafe control (${pct} % updates) failed (${rc}) without the "
                        "check's diagnostic:\n${err}")
  endif()
  string(REGEX MATCH "a reader of slot [^\n]*" what "${err}")
  message(STATUS "${pct} % updates: caught as expected: ${what}")
endforeach()
