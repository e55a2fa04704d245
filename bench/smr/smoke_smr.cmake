# bench/smr/smoke_smr.cmake - smoke test of `tsync-bench smr` (ctest bench_smr_smoke).
# cmake -DBENCH=/path/to/tsync-bench -P smoke_smr.cmake
# Checks shape, not speed: the run exits 0 (readers abort on a freed or reused node),
# the CSV header is exact, and every mechanism that `tsync-bench smr --list` names has one
# well-formed row per (threads, update %), with what the harness guarantees however the
# workers were scheduled: every worker does at least one op of its trace before it first
# looks at the deadline, so some op completed (at 0 % updates: reads, and no update); a
# kind of op that did not run has 0 latencies ("0 when no op of that kind ran").
# How many of each kind ran in 50 ms is the machine's load, not checked.
# Time limits: 20 s (--list) + 200 s + 40 s, inside the test's TIMEOUT of 300 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "mechanism,threads,update_pct,read_mops,update_mops,read_p50_ns,read_p99_ns,update_p50_ns,update_p99_ns,peak_pending")
set(threads 1 2)
set(updates 0 50)
set(BENCH_SMOKE_DEFAULT_TIMEOUT 20)

bench_smoke_names(mechs smr)
list(LENGTH mechs nmechs)
if(nmechs LESS 11)
  message(FATAL_ERROR "expected at least 11 mechanisms, --list gave: ${mechs}")
endif()

# check_row(<line>): the fields of one row, and the guarantees above; sets thr, pct and
# the latencies rp99/up99 in the caller.
function(check_row line)
  bench_smoke_fields("${line}" COUNT nf)
  if(NOT nf EQUAL 10)
    message(FATAL_ERROR "row with ${nf} fields: ${line}")
  endif()
  bench_smoke_fields("${line}" 1 thr 2 pct 3 rmops 4 umops 5 rp50 6 rp99 7 up50 8 up99
                     9 pending)
  bench_smoke_number("read_mops in ${line}" "${rmops}")
  bench_smoke_number("update_mops in ${line}" "${umops}")
  foreach(f rp50 rp99 up50 up99 pending)
    bench_smoke_uint("${f} in ${line}" "${${f}}")
  endforeach()
  # %.6g prints any positive rate as a positive number: 0 means no op of the kind
  if(NOT rmops GREATER 0 AND NOT umops GREATER 0)
    message(FATAL_ERROR "no operation completed: ${line}")
  endif()
  if(pct EQUAL 0 AND (NOT umops EQUAL 0 OR NOT rmops GREATER 0))
    message(FATAL_ERROR "0 % updates: reads only expected: ${line}")
  endif()
  if(NOT rmops GREATER 0 AND (NOT rp50 EQUAL 0 OR NOT rp99 EQUAL 0))
    message(FATAL_ERROR "read latencies without a read: ${line}")
  endif()
  if(NOT umops GREATER 0 AND (NOT up50 EQUAL 0 OR NOT up99 EQUAL 0))
    message(FATAL_ERROR "update latencies without an update: ${line}")
  endif()
  set(thr ${thr} PARENT_SCOPE)
  set(pct ${pct} PARENT_SCOPE)
  set(rp99 ${rp99} PARENT_SCOPE)
  set(up99 ${up99} PARENT_SCOPE)
endfunction()

# --no-pin: the workers need no CPU of their own to show the shape (pinned, every
# benchmark's workers would pile onto CPUs 0 and 1).
bench_smoke_csv(lines HEADER "${header}" TIMEOUT 200 COMMAND
  smr --mechanisms all --threads 1,2 --updates 0,50 --seconds 0.05 --no-pin --csv -)

foreach(m IN LISTS mechs)
  set(seen "")
  foreach(line IN LISTS lines)
    bench_smoke_fields("${line}" 0 name)
    if(NOT name STREQUAL m)
      continue()
    endif()
    check_row("${line}")
    if(NOT thr IN_LIST threads OR NOT pct IN_LIST updates)
      message(FATAL_ERROR "unexpected threads/update_pct in: ${line}")
    endif()
    list(APPEND seen "${thr}/${pct}")
  endforeach()
  list(LENGTH seen n)
  list(REMOVE_DUPLICATES seen)
  list(LENGTH seen nuniq)
  if(NOT n EQUAL 4 OR NOT nuniq EQUAL 4)
    message(FATAL_ERROR "mechanism ${m}: expected 4 rows (threads 1,2 x updates 0,50), got: ${seen}")
  endif()
endforeach()
list(LENGTH lines nrows)
math(EXPR expect "${nmechs} * 4")
if(NOT nrows EQUAL expect)
  message(FATAL_ERROR "expected ${expect} rows, got ${nrows}")
endif()

# Sampled timing (--lat-every) takes the other loop: it counts every op and times one in
# 16; each worker times its 16th op before it first looks at the deadline, so some op was
# timed, with a positive latency: on one CPU the counter only grows, and a move to another
# CPU between the two reads takes a context switch, microseconds, far more than the
# counters' skew bound (tens of ns). Which kinds were timed depends on how far the
# workers got: not checked.
bench_smoke_csv(csv2 HEADER "${header}" TIMEOUT 40 COMMAND
  smr --layout slots --mechanisms ps,urcu-qsbr-sync --threads 2 --updates 50 --seconds 0.05
      --lat-every 16 --no-pin --csv -)
bench_smoke_count(csv2 2 WHAT "--lat-every 16")
foreach(m ps urcu-qsbr-sync)
  list(GET csv2 0 line)
  if(m STREQUAL "urcu-qsbr-sync")
    list(GET csv2 1 line)
  endif()
  if(NOT line MATCHES "^${m},2,50,")
    message(FATAL_ERROR "--lat-every 16: no row for ${m}:\n${csv2_TEXT}")
  endif()
  check_row("${line}")
  if(NOT rp99 GREATER 0 AND NOT up99 GREATER 0)
    message(FATAL_ERROR "--lat-every 16: no op of ${m} was timed: ${line}")
  endif()
endforeach()
bench_smoke_done("tsync-bench smr smoke: ${nmechs} mechanisms x 4 configurations OK")
