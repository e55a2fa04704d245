# cmake/TsyncPython.cmake - tsync_first_python(<out var> "<module>, <module>..."): the first
# Python 3 interpreter that can import every module, or "" (sets <out var> in the caller).
# Systems often have several interpreters (distribution, pyenv, venv) with different
# packages, so each candidate is probed: CMake's FindPython3, python3 on PATH, and the
# distribution's /usr/bin/python3.
set(_tsync_py_candidates "")
find_package(Python3 QUIET COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  list(APPEND _tsync_py_candidates "${Python3_EXECUTABLE}")
endif()
find_program(_tsync_path_python3 python3)
find_program(_tsync_sys_python3 python3 PATHS /usr/bin /usr/local/bin NO_DEFAULT_PATH)
foreach(_p _tsync_path_python3 _tsync_sys_python3)
  if(${_p})
    list(APPEND _tsync_py_candidates "${${_p}}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _tsync_py_candidates)

function(tsync_first_python out_var modules)
  foreach(_py IN LISTS _tsync_py_candidates)
    execute_process(COMMAND "${_py}" -c "import ${modules}"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(_rc EQUAL 0)
      set(${out_var} "${_py}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out_var} "" PARENT_SCOPE)
endfunction()
