# bench/rlu/smoke_rlu.cmake - smoke test of `tsync-bench rlu` (ctest bench_rlu_smoke):
# every mechanism, both structures, 1 and 2 threads, 2 % and 50 % updates, briefly.
# Checks shape, not speed: the run exits 0, the header is exact, every (structure,
# mechanism, threads, update %) has exactly one well-formed row, and its operation count
# (--ops-column) is at least 64 per thread: a worker runs whole batches of 64 operations
# and looks at the deadline only after each, so even one that got no CPU before the
# deadline did one batch. The rates are only checked to parse.
# Time limits: 20 s (--list) + 240 s, inside the test's TIMEOUT of 300 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "structure,mechanism,threads,update_pct,ops_per_us,aborts_per_kop,ops")
set(BENCH_SMOKE_DEFAULT_TIMEOUT 20)
bench_smoke_names(mechs rlu)
list(JOIN mechs "," mlist)
list(LENGTH mechs nm)
# --no-pin: no CPU of their own needed to show the shape (pinned, every benchmark's
# workers would pile onto CPUs 0 and 1).
bench_smoke_csv(lines HEADER "${header}" TIMEOUT 240 COMMAND
  rlu --mechanisms ${mlist} --threads 1,2 --updates 2,50 --seconds 0.05 --no-pin --ops-column
      --csv -)
set(keys "")
foreach(r IN LISTS lines)
  set(num "[0-9]+\\.[0-9]+")
  if(NOT r MATCHES "^(list|hash),([a-z-]+),([12]),(2|50),(${num}),(${num}),([0-9]+)$")
    message(FATAL_ERROR "rlu: malformed row: ${r}")
  endif()
  if(NOT CMAKE_MATCH_2 IN_LIST mechs)
    message(FATAL_ERROR "rlu: a mechanism --list does not name: ${r}")
  endif()
  math(EXPR least "64 * ${CMAKE_MATCH_3}")
  if(CMAKE_MATCH_7 LESS least)
    message(FATAL_ERROR "rlu: ${CMAKE_MATCH_7} ops, expected at least ${least} (a batch of 64 "
                        "per thread): ${r}")
  endif()
  list(APPEND keys "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}/${CMAKE_MATCH_3}/${CMAKE_MATCH_4}")
endforeach()
list(LENGTH keys n)
list(REMOVE_DUPLICATES keys)
list(LENGTH keys nuniq)
math(EXPR expect "${nm} * 8")
if(NOT n EQUAL expect OR NOT nuniq EQUAL expect)
  message(FATAL_ERROR "expected ${expect} distinct rows, got ${n} (${nuniq} distinct):\n"
                      "${lines_TEXT}")
endif()
bench_smoke_done("tsync-bench rlu smoke: ${nm} mechanisms x 8 configurations OK")
