# bench/prudence/smoke_prudence.cmake - smoke test of `tsync-bench prudence` (ctest
# bench_prudence_smoke). cmake -DBENCH=/path/to/tsync-bench -P smoke_prudence.cmake
# Checks shape, not speed. Fails unless: pairs gives one well-formed row per allocator
# that --list names as built and per (size, readers), each with an operation count
# (--ops-column) of at least one batch of 256 (every writer does one before it looks at
# the clock) and slab_churn and the counts (allocs, cache and merge hits, deferred and
# immediate frees: consistent) filled exactly for tsync's ps_mem/ps_kmem allocators (not
# for ps-call and ps-call-free: glibc malloc + ps_call, no ps_mem); the ablation gives one
# row per variant with the default header; endurance writes its series and runs files,
# every run ends "ok" and has well-formed series samples (at least one each, times never
# decreasing); ps-kmem-max's slabs never pass its limit; and, where a memory cgroup can
# be made and entered, a run whose live set exceeds --limit-mib ends "killed-oom" with
# its row's mops empty. ps-kmem-max may also end "enomem" - at its limit ps_alloc waits up
# to 1 s for a grace period, then fails, the documented outcome when a reader is
# preempted inside its section that long - and then only if the run lasted that second
# (ctest: Skipped); an "enomem" sooner fails. Everything else runs --no-pin.
# ps-kmem-unbounded (no pending bound) runs with --no-pin-readers (writers pinned).
# Time limits: 20 + 100 + 60 + 60 + 40 + 40 + 60 s, inside the test's TIMEOUT of 400 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)

set(header "workload,allocator,threads,readers,size,mops,p50_ns,p99_ns,p999_ns,helper_cpu_pct,peak_rss_kib,slab_churn,allocs,cache_hits,merge_hits,frees,frees_now")
set(BENCH_SMOKE_DEFAULT_TIMEOUT 20)
# --out runs end with plot_prudence.py: nothing here checks its plots and tables
# (bench_prudence_plot_pytest does), and loading matplotlib takes tens of seconds on a
# loaded machine - `true` stands in for the interpreter.
set(ENV{TSYNC_BENCH_PYTHON} true)

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
foreach(req malloc-call-rcu malloc-call-rcu-all ck-epoch ps-call ps-call-free ps-mem ps-kmem)
  if(NOT req IN_LIST allocs)
    message(FATAL_ERROR "--list lacks ${req}: ${allocs}")
  endif()
endforeach()

bench_smoke_csv(rows HEADER "${header},ops" TIMEOUT 100 COMMAND
  prudence pairs --sizes 16,4096 --threads 1 --readers 0,1 --seconds 0.05 --repeat 1 --no-pin
  --ops-column --csv -)
