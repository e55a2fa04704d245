# bench/oplog/smoke_oplog.cmake - smoke test of `tsync-bench oplog` (ctest bench_oplog_smoke):
# every benchmark and variant, 1 and 2 threads, two parameter values, briefly. Fails
# unless each run exits 0, the CSV header is exact, and every row is well formed with
# operations completed.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "benchmark,variant,threads,param,ops_per_ms,p99_ns")
set(nvariants_list 4)
set(nvariants_counter 3)
set(nvariants_rmap 5)
set(params_list "0,4")
set(params_counter "1,1000")
set(params_rmap "1,10")
foreach(b list counter rmap)
  bench_smoke_csv(lines HEADER "${header}" TIMEOUT 120 COMMAND
    oplog ${b} --threads 1,2 --params ${params_${b}} --seconds 0.05 --csv -)
  bench_smoke_rows_match(lines WHAT ${b} REGEX "^${b},[a-z-]+,[12],[0-9]+,[0-9]+\\.[0-9],[0-9]+$"
                         IDLE ",0\\.0,")
  list(LENGTH lines n)
  math(EXPR expect "${nvariants_${b}} * 4")
  if(NOT n EQUAL expect)
    message(FATAL_ERROR "${b}: expected ${expect} rows, got ${n}:\n${lines_TEXT}")
  endif()
endforeach()
# Bad input is refused.
execute_process(COMMAND ${BENCH} oplog counter --variants nosuch --seconds 0.01
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "an unknown variant was accepted")
endif()
message(STATUS "tsync-bench oplog smoke: list, counter, rmap OK")
