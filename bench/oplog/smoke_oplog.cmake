# bench/oplog/smoke_oplog.cmake - smoke test of `tsync-bench oplog` (ctest bench_oplog_smoke):
# every benchmark and variant, 1 and 2 threads, two parameter values, briefly. Checks
# shape, not speed: each run exits 0 (the variants abort on a wrong list size, counter
# value or mapping count), the CSV header is exact, every (variant, threads, param) has
# exactly one well-formed row, and its operation count (--ops-column) is at least the
# thread count: every worker does its first op before it first looks at the deadline,
# however late it was scheduled. The rate is only checked to parse (a worker that got no
# CPU for the 50 ms makes it as small as the machine's load likes).
# Time limits: 3 x 70 + 20 + 20 s, inside the test's TIMEOUT of 300 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "benchmark,variant,threads,param,ops_per_ms,p99_ns,ops")
set(nvariants_list 4)
set(nvariants_counter 3)
set(nvariants_rmap 5)
set(params_list 0 4)
set(params_counter 1 1000)
set(params_rmap 1 10)
foreach(b list counter rmap)
  list(JOIN params_${b} "," plist)
  # --no-pin: the workers need no CPU of their own to show the shape (and pinned to CPUs
  # 0 and 1 they would pile onto the CPUs every other pinned benchmark uses).
  bench_smoke_csv(lines HEADER "${header}" TIMEOUT 70 COMMAND
    oplog ${b} --threads 1,2 --params ${plist} --seconds 0.05 --no-pin --ops-column --csv -)
  set(keys "")
  foreach(r IN LISTS lines)
    if(NOT r MATCHES "^${b},([a-z-]+),([12]),([0-9]+),([0-9]+\\.[0-9]),([0-9]+),([0-9]+)$")
      message(FATAL_ERROR "${b}: malformed row: ${r}")
    endif()
    set(thr ${CMAKE_MATCH_2})
    set(par ${CMAKE_MATCH_3})
    set(ops ${CMAKE_MATCH_6})
    if(NOT par IN_LIST params_${b})
      message(FATAL_ERROR "${b}: param ${par} was not asked for: ${r}")
    endif()
    if(ops LESS thr)
      message(FATAL_ERROR "${b}: ${ops} ops by ${thr} threads (each does at least one): ${r}")
    endif()
    list(APPEND keys "${CMAKE_MATCH_1}/${thr}/${par}")
  endforeach()
  list(LENGTH keys n)
  list(REMOVE_DUPLICATES keys)
  list(LENGTH keys nuniq)
  math(EXPR expect "${nvariants_${b}} * 4")
  if(NOT n EQUAL expect OR NOT nuniq EQUAL expect)
    message(FATAL_ERROR "${b}: expected ${expect} distinct rows, got ${n} (${nuniq} distinct):\n"
                        "${lines_TEXT}")
  endif()
endforeach()
# Without --ops-column the header is the one `make bench` writes.
bench_smoke_csv(lines HEADER "benchmark,variant,threads,param,ops_per_ms,p99_ns" TIMEOUT 20
  COMMAND oplog counter --variants atomic --threads 1 --params 10 --seconds 0.01 --no-pin
          --csv -)
bench_smoke_count(lines 1 WHAT "counter without --ops-column")
# Bad input is refused.
execute_process(COMMAND ${BENCH} oplog counter --variants nosuch --seconds 0.01
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 20)
if(rc EQUAL 0)
  message(FATAL_ERROR "an unknown variant was accepted")
endif()
bench_smoke_done("tsync-bench oplog smoke: list, counter, rmap OK")