set(num "[0-9]+\\.[0-9]+")
foreach(a IN LISTS allocs)
  set(keys "")
  foreach(r IN LISTS rows)
    if(NOT r MATCHES "^pairs,${a},")
      continue()
    endif()
    # workload,allocator,threads,readers,size,mops,p50,p99,p999,helper_cpu_pct,
    # peak_rss_kib,slab_churn,allocs,cache_hits,merge_hits,frees,frees_now (the last six
    # empty for a peer),ops
    set(lat "[0-9]+,[0-9]+,[0-9]+")
    set(cnt "([0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9]*)") # one group: CMake allows 9
    if(NOT r MATCHES "^pairs,${a},1,(0|1),(16|4096),${num},${lat},${num},([0-9]+),([0-9]*),${cnt},([0-9]+)$")
      message(FATAL_ERROR "malformed row: ${r}")
    endif()
    list(APPEND keys "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    set(rss ${CMAKE_MATCH_3})
    set(churn "${CMAKE_MATCH_4}")
    set(ops ${CMAKE_MATCH_6})
    string(REPLACE "," ";" counts "${CMAKE_MATCH_5}")
    list(GET counts 0 nalloc)
    list(GET counts 1 hits)
    list(GET counts 2 merges)
    list(GET counts 3 nfree)
    list(GET counts 4 nnow)
    if(rss LESS 1000 OR ops LESS 256)
      message(FATAL_ERROR "peak_rss_kib ${rss} (a process holds more than 1 MB), ops ${ops} "
                          "(a writer does at least a batch of 256): ${r}")
    endif()
    if(a MATCHES "^ps-(mem|kmem)")
      if(churn STREQUAL "" OR nalloc STREQUAL "")
        message(FATAL_ERROR "${a} without slab_churn or counts: ${r}")
      endif()
      # the counts are taken at the end of the timed window (a writer the scheduler let
      # wait may have done none by then); every free of a pair is deferred (Fig. 12)
      math(EXPR served "${hits} + ${merges}")
      if(served GREATER nalloc OR nfree GREATER nalloc OR NOT nnow EQUAL 0)
        message(FATAL_ERROR "${a}: counts allocs ${nalloc}, cache hits ${hits} + merge hits "
                            "${merges}, frees ${nfree}, frees_now ${nnow}: ${r}")
      endif()
    elseif(NOT "${churn}${nalloc}${hits}${merges}${nfree}${nnow}" STREQUAL "")
      message(FATAL_ERROR "${a} with a slab_churn or counts it cannot have: ${r}")
    endif()
  endforeach()
  list(LENGTH keys n)
  list(REMOVE_DUPLICATES keys)
  list(LENGTH keys nuniq)
  if(NOT n EQUAL 4 OR NOT nuniq EQUAL 4)
    message(FATAL_ERROR "${a}: ${n} rows (${nuniq} distinct), expected 4\n${rows_TEXT}")
  endif()
endforeach()
list(LENGTH allocs na)
math(EXPR na "${na} * 4")
bench_smoke_count(rows ${na} WHAT pairs)

# --allocators ablation: ps-kmem and every variant with a policy off, one row each; the
# header is the default one (no --ops-column)
bench_smoke_csv(arows HEADER "${header}" TIMEOUT 60 COMMAND
  prudence pairs --allocators ablation --sizes 64 --threads 1 --readers 0 --seconds 0.05
  --repeat 1 --no-pin --csv -)
foreach(a IN LISTS ablation)
  set(n 0)
  foreach(r IN LISTS arows)
    if(r MATCHES "^pairs,${a},1,0,64,${num},[0-9]+,[0-9]+,[0-9]+,${num},[0-9]+,[0-9]+,[0-9]+,[0-9]+,[0-9]+,[0-9]+,[0-9]+$")
      math(EXPR n "${n} + 1")
    endif()
  endforeach()
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "ablation: ${a}: ${n} rows, expected 1\n${arows_TEXT}")
  endif()
endforeach()
list(LENGTH ablation na)
bench_smoke_count(arows ${na} WHAT ablation)

bench_smoke_out_dir(out prudence-smoke-out)
bench_smoke_run(_e TIMEOUT 60 COMMAND
  prudence endurance --allocators malloc-call-rcu,ck-epoch,ps-call,ps-kmem --threads 1
  --readers 1 --nodes 512 --seconds 0.3 --no-pin --out ${out})
file(STRINGS ${out}/endurance_runs.csv runs)
list(LENGTH runs nruns)
if(NOT nruns EQUAL 5)
  message(FATAL_ERROR "endurance_runs.csv: ${nruns} lines, expected 5:\n${runs}")
endif()
# without a memory limit nothing can end a run early: each ends ok
foreach(r IN LISTS runs)
  if(NOT r MATCHES "^allocator," AND NOT r MATCHES ",1,1,512,0,256,0,ok,")
    message(FATAL_ERROR "endurance run not ok: ${r}")
  endif()
