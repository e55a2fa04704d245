# bench/cache/smoke_cache.cmake - smoke test of `tsync-bench cache` (ctest
# bench_cached_core_smoke). cmake -DBENCH=/path/to/tsync-bench -P smoke_cache.cmake
# Fails unless the run exits 0, the CSV header is exact, and every variant has one
# well-formed row per (threads, set %).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(header "variant,threads,set_pct,mops,get_p99_ns,set_p99_ns")
bench_smoke_csv(lines HEADER "${header}" TIMEOUT 100 COMMAND
  cache --threads 1,2 --set-pct 0,20 --requests 40000 --keys 5000 --csv -)
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
