# bench/smr/detect_unsafe.cmake - ctest bench_smr_detects_unsafe.
# cmake -DBENCH=/path/to/tsync-bench -P detect_unsafe.cmake
# The 'unsafe' control frees nodes that readers may still hold; the readers' node check
# must notice (in the slots layout, where readers read the nodes updates replace), so the run must fail with the check's diagnostic (usually within ms).
cmake_minimum_required(VERSION 3.25)
if(NOT BENCH)
  message(FATAL_ERROR "usage: cmake -DBENCH=path/to/tsync-bench -P detect_unsafe.cmake")
endif()
execute_process(
  COMMAND ${BENCH} smr --layout slots --mechanisms unsafe --threads 2 --updates 50 --seconds 5 --csv -
  OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 50)
if(rc EQUAL 0)
  message(FATAL_ERROR "the unsafe control ran to completion: the readers' check caught nothing")
endif()
if(NOT err MATCHES "FATAL: mechanism 'unsafe': a reader of slot [0-9]+ saw")
  message(FATAL_ERROR "the unsafe control failed (${rc}) without the check's diagnostic:\n${err}")
endif()
string(REGEX MATCH "a reader of slot [^\n]*" what "${err}")
message(STATUS "caught as expected: ${what}")
