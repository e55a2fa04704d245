# bench/cache/smoke_cache.cmake - smoke test of `tsync-bench cache` (ctest
# bench_cached_core_smoke). cmake -DBENCH=/path/to/tsync-bench -P smoke_cache.cmake
# Fails unless the run exits 0, the CSV header is exact, and every variant has one
# well-formed row per (threads, set %). Runs are --no-pin (pinned, the workers of every
# benchmark would pile onto CPUs 0 and 1). Time limits 2 x 50 s, inside the test's
# TIMEOUT of 120 s (they were 2 x 100 s).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "variant,threads,set_pct,mops,get_p99_ns,set_p99_ns")
bench_smoke_csv(lines HEADER "${header}" TIMEOUT 50 COMMAND
  cache --threads 1,2 --set-pct 0,20 --requests 40000 --keys 5000 --no-pin --csv -)
foreach(v ps ps-nocrp mcs-clock locked)
  foreach(t 1 2)
    foreach(p 0 20)
      set(n 0)
      foreach(l IN LISTS lines)
        if(l MATCHES "^${v},${t},${p},[0-9.e+]+,[0-9]+,[0-9]+$")
          math(EXPR n "${n} + 1")
          if(p EQUAL 0 AND NOT l MATCHES ",0$")
            message(FATAL_ERROR "get-only row with a set p99: ${l}")
          endif()
        endif()
      endforeach()
      if(NOT n EQUAL 1)
        message(FATAL_ERROR "expected one row for ${v},${t},${p}, got ${n}:\n${lines_TEXT}")
      endif()
    endforeach()
  endforeach()
endforeach()

# --prudence on,off --mem-csv: one row per run, Prudence on and off, with the item
# allocator's counters (slabs held, live bytes, f_t) filled in.
string(RANDOM LENGTH 8 tag)
set(memcsv "${CMAKE_CURRENT_BINARY_DIR}/smoke_cache_mem_${tag}.csv")
execute_process(COMMAND "${BENCH}" cache --variants ps --threads 1 --set-pct 20
  --requests 40000 --keys 5000 --prudence on,off --mem-csv "${memcsv}" --no-pin
  --csv /dev/null RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 50)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cache --prudence on,off --mem-csv failed (${rc}):\n${err}")
endif()
file(STRINGS "${memcsv}" mlines)
file(REMOVE "${memcsv}")
set(mheader "variant,threads,set_pct,prudence,mops,cache_misses,cache_churn,slab_churn,peak_slabs,slab_bytes,live_bytes,ft")
list(LENGTH mlines nm)
list(GET mlines 0 h)
if(NOT h STREQUAL mheader OR NOT nm EQUAL 3)
  message(FATAL_ERROR "bad --mem-csv (want the header and 2 rows):\n${mlines}")
endif()
foreach(i 1 2)
  list(GET mlines ${i} l)
  if(i EQUAL 1)
    set(want on)
  else()
    set(want off)
  endif()
  if(NOT l MATCHES "^ps,1,20,${want},[0-9.e+]+,[0-9]+,[0-9]+,[0-9]+,[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*,[0-9.]+$")
    message(FATAL_ERROR "bad --mem-csv row ${i}: ${l}")
  endif()
endforeach()