endforeach()
# the series: RSS and pending sampled every 10 ms (how many samples fit in 0.3 s is the
# machine's load: at least one per run; times (CLOCK_MONOTONIC, to the ms) never decrease)
file(STRINGS ${out}/endurance_series.csv series)
foreach(a malloc-call-rcu ck-epoch ps-call ps-kmem)
  set(s ${series})
  list(FILTER s INCLUDE REGEX "^${a},")
  list(LENGTH s ns)
  if(ns LESS 1)
    message(FATAL_ERROR "${a}: no series sample")
  endif()
  set(prev -1)
  foreach(l IN LISTS s)
    if(NOT l MATCHES "^${a},1,1,512,0,(${num}),([0-9]+),([0-9]+)$")
      message(FATAL_ERROR "${a}: malformed series line: ${l}")
    endif()
    set(t ${CMAKE_MATCH_1})
    if(NOT CMAKE_MATCH_2 GREATER 0 OR t LESS prev)
      message(FATAL_ERROR "${a}: series line with no RSS or out of order: ${l}\n${s}")
    endif()
    set(prev ${t})
  endforeach()
endforeach()

# ps-kmem-max (by name): max_bytes at 1.4x a 4 MiB live set; the slabs it held never
# passed the limit (peak slabs x the class's slab size <= 1.4 x 4 MiB), and the run ends ok - or enomem
# after its writer waited out limit_wait_ms (1 s) for a grace period a preempted reader
# held back, which needs a run of at least that second.
bench_smoke_run(_m TIMEOUT 40 COMMAND
  prudence endurance --allocators ps-kmem-max --threads 1 --readers 1 --nodes 8192
  --seconds 0.3 --no-pin --out ${out}/max)
file(STRINGS ${out}/max/endurance_runs.csv mruns)
list(GET mruns 1 mr)
# (then preflushed, slab_premoves, alloc_waits and wait_timeouts: counts)
if(NOT mr MATCHES "^ps-kmem-max,1,1,512,0,4096,0,(ok|enomem),(${num}),[0-9]+,[0-9]+,([0-9]+),${num},([0-9]+),[0-9]+,[0-9]+,[0-9]+,[0-9]+$")
  message(FATAL_ERROR "ps-kmem-max run: ${mr}")
endif()
set(outcome ${CMAKE_MATCH_1})
set(wall ${CMAKE_MATCH_2})
set(slabs ${CMAKE_MATCH_3})
set(slab_kib ${CMAKE_MATCH_4})
if(slabs GREATER 0 AND slab_kib LESS 4)
  message(FATAL_ERROR "ps-kmem-max: ${slabs} slabs but ${slab_kib} KiB: ${mr}")
endif()
math(EXPR mbytes "${slab_kib} * 1024")
if(mbytes GREATER 5872025)
  message(FATAL_ERROR "ps-kmem-max held ${slabs} slabs, past 1.4 x 4 MiB: ${mr}")
endif()
if(outcome STREQUAL "enomem")
  if(wall LESS 1.0)
    message(FATAL_ERROR "ps-kmem-max: ps_alloc failed after ${wall} s, before its 1 s wait "
                        "for a grace period ran out: ${mr}")
  endif()
  bench_smoke_skip("ps-kmem-max ended enomem after ${wall} s: its writer waited out the "
                   "1 s limit wait (a reader preempted inside its section that long)")
endif()

# ps-kmem-unbounded (by name: no pending bound) with the writer pinned and the reader
# left to the scheduler (--no-pin-readers): the run ends ok.
bench_smoke_run(_u TIMEOUT 40 COMMAND
  prudence endurance --allocators ps-kmem-unbounded --threads 1 --readers 1 --nodes 512
  --seconds 0.3 --no-pin-readers --out ${out}/unbounded)
file(STRINGS ${out}/unbounded/endurance_runs.csv uruns)
list(GET uruns 1 ur)
if(NOT ur MATCHES "^ps-kmem-unbounded,1,1,512,0,256,0,ok,")
  message(FATAL_ERROR "ps-kmem-unbounded run: ${ur}")
endif()

# Under a 48 MiB memory cgroup, 64 MiB of live nodes cannot fit.
execute_process(COMMAND ${BENCH} prudence endurance --allocators ps-kmem --threads 1
                --readers 0 --nodes 131072 --seconds 0.5 --limit-mib 48 --no-pin
                --out ${out}/limit
                OUTPUT_VARIABLE _o ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 60)
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
bench_smoke_done("tsync-bench prudence: ok (${allocs})")
