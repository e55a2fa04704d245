# bench/vmdb/smoke_vmdb.cmake - smoke test of `tsync-bench vmdb` (ctest bench_vmdb_smoke).
# cmake -DBENCH=/path/to/tsync-bench [-DHAVE_URCU=0|1] -P smoke_vmdb.cmake
# Every design, 1 and 2 threads, 1 % of the trace, 2 rounds: both backends in the shared
# layout (the default), and the model backend in the private one. Fails unless each run
# exits 0 with the exact header and well-formed rows, and every design gave every row it
# owes: map and unmap of 1 and 1024 pages (all designs), lookup, alias and revoke (all but
# linux), per thread count, and on model the lookup floor (ns-lookup, ns-walk,
# bare-trie); lock-wait rows (op wait, pages 0) come only from the locked designs and
# only where a thread waited, so they are allowed there and nowhere else. Then --out four
# times into one directory: the other backend's and layout's rows join the first's, a
# rerun replaces its own, and table.md is written. A bad option exits 2.
# Every run is --no-pin (pinned, the workers of every benchmark would pile onto CPUs 0
# and 1). Time limits: 3 x 60 + 3 x 40 + 150 (the plot script) + 2 x 10 s, inside the
# test's TIMEOUT of 500 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "design,backend,layout,threads,op,pages,count,avg_ns,p50_ns,p99_ns,p999_ns,max_ns")
set(designs ps rwlock global-lock frame-lock frame-ticket urcu linux)
set(locked rwlock global-lock frame-lock frame-ticket)
if(DEFINED HAVE_URCU AND NOT HAVE_URCU)
  list(REMOVE_ITEM designs urcu)
endif()
list(JOIN designs "," dlist)
# no group: CMake regexes hold at most 9, and the row takes 7
set(q "[0-9]+[.]?[0-9]?")
# design, backend, layout, threads, op, pages, count (CMAKE_MATCH_1..7), then the figures
set(row_re "^([a-z-]+),(model|memfd),(shared|private),([12]),")
string(APPEND row_re "(map|unmap|alias|revoke|lookup|wait),([0-9]+),([1-9][0-9]*),")
string(APPEND row_re "[0-9]+\\.[0-9],${q},${q},${q},${q}$")

foreach(run "model;shared" "memfd;shared" "model;private")
  list(GET run 0 backend)
  list(GET run 1 layout)
  bench_smoke_csv(rows HEADER "${header}" TIMEOUT 60 COMMAND
    vmdb --scale 0.01 --repeat 2 --threads 1,2 --designs ${dlist} --backend ${backend}
         --layout ${layout} --no-pin --csv -)
  set(keys "")
  foreach(r IN LISTS rows)
    if(NOT r MATCHES "${row_re}")
      message(FATAL_ERROR "${backend}/${layout}: malformed row: ${r}")
    endif()
    if(NOT CMAKE_MATCH_2 STREQUAL backend OR NOT CMAKE_MATCH_3 STREQUAL layout)
      message(FATAL_ERROR "${backend}/${layout}: row of another backend or layout: ${r}")
    endif()
    if(CMAKE_MATCH_5 STREQUAL "wait")
      if(NOT CMAKE_MATCH_1 IN_LIST locked OR NOT CMAKE_MATCH_6 STREQUAL "0")
        message(FATAL_ERROR "${backend}/${layout}: a wait row of an unlocked design: ${r}")
      endif()
      continue()
    endif()
    list(APPEND keys "${CMAKE_MATCH_1}/${CMAKE_MATCH_4}/${CMAKE_MATCH_5}/${CMAKE_MATCH_6}")
  endforeach()
  set(expect "")
  foreach(d IN LISTS designs)
    set(ops map/1 map/1024 unmap/1 unmap/1024)
    if(NOT d STREQUAL "linux")
      list(APPEND ops lookup/1 alias/1 revoke/14)
    endif()
    foreach(t 1 2)
      foreach(op IN LISTS ops)
        list(APPEND expect "${d}/${t}/${op}")
      endforeach()
    endforeach()
  endforeach()
  # with ps, a model run adds the lookup floor: ns-lookup, ns-walk, bare-trie
  if(backend STREQUAL "model")
    foreach(d ns-lookup ns-walk bare-trie)
      foreach(t 1 2)
        list(APPEND expect "${d}/${t}/lookup/1")
      endforeach()
    endforeach()
  endif()
  # exactly the expected rows: none missing, none extra, none twice
  list(SORT keys)
  list(SORT expect)
  if(NOT keys STREQUAL expect)
    set(missing ${expect})
    list(REMOVE_ITEM missing ${keys})
    message(FATAL_ERROR "${backend}/${layout}: rows (design/threads/op/pages) differ from the "
                        "expected; missing: ${missing}\n${rows_TEXT}")
  endif()
endforeach()

# --out: model shared, memfd shared, model private, then model shared again into the
# same directory; vmdb.csv keeps every backend's and layout's rows, the rerun replaces its
# own. The first three runs skip the plot script (matplotlib takes seconds to load):
# `true` as the interpreter; the last one runs it.
bench_smoke_out_dir(out vmdb-smoke-out)
set(_py "$ENV{TSYNC_BENCH_PYTHON}")
foreach(run "model;shared" "memfd;shared" "model;private" "model;shared")
  list(GET run 0 backend)
  list(GET run 1 layout)
  set(ENV{TSYNC_BENCH_PYTHON} true)
  set(_t 40)
  if(EXISTS ${out}/vmdb.csv AND backend STREQUAL "model" AND layout STREQUAL "shared")
    # the last run also starts python and matplotlib: slow on a loaded machine
    set(ENV{TSYNC_BENCH_PYTHON} "${_py}")
    set(_t 150)
  endif()
  bench_smoke_run(_o TIMEOUT ${_t} COMMAND
    vmdb --scale 0.01 --repeat 1 --threads 1 --designs ps,linux --backend ${backend}
         --layout ${layout} --no-pin --out ${out})
endforeach()
set(ENV{TSYNC_BENCH_PYTHON} "${_py}")
file(STRINGS ${out}/vmdb.csv lines)
list(POP_FRONT lines first)
if(NOT first STREQUAL header)
  message(FATAL_ERROR "--out: vmdb.csv header: ${first}")
endif()
list(LENGTH lines nl)
# per backend and layout: ps 7 rows, linux 4 (one thread count), model also the 3
# lookup-floor rows: 14 + 11 + 14; the second model shared run replaced the first
if(NOT nl EQUAL 39)
  message(FATAL_ERROR "--out: ${nl} rows in vmdb.csv, expected 39:\n${lines}")
endif()
if(NOT EXISTS ${out}/table.md)
  message(FATAL_ERROR "--out: no table.md")
endif()
file(READ ${out}/table.md table)
foreach(h "## model backend, shared layout" "## memfd backend, shared layout"
          "## model backend, private layout")
  if(NOT table MATCHES "${h}")
    message(FATAL_ERROR "--out: table.md lacks '${h}':\n${table}")
  endif()
endforeach()
file(REMOVE_RECURSE ${out})

execute_process(COMMAND ${BENCH} vmdb --backend nonsense RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET TIMEOUT 10)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "--backend nonsense exited with ${rc}, expected 2")
endif()
execute_process(COMMAND ${BENCH} vmdb --layout nonsense RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET TIMEOUT 10)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "--layout nonsense exited with ${rc}, expected 2")
endif()
bench_smoke_done("tsync-bench vmdb smoke: ${dlist} on model and memfd, both layouts OK")
