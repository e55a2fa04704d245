# bench/prudence/smoke_prudence.cmake - smoke test of `tsync-bench prudence` (ctest
# bench_prudence_smoke). cmake -DBENCH=/path/to/tsync-bench -P smoke_prudence.cmake
# Fails unless: pairs gives one well-formed row per allocator that --list names as built
# and per (size, readers), with work done and slab_churn filled exactly for tsync's
# allocators; endurance writes its series and runs files, every run ends "ok" and the
# series has samples; and, where a memory cgroup can be made and entered, a run whose live set
# exceeds --limit-mib ends "killed-oom" with its row's mops empty.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "workload,allocator,threads,readers,size,mops,p50_ns,p99_ns,p999_ns,helper_cpu_pct,peak_rss_kib,slab_churn")

bench_smoke_run(listing COMMAND prudence --list)
string(REPLACE "\n" ";" listing "${listing}")
set(allocs "")
set(ablation ps-kmem)
foreach(l IN LISTS listing)
  if(l MATCHES "not built" OR l MATCHES "by name only")
    continue()
  endif()
  if(l MATCHES "^([a-z0-9-]+) .*in --allocators ablation")
    list(APPEND ablation ${CMAKE_MATCH_1})
  elseif(l MATCHES "^([a-z0-9-]+) ")
    list(APPEND allocs ${CMAKE_MATCH_1})
  endif()
endforeach()
foreach(req ps-kmem-off ps-kmem-no-latent-slab ps-kmem-no-frag-refill)
  if(NOT req IN_LIST ablation)
    message(FATAL_ERROR "--list lacks the ablation's ${req}: ${ablation}")
  endif()
endforeach()
foreach(req malloc-call-rcu malloc-call-rcu-all ck-epoch ps-mem ps-kmem)
  if(NOT req IN_LIST allocs)
    message(FATAL_ERROR "--list lacks ${req}: ${allocs}")
  endif()
endforeach()

bench_smoke_csv(rows HEADER "${header}" TIMEOUT 120 COMMAND
  prudence pairs --sizes 16,4096 --threads 1 --readers 0,1 --seconds 0.05 --repeat 1 --csv -)
foreach(a IN LISTS allocs)
  set(n 0)
  foreach(r IN LISTS rows)
    bench_smoke_fields("${r}" 1 name COUNT nf)
    if(NOT name STREQUAL a)
      continue()
    endif()
    math(EXPR n "${n} + 1")
    # a trailing empty field (slab_churn of a peer) is dropped by the list split
    if(nf LESS 11 OR nf GREATER 12)
      message(FATAL_ERROR "row with ${nf} fields: ${r}")
    endif()
    bench_smoke_fields("${r}" 0 w 5 mops 10 rss)
    if(NOT w STREQUAL "pairs" OR NOT mops GREATER 0 OR NOT rss GREATER 1000)
      message(FATAL_ERROR "bad row (workload, mops, peak_rss_kib): ${r}")
    endif()
    string(REGEX MATCH ",[0-9]+$" churn "${r}")
    if(a MATCHES "^ps-" AND NOT churn)
      message(FATAL_ERROR "${a} without slab_churn: ${r}")
    elseif(NOT a MATCHES "^ps-" AND NOT r MATCHES ",$")
      message(FATAL_ERROR "${a} with a slab_churn it cannot have: ${r}")
    endif()
  endforeach()
  if(NOT n EQUAL 4)
    message(FATAL_ERROR "${a}: ${n} rows, expected 4\n${rows_TEXT}")
  endif()
endforeach()

# --allocators ablation: ps-kmem and every variant with a policy off, one row each
bench_smoke_csv(arows HEADER "${header}" TIMEOUT 120 COMMAND
  prudence pairs --allocators ablation --sizes 64 --threads 1 --readers 0 --seconds 0.05
  --repeat 1 --csv -)
