# bench/rt/smoke_rt_cache.cmake - run `tsync-bench rt-cache` briefly (RT-SMR (RTAS 2018)
# §VII-C) and check what it wrote. -DRT_CACHE_MODE=strict|relaxed|overload|calibrate.
# Checks shape and the counts the schedule fixes, not timing (how many jobs met their
# deadlines, and whether a miss had a disturbance to explain it, is the machine's load:
# the misses are printed, and only checked to be consistent):
#  strict:    given periods (get 200 us, set 400 us), every design on 1 and 2 cores for
#             0.3 s, --repeat 2: exact CSV header, 12 well-formed rows - for each core
#             count two rounds of the three designs in turn (repeat 1, then 2; one JSON
#             per run, named -r1 and -r2); zero_slack_kops empty (no admission ran). The
#             jobs released - run
#             (gets, sets) plus dropped (a job whose deadline passed before it could
#             start) - are exactly ceil(0.3 s / period) per core; deadline misses count
#             every dropped job; peak_pending >= 1 for rt-parsec (each executive's
#             warm-up set frees a preloaded item; 0 for the locks), bound_objects -1 /
#             empty; --out wrote rt-cache.csv and COMMAND.txt. The new columns: jobs is
#             every periodic job released (gets, sets and, for rt-parsec, σ at q = the
#             set period); misses_unexplained <= deadline_misses, as the JSON says;
#             max_lateness_ns 0 when nothing missed; bound_measured_objects (Eq. 5 with
#             measured inputs) >= 2 per core for rt-parsec (one set task per core, a
#             window of at least q = one set period), empty for the locks;
#             shared_cpu_ms a number; repeat 1 in the other modes.
#  relaxed:   set period 400 us, gets in the slack, closed loop: 6 rows, no offered
#             load, no get dropped or queued (one is outstanding at a time), and the
#             sets as in strict.
#  overload:  set period 400 us, gets offered at 20 and 40 kops per core: 12 rows; every
#             offered get is served or left in the queue (served + get_backlog, none
#             dropped) - exactly ceil(0.3 s x rate) per core - and the sets as in strict.
#  calibrate: JSON with every design and core count, positive costs, alpha/beta for
#             rt-parsec (an executive measures each cost at least once, past --seconds if
#             it got no CPU before).
# The executives run unpinned (--no-pin) and, under ctest, SCHED_OTHER
# (TSYNC_BENCH_NO_FIFO=1, bench/rt/CMakeLists.txt).
# Time limit 120 s, inside the test's TIMEOUT of 180 s.
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(_hdr "mode,design,cores,get_period_us,set_period_us,offered_get_kops,get_kops,set_kops,get_p99_ns,set_p99_ns,peak_pending,bound_objects,deadline_misses,jobs,misses_unexplained,max_lateness_ns,bound_measured_objects,shared_cpu_ms,zero_slack_kops,repeat")
set(_designs rt-parsec mcs pf-rw)
set(_seconds_us 300000)

# released(<what> <count> <cores> <period_us>): fails unless count jobs (or arrivals) are
# what a period releases in 0.3 s on each core: ceil(S / period), or one more when the
# clock's rounding of S and the period (ticks) makes the last release fall inside.
function(released what n cores per)
  math(EXPR lo "${cores} * ((${_seconds_us} + ${per} - 1) / ${per})")
  math(EXPR hi "${lo} + ${cores}")
  bench_smoke_uint("${what}" "${n}")
  if(n LESS lo OR n GREATER hi)
    message(FATAL_ERROR "${what}: ${n}, expected ${lo} .. ${hi}\n${_j}")
  endif()
endfunction()

# jobs_released(<what> <count> <cores> <period_us>...): fails unless count is what the
# periodic tasks of those periods release in 0.3 s on each core (as released() per task)
function(jobs_released what n cores)
  set(lo 0)
  set(hi 0)
  foreach(per ${ARGN})
    math(EXPR lo "${lo} + ${cores} * ((${_seconds_us} + ${per} - 1) / ${per})")
    math(EXPR hi "${hi} + ${cores}")
  endforeach()
  math(EXPR hi "${hi} + ${lo}")
  bench_smoke_uint("${what}" "${n}")
  if(n LESS lo OR n GREATER hi)
    message(FATAL_ERROR "${what}: ${n}, expected ${lo} .. ${hi}")
  endif()
endfunction()

