# bench/smoke_common.cmake - what the tsync-bench smoke scripts (smoke_*.cmake, run with
# cmake -DBENCH=/path/to/tsync-bench -P ...) share: run the benchmark, fail on a bad exit
# status, and check a CSV's exact header. include() it from a smoke script.
cmake_minimum_required(VERSION 3.25)
if(NOT BENCH)
  message(FATAL_ERROR "usage: cmake -DBENCH=path/to/tsync-bench -P ${CMAKE_SCRIPT_MODE_FILE}")
endif()

# bench_smoke_run(<out-var> [TIMEOUT s] COMMAND args...): runs ${BENCH} args...; fails
# unless it exits 0 (the message shows its stderr and stdout); <out-var> gets its stdout.
function(bench_smoke_run out)
  cmake_parse_arguments(PARSE_ARGV 1 _a "" "TIMEOUT" "COMMAND")
  set(_timeout "")
  if(_a_TIMEOUT)
    set(_timeout TIMEOUT ${_a_TIMEOUT})
  endif()
  execute_process(COMMAND ${BENCH} ${_a_COMMAND}
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc ${_timeout})
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
  bench_smoke_run(_csv TIMEOUT ${_a_TIMEOUT} COMMAND ${_a_COMMAND})
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
