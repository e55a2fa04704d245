# bench/rt/smoke_rt.cmake - run `tsync-bench rt` briefly and check its JSON (the contract
# between the C and Python halves, docs/rt.md §5). -DRT_POLICY=rt|temporal.
# Checks shape and the counts the workload fixes, not timing: every key present; each
# task ran exactly the jobs its period releases in --seconds (a late job still runs, so
# ceil(S / period), the release times being exact); every write request freed one node
# (frees = the tasks' jobs x allocs, allocs = frees + the 65 static nodes); the live
# peak holds the static nodes and something was pending; and no reader saw a reused node.
# The tasks are not pinned (core=-1): pinned to CPUs 0 and 1 they would pile onto the
# CPUs every other pinned test uses; deadline misses are reported, not checked.
# TEMPORAL (grace 20 ms): readers do not mark their sections, so a reader preempted for
# longer than the grace period inside one may see its node reused - the policy's
# documented failure (include/tsync/ps.h), which a loaded machine can cause. A violation
# is then skipped (ctest: Skipped) if some read request lasted at least the grace period
# less the clock skew bound (such a reuse needs one), and fails if every read request was
# shorter: the library then reused a node under a reader that kept its contract.
# Time limit 45 s, inside the test's TIMEOUT of 60 s.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../smoke_common.cmake)
set(_grace_us 20000)
if(RT_POLICY STREQUAL "temporal")
  set(_extra --grace-us ${_grace_us})
elseif(RT_POLICY STREQUAL "rt")
  set(_extra "")
else()
  message(FATAL_ERROR "RT_POLICY must be rt or temporal")
endif()
# per task: period_us allocs
set(_periods 1000 2000)
set(_allocs 2 1)
set(_seconds_us 300000)
execute_process(COMMAND ${BENCH}
  rt --policy ${RT_POLICY} ${_extra} --q-us 0 --obj-size 64
     --task period_us=1000,wcet_us=200,allocs=2,reads=2,core=-1,prio=2
     --task period_us=2000,wcet_us=300,allocs=1,reads=4,core=-1,prio=1
     --seconds 0.3 --json -
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 45)
# exit status 1 with a JSON object: the run completed and some reader saw a reused node
# (checked below); anything else is a failure of its own
string(JSON v ERROR_VARIABLE e GET "${out}" violations)
if(e OR NOT (rc EQUAL 0 OR (rc EQUAL 1 AND v GREATER 0)))
  message(FATAL_ERROR "tsync-bench rt exited with ${rc}\nstderr:\n${err}\nstdout:\n${out}")
endif()
foreach(k policy q_us grace_us obj_size seconds ticks_per_us skew_ticks ps_skew_ticks
          alpha_ns_max alpha_ns_p99 beta_ns_max beta_ns_p99 read_ns_max write_ns_max
          peak_pending peak_live max_wait_us allocs frees violations tasks)
  string(JSON v ERROR_VARIABLE e GET "${out}" ${k})
  if(e)
    message(FATAL_ERROR "key ${k} missing: ${e}\n${out}")
  endif()
endforeach()
string(JSON p GET "${out}" policy)
if(NOT p STREQUAL RT_POLICY)
  message(FATAL_ERROR "policy ${p}, expected ${RT_POLICY}")
endif()
string(JSON n LENGTH "${out}" tasks)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "${n} tasks, expected 2")
endif()
set(writes 0)
foreach(i 0 1)
  foreach(k period_us wcet_us allocs reads core prio jobs deadline_misses response_us_max)
    string(JSON v ERROR_VARIABLE e GET "${out}" tasks ${i} ${k})
    if(e)
      message(FATAL_ERROR "tasks[${i}].${k} missing\n${out}")
    endif()
  endforeach()
  list(GET _periods ${i} per)
  list(GET _allocs ${i} al)
  # releases at t0 + k x period while < t0 + S: ceil(S / period); one more if S came out
  # a nanosecond long in floating point
  math(EXPR lo "(${_seconds_us} + ${per} - 1) / ${per}")
  math(EXPR hi "${lo} + 1")
  string(JSON jobs GET "${out}" tasks ${i} jobs)
  string(JSON miss GET "${out}" tasks ${i} deadline_misses)
  bench_smoke_uint("tasks[${i}].jobs" "${jobs}" MIN ${lo})
  bench_smoke_uint("tasks[${i}].deadline_misses" "${miss}")
  if(jobs GREATER hi OR miss GREATER jobs)
    message(FATAL_ERROR "tasks[${i}]: ${jobs} jobs (expected ${lo}), ${miss} misses\n${out}")
  endif()
  math(EXPR writes "${writes} + ${jobs} * ${al}")
endforeach()
string(JSON pk GET "${out}" peak_pending)
string(JSON pl GET "${out}" peak_live)
string(JSON na GET "${out}" allocs)
string(JSON nf GET "${out}" frees)
math(EXPR static_plus "${nf} + 65")
if(NOT nf EQUAL writes OR NOT na EQUAL static_plus OR pk LESS 1 OR pl LESS 65)
  message(FATAL_ERROR "frees ${nf} (expected ${writes}), allocs ${na} (expected "
                      "${static_plus}), peak_pending ${pk}, peak_live ${pl}\n${out}")
endif()
string(JSON v GET "${out}" violations)
if(NOT v EQUAL 0)
  string(JSON rmax GET "${out}" read_ns_max)
  if(NOT RT_POLICY STREQUAL "temporal")
    message(FATAL_ERROR "${v} readers saw a reused node under policy ${RT_POLICY}\n${out}")
  endif()
  # A reuse needs free -> reuse > grace + skew on the clock (ps_quiesce's TEMPORAL
  # point), so a section that spanned it lasted more than the grace period of real time:
  # at least grace less the skew bound on the reader's clock readings (one per side of a
  # migration). The bound in ns, rounded up: skew ticks / floor(ticks per us).
  string(JSON sk GET "${out}" ps_skew_ticks)
  string(JSON tpu GET "${out}" ticks_per_us)
  string(REGEX REPLACE "\\..*" "" tpu_i "${tpu}")
  if(NOT tpu_i GREATER 0)
    set(tpu_i 1)
  endif()
  math(EXPR thresh "${_grace_us} * 1000 - (${sk} * 1000 + ${tpu_i} - 1) / ${tpu_i} - 1")
  if(rmax LESS thresh)
    message(FATAL_ERROR "${v} readers saw a reused node although every read request "
                        "lasted less than the grace period (longest ${rmax} ns, grace "
                        "${_grace_us} us less the skew: ${thresh} ns)\n${out}")
  endif()
  bench_smoke_skip("temporal: ${v} readers saw a reused node, but a read request lasted "
                   "${rmax} ns, as long as the ${_grace_us} us grace period (less the "
                   "clock skew): the machine broke the policy's contract (preemption "
                   "inside a section), not the library")
endif()
bench_smoke_done("tsync-bench rt --policy ${RT_POLICY}: ok")
