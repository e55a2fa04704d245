# bench/vmdb/smoke_vmdb.cmake - smoke test of `tsync-bench vmdb` (ctest bench_vmdb_smoke).
# cmake -DBENCH=/path/to/tsync-bench [-DHAVE_URCU=0|1] -P smoke_vmdb.cmake
# Every design, both backends, 1 and 2 threads, 1 % of the trace, 2 rounds. Fails unless
# each run exits 0 with the exact header and well-formed rows, and every design gave
# every row it owes: map and unmap of 1 and 1024 pages (all designs), lookup, alias and
# revoke (all but linux), per thread count, and on model the lookup floor (ns-lookup,
# ns-walk, bare-trie). Then --out twice into one directory: the
# second backend's rows join the first's, and table.md is written. A bad option exits 2.
# Every run is --no-pin (pinned, the workers of every benchmark would pile onto CPUs 0
# and 1). Time limits: 2 x 60 + 2 x 40 + 150 (the plot script) + 10 s, inside the test's
# TIMEOUT of 400 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "design,backend,threads,op,pages,count,avg_ns,p50_ns,p99_ns,p999_ns")
set(designs ps global-lock frame-lock urcu linux)
if(DEFINED HAVE_URCU AND NOT HAVE_URCU)
  list(REMOVE_ITEM designs urcu)
endif()
list(JOIN designs "," dlist)
set(q "[0-9]+(\\.[0-9])?")
set(row_re "^([a-z-]+),(model|memfd),([12]),(map|unmap|alias|revoke|lookup),([0-9]+),([1-9][0-9]*),[0-9]+\\.[0-9],${q},${q},${q}$")

foreach(backend model memfd)
  bench_smoke_csv(rows HEADER "${header}" TIMEOUT 60 COMMAND
    vmdb --scale 0.01 --repeat 2 --threads 1,2 --designs ${dlist} --backend ${backend} --no-pin
         --csv -)
  set(keys "")
  foreach(r IN LISTS rows)
    if(NOT r MATCHES "${row_re}")
      message(FATAL_ERROR "${backend}: malformed row: ${r}")
    endif()
    if(NOT CMAKE_MATCH_2 STREQUAL backend)
      message(FATAL_ERROR "${backend}: row of another backend: ${r}")
    endif()
    list(APPEND keys "${CMAKE_MATCH_1}/${CMAKE_MATCH_3}/${CMAKE_MATCH_4}/${CMAKE_MATCH_5}")
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
    message(FATAL_ERROR "${backend}: rows (design/threads/op/pages) differ from the expected;"
                        " missing: ${missing}\n${rows_TEXT}")
  endif()
endforeach()

# --out: model, then memfd into the same directory; vmdb.csv keeps both backends' rows.
bench_smoke_out_dir(out vmdb-smoke-out)
# The first two runs skip the plot script (matplotlib takes seconds to load): `true` as
# the interpreter; the last one runs it.
set(_py "$ENV{TSYNC_BENCH_PYTHON}")
foreach(backend model memfd model)
  if(backend STREQUAL "model" AND NOT EXISTS ${out}/vmdb.csv OR backend STREQUAL "memfd")
    set(ENV{TSYNC_BENCH_PYTHON} true)
  else()
    set(ENV{TSYNC_BENCH_PYTHON} "${_py}")
  endif()
  # the last run also starts python and matplotlib: slow on a loaded machine
  set(_t 40)
  if(NOT backend STREQUAL "memfd" AND EXISTS ${out}/vmdb.csv)
    set(_t 150)
  endif()
  bench_smoke_run(_o TIMEOUT ${_t} COMMAND
    vmdb --scale 0.01 --repeat 1 --threads 1 --designs ps,linux --backend ${backend} --no-pin
         --out ${out})
endforeach()
set(ENV{TSYNC_BENCH_PYTHON} "${_py}")
file(STRINGS ${out}/vmdb.csv lines)
list(POP_FRONT lines first)
if(NOT first STREQUAL header)
  message(FATAL_ERROR "--out: vmdb.csv header: ${first}")
endif()
list(LENGTH lines nl)
# per backend: ps 7 rows, linux 4 (one thread count), model also the 3 lookup-floor rows;
# the second model run replaced the first
if(NOT nl EQUAL 25)
  message(FATAL_ERROR "--out: ${nl} rows in vmdb.csv, expected 25:\n${lines}")
endif()
if(NOT EXISTS ${out}/table.md)
  message(FATAL_ERROR "--out: no table.md")
endif()
file(READ ${out}/table.md table)
if(NOT table MATCHES "## model backend" OR NOT table MATCHES "## memfd backend")
  message(FATAL_ERROR "--out: table.md lacks a backend:\n${table}")
endif()
file(REMOVE_RECURSE ${out})

execute_process(COMMAND ${BENCH} vmdb --backend nonsense RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET TIMEOUT 10)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "--backend nonsense exited with ${rc}, expected 2")
endif()
bench_smoke_done("tsync-bench vmdb smoke: ${dlist} on model and memfd OK")
