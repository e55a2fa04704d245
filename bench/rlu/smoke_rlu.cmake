# bench/rlu/smoke_rlu.cmake - smoke test of `tsync-bench rlu` (ctest bench_rlu_smoke):
# every mechanism, both structures, 1 and 2 threads, 2 % and 50 % updates, briefly.
# Fails unless the run exits 0, the header is exact and every row is well formed.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "structure,mechanism,threads,update_pct,ops_per_us,aborts_per_kop")
bench_smoke_names(mechs rlu)
list(JOIN mechs "," mlist)
list(LENGTH mechs nm)
bench_smoke_csv(lines HEADER "${header}" TIMEOUT 280 COMMAND
  rlu --mechanisms ${mlist} --threads 1,2 --updates 2,50 --seconds 0.05 --csv -)
bench_smoke_rows_match(lines WHAT rlu REGEX "^(list|hash),[a-z-]+,[12],(2|50),[0-9.]+,[0-9.]+$"
                       IDLE ",0\\.0000,")
list(LENGTH lines n)
math(EXPR expect "${nm} * 8")
if(NOT n EQUAL expect)
  message(FATAL_ERROR "expected ${expect} rows, got ${n}:\n${lines_TEXT}")
endif()
message(STATUS "tsync-bench rlu smoke: ${nm} mechanisms x 8 configurations OK")
