# bench/smoke_common.cmake - what the tsync-bench smoke scripts (smoke_*.cmake, run with
# cmake -DBENCH=/path/to/tsync-bench -P ...) share: run the benchmark, fail on a bad exit
# status, and check a CSV's exact header. include() it from a smoke script.
cmake_minimum_required(VERSION 3.25)
if(NOT BENCH)
  message(FATAL_ERROR "usage: cmake -DBENCH=path/to/tsync-bench -P ${CMAKE_SCRIPT_MODE_FILE}")
endif()

# Every run of the benchmark has a time limit, so that a hang fails with the script's
# message rather than at the ctest TIMEOUT without one. A script's limits together must
# stay below its test's TIMEOUT (bench/*/CMakeLists.txt).
set(BENCH_SMOKE_DEFAULT_TIMEOUT 30)

# bench_smoke_run(<out-var> [TIMEOUT s] COMMAND args...): runs ${BENCH} args... (at most
# TIMEOUT s, default BENCH_SMOKE_DEFAULT_TIMEOUT); fails unless it exits 0 (the message
# shows its stderr and stdout); <out-var> gets its stdout.
function(bench_smoke_run out)
  cmake_parse_arguments(PARSE_ARGV 1 _a "" "TIMEOUT" "COMMAND")
  set(_timeout ${BENCH_SMOKE_DEFAULT_TIMEOUT})
  if(_a_TIMEOUT)
    set(_timeout ${_a_TIMEOUT})
  endif()
  execute_process(COMMAND ${BENCH} ${_a_COMMAND}
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc
                  TIMEOUT ${_timeout})
  if(NOT _rc EQUAL 0)
    string(JOIN " " _cmd ${_a_COMMAND})
    message(FATAL_ERROR "tsync-bench ${_cmd} exited with ${_rc}\nstderr:\n${_err}\nstdout:\n${_out}")
  endif()
  set(${out} "${_out}" PARENT_SCOPE)
endfunction()

# bench_smoke_csv(<rows-var> HEADER h [TIMEOUT s] COMMAND args...): bench_smoke_run, then
# fails unless the output's first line is exactly h. <rows-var> gets the other lines as
# a list, <rows-var>_TEXT the whole output (for messages).
function(bench_smoke_csv rows)
  cmake_parse_arguments(PARSE_ARGV 1 _a "" "HEADER;TIMEOUT" "COMMAND")
  bench_smoke_run(_csv TIMEOUT "${_a_TIMEOUT}" COMMAND ${_a_COMMAND})
  string(REGEX REPLACE "\n$" "" _csv "${_csv}")
  string(REPLACE "\n" ";" _lines "${_csv}")
  list(POP_FRONT _lines _first)
  if(NOT _first STREQUAL _a_HEADER)
    string(JOIN " " _cmd ${_a_COMMAND})
    message(FATAL_ERROR "tsync-bench ${_cmd}: bad CSV header:\n  got:      ${_first}\n"
                        "  expected: ${_a_HEADER}")
  endif()
  set(${rows} "${_lines}" PARENT_SCOPE)
  set(${rows}_TEXT "${_csv}" PARENT_SCOPE)
endfunction()

# bench_smoke_names(<out-var> SUBCOMMAND): the names `tsync-bench SUBCOMMAND --list`
# prints, one at the start of each line.
function(bench_smoke_names out sub)
  bench_smoke_run(_listing COMMAND ${sub} --list)
  string(REGEX MATCHALL "(^|\n)[a-z0-9-]+" _names "${_listing}")
  list(TRANSFORM _names STRIP)
  set(${out} "${_names}" PARENT_SCOPE)
endfunction()

# bench_smoke_fields(<row> [COUNT <var>] <index> <var> [<index> <var>...]): splits the
# CSV row at its commas; each <var> gets field <index> (from 0), COUNT's <var> the number
# of fields (an empty last field is not counted: CMake drops it from the list).
function(bench_smoke_fields _row)
  string(REPLACE "," ";" _f "${_row}")
  set(_args ${ARGN})
  list(LENGTH _args _n)
  set(_i 0)
  while(_i LESS _n)
    list(GET _args ${_i} _key)
    math(EXPR _j "${_i} + 1")
    list(GET _args ${_j} _var)
    if(_key STREQUAL "COUNT")
      list(LENGTH _f _v)
    else()
      list(GET _f ${_key} _v)
    endif()
    set(${_var} "${_v}" PARENT_SCOPE)
    math(EXPR _i "${_i} + 2")
  endwhile()
endfunction()

