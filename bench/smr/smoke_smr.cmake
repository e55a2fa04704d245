# bench/smr/smoke_smr.cmake - smoke test of `tsync-bench smr` (ctest bench_smr_smoke).
# cmake -DBENCH=/path/to/tsync-bench -P smoke_smr.cmake
# Fails unless the run exits 0, the CSV header is exact, and every mechanism that
# `tsync-bench smr --list` names has one well-formed row per (threads, update %).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "mechanism,threads,update_pct,read_mops,update_mops,read_p50_ns,read_p99_ns,update_p50_ns,update_p99_ns,peak_pending")
set(threads 1 2)
set(updates 0 50)

bench_smoke_names(mechs smr)
list(LENGTH mechs nmechs)
if(nmechs LESS 11)
  message(FATAL_ERROR "expected at least 11 mechanisms, --list gave: ${mechs}")
endif()

bench_smoke_csv(lines HEADER "${header}" TIMEOUT 280 COMMAND
  smr --mechanisms all --threads 1,2 --updates 0,50 --seconds 0.05 --csv -)

foreach(m IN LISTS mechs)
  set(seen "")
  foreach(line IN LISTS lines)
    bench_smoke_fields("${line}" 0 name COUNT nf)
    if(NOT name STREQUAL m)
      continue()
    endif()
    if(NOT nf EQUAL 10)
      message(FATAL_ERROR "row with ${nf} fields: ${line}")
    endif()
    bench_smoke_fields("${line}" 1 thr 2 pct 3 rmops 4 umops 9 pending)
    if(NOT thr IN_LIST threads OR NOT pct IN_LIST updates)
      message(FATAL_ERROR "unexpected threads/update_pct in: ${line}")
    endif()
    if(NOT rmops MATCHES "^[0-9.e+-]+$" OR NOT umops MATCHES "^[0-9.e+-]+$"
       OR NOT pending MATCHES "^[0-9]+$")
      message(FATAL_ERROR "non-numeric field in: ${line}")
    endif()
    # 0%: reads only; 50%: both kinds complete (even a slow grace period fits in 50 ms).
    if(NOT rmops GREATER 0)
      message(FATAL_ERROR "no reads completed: ${line}")
    endif()
    if(pct EQUAL 0 AND NOT umops EQUAL 0)
      message(FATAL_ERROR "updates at 0% updates: ${line}")
    endif()
    if(pct EQUAL 50 AND NOT umops GREATER 0)
      message(FATAL_ERROR "no updates completed at 50%: ${line}")
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

# Sampled timing (--lat-every) takes the other loop: it must count ops and time some.
bench_smoke_run(csv2 TIMEOUT 60 COMMAND
  smr --layout slots --mechanisms ps,urcu-qsbr-sync --threads 2 --updates 50 --seconds 0.05
      --lat-every 16 --csv -)
foreach(m ps urcu-qsbr-sync)
  if(NOT csv2 MATCHES "\n${m},2,50,[0-9.e+-]+,[0-9.e+-]+,[0-9]+,[1-9][0-9]*,[0-9]+,[1-9][0-9]*,[0-9]+")
    message(FATAL_ERROR "--lat-every 16: no well-formed row with latencies for ${m}:\n${csv2}")
  endif()
endforeach()
message(STATUS "tsync-bench smr smoke: ${nmechs} mechanisms x 4 configurations OK")