# check_json(<file> <design> <cores> <row_jobs> <row_unx>): what every periodic run's
# JSON must say, and that the CSV row's jobs and unexplained misses are its; leaves the
# JSON in _j and prints the run's misses
function(check_json f design cores row_jobs row_unx)
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "no ${f}")
  endif()
  file(READ "${f}" _j)
  set(_j "${_j}" PARENT_SCOPE)
  foreach(k gets sets deadline_misses jobs_dropped jobs_dropped_get jobs_dropped_set
            misses_unexplained disturbances gap_max_ns pinned)
    string(JSON v ERROR_VARIABLE e GET "${_j}" ${k})
    if(e)
      message(FATAL_ERROR "${f}: key ${k} missing: ${e}")
    endif()
    bench_smoke_uint("${f}: ${k}" "${v}")
    set(${k} ${v})
  endforeach()
  string(JSON sched GET "${_j}" sched)
  get_filename_component(_n "${f}" NAME_WE)
  message(STATUS "${_n}: ${deadline_misses} deadline misses (${misses_unexplained} with no "
                 "disturbance to explain them, not checked: timing), ${jobs_dropped} jobs "
                 "dropped, ${disturbances} disturbances, longest gap ${gap_max_ns} ns, "
                 "${sched}")
  math(EXPR drops "${jobs_dropped_get} + ${jobs_dropped_set}")
  if(NOT jobs_dropped EQUAL drops OR deadline_misses LESS jobs_dropped
     OR misses_unexplained GREATER deadline_misses)
    message(FATAL_ERROR "${_n}: inconsistent counts (a dropped job is a miss)\n${_j}")
  endif()
  if(NOT pinned EQUAL 0)
    message(FATAL_ERROR "${_n}: ${pinned} executives pinned under --no-pin\n${_j}")
  endif()
  if(DEFINED ENV{TSYNC_BENCH_NO_FIFO} AND NOT sched MATCHES "^SCHED_OTHER")
    message(FATAL_ERROR "${_n}: TSYNC_BENCH_NO_FIFO is set, but ran ${sched}")
  endif()
  # the sets: run or dropped, one per release
  math(EXPR _s "${sets} + ${jobs_dropped_set}")
  released("${_n}: sets run + dropped" "${_s}" ${cores} 400)
  # the CSV's jobs and unexplained misses are the JSON's
  string(JSON _jobs GET "${_j}" jobs)
  if(NOT _jobs EQUAL ${row_jobs} OR NOT misses_unexplained EQUAL ${row_unx})
    message(FATAL_ERROR "${_n}: CSV jobs ${row_jobs} / unexplained ${row_unx}, JSON "
                        "${_jobs} / ${misses_unexplained}\n${_j}")
  endif()
  foreach(k gets sets jobs_dropped_get)
    set(${k} ${${k}} PARENT_SCOPE)
  endforeach()
endfunction()

# check_row(<row> <mode>): the CSV fields; sets design, cores, gp, sp, off, misses, jobs,
# unx and rep in the caller
function(check_row r mode)
  bench_smoke_fields("${r}" 0 m 1 design 2 cores 3 gp 4 sp 5 off 6 gk 7 sk 8 gp99 9 sp99
                     10 pk 11 bound 12 misses 13 jobs 14 unx 15 late 16 bm 17 shared
                     18 zs 19 rep)
  if(NOT m STREQUAL mode OR NOT design IN_LIST _designs OR NOT cores MATCHES "^[12]$")
    message(FATAL_ERROR "bad mode, design or cores: ${r}")
  endif()
  bench_smoke_number("get_kops in ${r}" "${gk}")
  bench_smoke_number("set_kops in ${r}" "${sk}")
  foreach(f gp99 sp99 pk misses jobs unx late)
    bench_smoke_uint("${f} in ${r}" "${${f}}")
  endforeach()
  bench_smoke_number("shared_cpu_ms in ${r}" "${shared}")
  # the periods are given: no admission, so no zero-slack rate to compare with
  # (strict runs --repeat 2, the other modes one round)
  if(NOT zs STREQUAL "" OR NOT rep MATCHES "^[12]$" OR (rep EQUAL 2 AND NOT m STREQUAL "strict"))
    message(FATAL_ERROR "zero_slack_kops '${zs}' (expected empty), repeat '${rep}': ${r}")
  endif()
  if(unx GREATER misses OR (misses EQUAL 0 AND NOT late EQUAL 0))
    message(FATAL_ERROR "misses ${misses}, unexplained ${unx}, max lateness ${late}: ${r}")
  endif()
  if(design STREQUAL "rt-parsec")
    # each executive's warm-up set replaced a preloaded item: ps_free'd, pending at once
    if(pk LESS 1 OR NOT bound STREQUAL "-1")
      message(FATAL_ERROR "rt-parsec: peak_pending ${pk}, bound_objects '${bound}': ${r}")
    endif()
    bench_smoke_uint("bound_measured_objects in ${r}" "${bm}")
    math(EXPR _least "2 * ${cores}")
    if(bm LESS _least)
      message(FATAL_ERROR "rt-parsec: bound_measured_objects ${bm} < ${_least}: ${r}")
    endif()
  elseif(NOT pk EQUAL 0 OR NOT bound STREQUAL "" OR NOT bm STREQUAL "")
    message(FATAL_ERROR "${design}: peak_pending ${pk}, bound_objects '${bound}', "
                        "bound_measured_objects '${bm}': ${r}")
  endif()
  foreach(v design cores gp sp off misses jobs unx rep)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# (key,design) pairs seen; fails on a missing or repeated one
