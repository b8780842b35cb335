# core_headers.cmake — the core library includes nothing of the runtime, in
# headers too (cmake -P; run by the test layering.core_headers_reach_no_runtime_header).
#
# The link-time programs (tests.cmake) catch a call from the core into the
# runtime, but not a core header that includes a runtime header: inline code
# and types leak through it without an undefined symbol. This script
# preprocesses every source of the core's layers (src/core, io, render,
# planners, solver, planning, and solver/cbc, solver/sat when given) with the
# compiler's include tree (-H) and fails naming the chain of includes from
# the source to the first runtime header it reaches.
#
# Runtime headers: the public headers whose code is the serving layer's
# (memplan_runtime: the replay allocator, its configuration and statistics,
# pools, backing allocators) or above it (mark.h: the capture layer's marks;
# allocator_model.h: the allocator models, which run the runtime's device
# allocator), and every header under src/runtime, src/simulate, src/trace,
# src/torch.
#
# Inputs: CXX (the compiler), SOURCE_DIR (the repository), INCLUDE_DIRS (a
# ;-list of extra include folders: the generated report assets, LEMON, ...),
# EXTRA_FOLDERS (a ;-list of further core folders under src/ to check).
cmake_minimum_required(VERSION 3.20)
foreach(var CXX SOURCE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "core_headers.cmake: -D${var}=... is required")
  endif()
endforeach()

set(runtime_headers replay.h replay_config.h replay_stats.h pool.h backing_allocator.h mark.h
  allocator_model.h)
set(runtime_folders src/runtime src/simulate src/trace src/torch)

set(flags -std=c++20 -E -H -o /dev/null -I${SOURCE_DIR}/include -I${SOURCE_DIR}/src)
foreach(dir ${INCLUDE_DIRS})
  list(APPEND flags -I${dir})
endforeach()

set(sources "")
foreach(folder core io render planners solver planning ${EXTRA_FOLDERS})
  file(GLOB found ${SOURCE_DIR}/src/${folder}/*.cc)
  list(APPEND sources ${found})
endforeach()
list(LENGTH sources count)
if(count LESS 20)
  message(FATAL_ERROR "core_headers.cmake: only ${count} core sources found under ${SOURCE_DIR}/src")
endif()

# Returns in `out` the runtime header `path` is, or "" when it is none.
function(runtime_header path out)
  set(${out} "" PARENT_SCOPE)
  file(TO_CMAKE_PATH "${path}" path)
  get_filename_component(name "${path}" NAME)
  if(path MATCHES "/include/memplan/[^/]+$" AND name IN_LIST runtime_headers)
    set(${out} "include/memplan/${name}" PARENT_SCOPE)
    return()
  endif()
  foreach(folder ${runtime_folders})
    if(path MATCHES "^${SOURCE_DIR}/${folder}/" OR path MATCHES "/${folder}/")
      string(REGEX REPLACE ".*/(${folder}/.*)$" "\\1" short "${path}")
      set(${out} "${short}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

set(failures "")
foreach(source ${sources})
  execute_process(COMMAND ${CXX} ${flags} ${source} RESULT_VARIABLE rc ERROR_VARIABLE tree OUTPUT_QUIET)
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
  if(NOT rc EQUAL 0)
    string(REGEX MATCH "[^\n]*error[^\n]*" first_error "${tree}")
    list(APPEND failures "${rel}: does not preprocess: ${first_error}")
    continue()
  endif()
  # -H prints one line per include, its depth as leading dots: keep the
  # chain of the current line's ancestors.
  string(REPLACE "\n" ";" lines "${tree}")
  set(chain "")
  foreach(line ${lines})
    if(NOT line MATCHES "^(\\.+) (.+)$")
      continue()
    endif()
    string(LENGTH "${CMAKE_MATCH_1}" depth)
    set(path "${CMAKE_MATCH_2}")
    math(EXPR keep "${depth} - 1")
    list(LENGTH chain have)
    if(have GREATER keep)
      if(keep EQUAL 0)
        set(chain "")
      else()
        list(SUBLIST chain 0 ${keep} chain)
      endif()
    endif()
    get_filename_component(name "${path}" NAME)
    list(APPEND chain "${name}")
    runtime_header("${path}" hit)
    if(hit)
      string(REPLACE ";" " -> " shown "${chain}")
      list(APPEND failures "${rel} -> ${shown} (${hit} is the runtime's)")
      break()
    endif()
  endforeach()
endforeach()

if(failures)
  string(REPLACE ";" "\n  " listed "${failures}")
  message(FATAL_ERROR "core sources that reach runtime headers (move what the core needs into a core header):\n  ${listed}")
endif()
message(STATUS "${count} core sources checked: none reaches a runtime header")