# bench_smoke_rows_match(<rows> WHAT <prefix> REGEX <re> [IDLE <re>]): fails unless every
# row matches REGEX ("<prefix>: malformed row: ..."); a row matching IDLE (no operation
# completed) fails too.
function(bench_smoke_rows_match _rows_var)
  cmake_parse_arguments(PARSE_ARGV 1 _a "" "WHAT;REGEX;IDLE" "")
  foreach(_r IN LISTS ${_rows_var})
    if(NOT _r MATCHES "${_a_REGEX}")
      message(FATAL_ERROR "${_a_WHAT}: malformed row: ${_r}")
    endif()
    if(_a_IDLE AND _r MATCHES "${_a_IDLE}")
      message(FATAL_ERROR "${_a_WHAT}: no operation completed: ${_r}")
    endif()
  endforeach()
endfunction()

# bench_smoke_count(<rows> <n> [WHAT prefix]): fails unless the list <rows> (from
# bench_smoke_csv) has n items; the message shows <rows>_TEXT.
function(bench_smoke_count _rows_var _want)
  cmake_parse_arguments(PARSE_ARGV 2 _a "" "WHAT" "")
  list(LENGTH ${_rows_var} _len)
  if(NOT _len EQUAL _want)
    set(_w "")
    if(_a_WHAT)
      set(_w "${_a_WHAT}: ")
    endif()
    message(FATAL_ERROR "${_w}${_len} rows, expected ${_want}\n${${_rows_var}_TEXT}")
  endif()
endfunction()

# bench_smoke_out_dir(<var> <name>): a new, empty directory for a run's --out:
# <name>-<random> under $TMPDIR when TMPDIR is set, else under the test's binary
# directory. The suffix keeps two build trees (or two runs) that share TMPDIR apart; the
# script removes the directory when it passes.
function(bench_smoke_out_dir _var _name)
  set(_base ${CMAKE_CURRENT_BINARY_DIR})
  if(DEFINED ENV{TMPDIR})
    set(_base $ENV{TMPDIR})
  endif()
  foreach(_try RANGE 100)
    string(RANDOM LENGTH 10 _rnd)
    set(_d ${_base}/${_name}-${_rnd})
    if(NOT EXISTS ${_d})
      file(MAKE_DIRECTORY ${_d})
      set(${_var} ${_d} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "bench_smoke_out_dir: no free name ${_base}/${_name}-*")
endfunction()

# bench_smoke_uint(<what> <value> [MIN n]): fails unless <value> is an unsigned decimal
# integer (>= MIN when given); "<what>: ..." says which.
function(bench_smoke_uint what v)
  cmake_parse_arguments(PARSE_ARGV 2 _a "" "MIN" "")
  if(NOT "${v}" MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${what}: '${v}' is not a count")
  endif()
  if(DEFINED _a_MIN AND v LESS _a_MIN)
    message(FATAL_ERROR "${what}: ${v}, expected at least ${_a_MIN}")
  endif()
endfunction()

# bench_smoke_number(<what> <value>): fails unless <value> is a non-negative decimal
# number (printf's %f or %g: digits, a point, an exponent).
function(bench_smoke_number what v)
  if(NOT "${v}" MATCHES "^[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?$")
    message(FATAL_ERROR "${what}: '${v}' is not a non-negative number")
  endif()
endfunction()

# A check that met the documented failure of the code on a loaded machine (e.g. a
# TEMPORAL section preempted past its grace period) cannot pass or fail: the script calls
# bench_smoke_skip(<why>...) and goes on with its other checks; bench_smoke_done(), its last
# line, then prints BENCH_SMOKE_SKIP_MARKER and the reasons. The smoke tests have
# SKIP_REGULAR_EXPRESSION set to the marker, so ctest reports such a run as skipped rather
# than passed (cmake -P cannot exit 77 before CMake 3.29). The marker is printed only
# after every check passed: a failure after it would otherwise be reported as a skip.
set(BENCH_SMOKE_SKIP_MARKER "BENCH-SMOKE-SKIPPED")

function(bench_smoke_skip)
  string(JOIN "" why ${ARGV}) # the reason may come in pieces, as message()'s
  set_property(GLOBAL APPEND PROPERTY BENCH_SMOKE_SKIPS "${why}")
  message(STATUS "not checked: ${why}")
endfunction()

# bench_smoke_done(<message>): the script's last line: prints <message>, or the skip
# marker and the reasons when a check was skipped.
function(bench_smoke_done msg)
  get_property(_skips GLOBAL PROPERTY BENCH_SMOKE_SKIPS)
  if(_skips)
    list(JOIN _skips "; " _why)
    message(STATUS "${BENCH_SMOKE_SKIP_MARKER}: ${_why}")
  else()
    message(STATUS "${msg}")
  endif()
endfunction()