function(check_keys keys want)
  list(LENGTH keys n)
  list(REMOVE_DUPLICATES keys)
  list(LENGTH keys nuniq)
  if(NOT n EQUAL want OR NOT nuniq EQUAL want)
    message(FATAL_ERROR "expected ${want} distinct rows, got ${n} (${nuniq} distinct)")
  endif()
endfunction()

if(RT_CACHE_MODE STREQUAL "strict")
  bench_smoke_out_dir(_dir rt-cache-smoke-strict)
  bench_smoke_csv(rows HEADER "${_hdr}" TIMEOUT 120 COMMAND
    rt-cache --mode strict --get-period-us 200 --set-period-us 400 --cores 1,2
             --seconds 0.3 --requests 20000 --repeat 2 --no-pin --out ${_dir} --csv -)
  bench_smoke_count(rows 12)
  set(keys "")
  set(order "")
  foreach(r ${rows})
    check_row("${r}" strict)
    if(NOT gp STREQUAL "200" OR NOT sp STREQUAL "400" OR NOT off STREQUAL "")
      message(FATAL_ERROR "periods ${gp}/${sp}, offered '${off}' in: ${r}")
    endif()
    list(APPEND keys "${design}/${cores}/${rep}")
    list(APPEND order "${cores}/${rep}/${design}")
    check_json("${_dir}/strict-${design}-${cores}-r${rep}.json" ${design} ${cores} ${jobs}
               ${unx})
    # the gets: run or dropped, one per release
    math(EXPR _g "${gets} + ${jobs_dropped_get}")
    released("${design} ${cores}: gets run + dropped" "${_g}" ${cores} 200)
    # the jobs: every get and set released, and σ's at q = the set period (rt-parsec)
    if(design STREQUAL "rt-parsec")
      set(_per 200 400 400)
    else()
      set(_per 200 400)
    endif()
    jobs_released("${design} ${cores}: jobs" "${jobs}" ${cores} ${_per})
  endforeach()
  # --repeat 2: two rows per design and core count, the designs in turn in each round
  check_keys("${keys}" 12)
  set(want "")
  foreach(c 1 2)
    foreach(k 1 2)
      foreach(d ${_designs})
        list(APPEND want "${c}/${k}/${d}")
      endforeach()
    endforeach()
  endforeach()
  if(NOT order STREQUAL want)
    message(FATAL_ERROR "--repeat 2: rows in the order ${order}, expected ${want}")
  endif()
  if(NOT EXISTS "${_dir}/rt-cache.csv" OR NOT EXISTS "${_dir}/COMMAND.txt")
    message(FATAL_ERROR "--out ${_dir}: rt-cache.csv or COMMAND.txt missing")
  endif()
  file(REMOVE_RECURSE "${_dir}")
elseif(RT_CACHE_MODE STREQUAL "relaxed")
  bench_smoke_out_dir(_dir rt-cache-smoke-relaxed)
  bench_smoke_csv(rows HEADER "${_hdr}" TIMEOUT 120 COMMAND
    rt-cache --mode relaxed --set-period-us 400 --cores 1,2
             --seconds 0.3 --requests 20000 --no-pin --out ${_dir} --csv -)
  bench_smoke_count(rows 6)
  set(keys "")
  foreach(r ${rows})
    check_row("${r}" relaxed)
    if(NOT gp STREQUAL "0" OR NOT sp STREQUAL "400" OR NOT off STREQUAL "")
      message(FATAL_ERROR "relaxed periods '${gp}'/'${sp}', offered '${off}': ${r}")
    endif()
    list(APPEND keys "${design}/${cores}")
    check_json("${_dir}/relaxed-${design}-${cores}.json" ${design} ${cores} ${jobs} ${unx})
    # closed loop: a get is issued when the last one completes - nothing queues and
    # nothing is dropped (how many run is the machine's load: not checked)
    if(NOT jobs_dropped_get EQUAL 0)
      message(FATAL_ERROR "relaxed: ${jobs_dropped_get} gets dropped\n${_j}")
    endif()
    string(JSON _bg ERROR_VARIABLE _e GET "${_j}" get_backlog)
    if(_e STREQUAL "NOTFOUND")
      message(FATAL_ERROR "relaxed: get_backlog '${_bg}' in a closed loop\n${_j}")
    endif()
    if(design STREQUAL "rt-parsec")
      jobs_released("${design} ${cores}: jobs" "${jobs}" ${cores} 400 400)
    else()
      jobs_released("${design} ${cores}: jobs" "${jobs}" ${cores} 400)
    endif()
  endforeach()
  check_keys("${keys}" 6)
  file(REMOVE_RECURSE "${_dir}")