foreach(a IN LISTS ablation)
  set(n 0)
  foreach(r IN LISTS arows)
    if(r MATCHES "^pairs,${a},1,0,64,[0-9.]+,.*,[0-9]+$")
      math(EXPR n "${n} + 1")
    endif()
  endforeach()
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "ablation: ${a}: ${n} rows, expected 1\n${arows_TEXT}")
  endif()
endforeach()

bench_smoke_out_dir(out prudence-smoke-out)
bench_smoke_run(_e TIMEOUT 120 COMMAND
  prudence endurance --allocators malloc-call-rcu,ck-epoch,ps-kmem --threads 1 --readers 1
  --nodes 512 --seconds 0.3 --out ${out})
file(STRINGS ${out}/endurance_runs.csv runs)
list(LENGTH runs nruns)
if(NOT nruns EQUAL 4)
  message(FATAL_ERROR "endurance_runs.csv: ${nruns} lines, expected 4:\n${runs}")
endif()
foreach(r IN LISTS runs)
  if(NOT r MATCHES "^allocator," AND NOT r MATCHES ",1,1,512,0,256,0,ok,")
    message(FATAL_ERROR "endurance run not ok: ${r}")
  endif()
endforeach()
file(STRINGS ${out}/endurance_series.csv series)
foreach(a malloc-call-rcu ck-epoch ps-kmem)
  set(s ${series})
  list(FILTER s INCLUDE REGEX "^${a},|^allocator,")
  list(LENGTH s ns)
  if(ns LESS 6)
    message(FATAL_ERROR "${a}: ${ns} series lines for 0.3 s at 10 ms")
  endif()
endforeach()

# ps-kmem-max (by name): max_bytes at 1.4x a 4 MiB live set; the run ends ok, and the
# slabs it held never passed the limit (peak slabs x 64 KiB <= 1.4 x 4 MiB).
bench_smoke_run(_m TIMEOUT 120 COMMAND
  prudence endurance --allocators ps-kmem-max --threads 1 --readers 1 --nodes 8192
  --seconds 0.3 --out ${out}/max)
file(STRINGS ${out}/max/endurance_runs.csv mruns)
list(GET mruns 1 mr)
if(NOT mr MATCHES "^ps-kmem-max,1,1,512,0,4096,0,ok,[0-9.]+,[0-9]+,[0-9]+,([0-9]+),")
  message(FATAL_ERROR "ps-kmem-max run: ${mr}")
endif()
math(EXPR mbytes "${CMAKE_MATCH_1} * 65536")
if(mbytes GREATER 5872025)
  message(FATAL_ERROR "ps-kmem-max held ${CMAKE_MATCH_1} slabs, past 1.4 x 4 MiB: ${mr}")
endif()

# Under a 48 MiB memory cgroup, 64 MiB of live nodes cannot fit.
execute_process(COMMAND ${BENCH} prudence endurance --allocators ps-kmem --threads 1
                --readers 0 --nodes 131072 --seconds 0.5 --limit-mib 48 --out ${out}/limit
                OUTPUT_VARIABLE _o ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 200)
if(_err MATCHES "cannot make a memory cgroup|no memory cgroup|cannot enter ")
  message(STATUS "no writable memory cgroup here: the --limit-mib check is skipped\n${_err}")
elseif(NOT _rc EQUAL 0)
  message(FATAL_ERROR "--limit-mib run exited with ${_rc}\n${_err}")
else()
  file(STRINGS ${out}/limit/endurance_runs.csv lruns)
  list(GET lruns 1 lr)
  if(NOT lr MATCHES ",48,killed-oom,")
    message(FATAL_ERROR "64 MiB of nodes under 48 MiB: ${lr}")
  endif()
  file(STRINGS ${out}/limit/endurance.csv lrows)
  list(GET lrows 1 row)
  if(NOT row MATCHES "^endurance,ps-kmem,1,0,512,,,,,")
    message(FATAL_ERROR "a killed run's row must have empty mops and latencies: ${row}")
  endif()
endif()
file(REMOVE_RECURSE ${out})
message(STATUS "tsync-bench prudence: ok (${allocs})")