elseif(RT_CACHE_MODE STREQUAL "overload")
  bench_smoke_out_dir(_dir rt-cache-smoke-overload)
  bench_smoke_csv(rows HEADER "${_hdr}" TIMEOUT 120 COMMAND
    rt-cache --mode overload --set-period-us 400 --get-rates 20,40 --cores 1,2
             --seconds 0.3 --requests 20000 --no-pin --out ${_dir} --csv -)
  bench_smoke_count(rows 12)
  set(keys "")
  foreach(r ${rows})
    check_row("${r}" overload)
    if(NOT gp STREQUAL "0" OR NOT sp STREQUAL "400")
      message(FATAL_ERROR "overload periods '${gp}'/'${sp}', expected 0/400: ${r}")
    endif()
    math(EXPR _pc "${off} / ${cores}")
    math(EXPR _back "${_pc} * ${cores}")
    if(NOT _pc MATCHES "^(20|40)$" OR NOT _back EQUAL off)
      message(FATAL_ERROR "offered_get_kops ${off} on ${cores} cores: ${r}")
    endif()
    list(APPEND keys "${design}/${cores}/${_pc}")
    check_json("${_dir}/overload-${design}-${cores}-${_pc}.json" ${design} ${cores} ${jobs}
               ${unx})
    # overload: gets are requests in the slack, not jobs
    if(design STREQUAL "rt-parsec")
      jobs_released("${design} ${cores}: jobs" "${jobs}" ${cores} 400 400)
    else()
      jobs_released("${design} ${cores}: jobs" "${jobs}" ${cores} 400)
    endif()
    # the gets offered: one every 1/rate, each served or still queued at the end
    string(JSON _bg GET "${_j}" get_backlog)
    bench_smoke_uint("${design} ${cores} ${_pc}: get_backlog" "${_bg}")
    if(NOT jobs_dropped_get EQUAL 0)
      message(FATAL_ERROR "overload: ${jobs_dropped_get} gets dropped (they queue)\n${_j}")
    endif()
    math(EXPR _g "${gets} + ${_bg}")
    math(EXPR _ia "1000 / ${_pc}") # us between arrivals
    released("${design} ${cores} ${_pc}: gets served + queued" "${_g}" ${cores} ${_ia})
  endforeach()
  check_keys("${keys}" 12)
  file(REMOVE_RECURSE "${_dir}")
elseif(RT_CACHE_MODE STREQUAL "calibrate")
  bench_smoke_run(out TIMEOUT 120 COMMAND
    rt-cache --mode calibrate --cores 1,2 --seconds 0.2 --requests 20000 --no-pin)
  string(JSON n LENGTH "${out}" runs)
  if(NOT n EQUAL 6)
    message(FATAL_ERROR "${n} runs, expected 6\n${out}")
  endif()
  set(keys "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON design GET "${out}" runs ${i} design)
    string(JSON cores GET "${out}" runs ${i} cores)
    list(APPEND keys "${design}/${cores}")
    # every cost measured at least once (the executive goes on past --seconds until it is)
    foreach(k get_us set_us gets sets)
      string(JSON v GET "${out}" runs ${i} ${k})
      if(NOT v GREATER 0)
        message(FATAL_ERROR "runs[${i}] (${design}).${k} = ${v}\n${out}")
      endif()
    endforeach()
    string(JSON a TYPE "${out}" runs ${i} alpha_us)
    string(JSON b TYPE "${out}" runs ${i} beta_us)
    if(design STREQUAL "rt-parsec")
      string(JSON av GET "${out}" runs ${i} alpha_us)
      string(JSON bv GET "${out}" runs ${i} beta_us)
      if(NOT a STREQUAL "NUMBER" OR NOT b STREQUAL "NUMBER" OR NOT av GREATER 0 OR NOT bv GREATER 0)
        message(FATAL_ERROR "rt-parsec: alpha ${av} beta ${bv}\n${out}")
      endif()
    elseif(NOT a STREQUAL "NULL" OR NOT b STREQUAL "NULL")
      message(FATAL_ERROR "${design}: alpha/beta should be null\n${out}")
    endif()
    string(JSON pinned GET "${out}" runs ${i} pinned)
    if(NOT pinned EQUAL 0)
      message(FATAL_ERROR "runs[${i}]: ${pinned} executives pinned under --no-pin\n${out}")
    endif()
  endforeach()
  check_keys("${keys}" 6)
else()
  message(FATAL_ERROR "RT_CACHE_MODE must be strict, relaxed, overload or calibrate")
endif()
bench_smoke_done("tsync-bench rt-cache --mode ${RT_CACHE_MODE}: ok")
