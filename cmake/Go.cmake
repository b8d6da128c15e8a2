# Go for the test programs written in Go (tests/cdi-check: CDI specs judged by the official CDI
# library, the code containerd and CRI-O link; tests/upstream: upstream Kubernetes' own code as
# the judge).
#
#   include(cmake/Go.cmake)
#   numadra_go_binary(cdi-schema-check ${CMAKE_SOURCE_DIR}/tests/cdi-check/schema-check)
#   numadra_go_binary(cdi-check ${CMAKE_SOURCE_DIR}/tests/cdi-check)
#   if(NUMADRA_HAVE_GO)
#     add_test(NAME ... COMMAND ${CMAKE_BINARY_DIR}/bin/cdi-check validate ...)
#   else()
#     add_test(NAME ... COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: Go not found ...")
#   endif()
#
# Sets:
#   NUMADRA_GO       the go command. Empty (the default): the first Go >= the newest `go` line of
#                    the go.mod files on PATH, in /usr/local/go/bin or the toolchain
#                    scripts/install-deps.sh installs into ~/.cache/numadra/go, chosen by
#                    scripts/lib/go.sh (the scripts' one finder) at each configure; an older Go
#                    (Debian 12's /usr/bin/go is 1.19) is skipped. -DNUMADRA_GO=/path/to/go names
#                    one, which must be new enough.
#   NUMADRA_HAVE_GO  ON when it was found, OFF otherwise
#
# Without Go: with CI=true in the environment configuring fails (CI must never skip the Go
# tiers); elsewhere a warning names the tiers that are skipped, NUMADRA_HAVE_GO is OFF and
# numadra_go_binary() adds nothing. NUMADRA_GO_TIERS (a list, set it before the include to add
# more) is what the message names.

if(NOT DEFINED NUMADRA_GO_TIERS)
  set(NUMADRA_GO_TIERS
      "CDI specs judged by the official CDI library (tests/cdi-check: cdi-check validate and resolve)"
      "numaNode, pcieRoot and pciBusID judged by upstream's deviceattribute helpers (tests/upstream)"
      "dra-allocate judged by upstream's structured allocator (tests/upstream)"
      "the CEL environment judged by upstream's DRA CEL environment (tests/upstream)")
endif()

set(_numadra_go_finder "${CMAKE_CURRENT_LIST_DIR}/../scripts/lib/go.sh")
set(_numadra_go_doc
    "The go command for the Go test programs (empty: scripts/lib/go.sh chooses one at each configure)")
# A build folder configured before scripts/lib/go.sh holds find_program's answer (perhaps an old
# Go, or NOTFOUND): choose again.
get_property(_numadra_go_old_doc CACHE NUMADRA_GO PROPERTY HELPSTRING)
if(_numadra_go_old_doc STREQUAL "The go command for the Go test programs")
  unset(NUMADRA_GO CACHE)
endif()
set(NUMADRA_GO "" CACHE FILEPATH "${_numadra_go_doc}")

set(_numadra_go_note "")
if(NUMADRA_GO)
  execute_process(COMMAND bash "${_numadra_go_finder}" check "${NUMADRA_GO}"
                  OUTPUT_VARIABLE _numadra_go_version ERROR_VARIABLE _numadra_go_error
                  RESULT_VARIABLE _numadra_go_result OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _numadra_go_result EQUAL 0)
    string(STRIP "${_numadra_go_error}" _numadra_go_error)
    message(FATAL_ERROR "NUMADRA_GO: ${_numadra_go_error} (-DNUMADRA_GO= lets scripts/lib/go.sh choose)")
  endif()
else()
  execute_process(COMMAND bash "${_numadra_go_finder}" find
                  OUTPUT_VARIABLE _numadra_go_found ERROR_VARIABLE _numadra_go_error
                  RESULT_VARIABLE _numadra_go_result OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_numadra_go_result EQUAL 0)
    # Lines: the go command, its version, then each Go skipped (too old, or it did not run).
    string(REPLACE "\n" ";" _numadra_go_found "${_numadra_go_found}")
    list(POP_FRONT _numadra_go_found _numadra_go_path _numadra_go_version)
    if(_numadra_go_found)
      list(JOIN _numadra_go_found ", " _numadra_go_note)
      string(PREPEND _numadra_go_note "; skipped: ")
    endif()
    # A normal variable: the cache entry stays empty, so the next configure chooses again (e.g.
    # after scripts/install-deps.sh installed the toolchain).
    set(NUMADRA_GO "${_numadra_go_path}")
  else()
    string(STRIP "${_numadra_go_error}" _numadra_go_error)
  endif()
endif()

if(NUMADRA_GO)
  set(NUMADRA_HAVE_GO ON)
  message(STATUS "Go: ${NUMADRA_GO} (${_numadra_go_version}${_numadra_go_note})")
else()
  set(NUMADRA_HAVE_GO OFF)
  string(REPLACE ";" "\n  - " _numadra_go_skipped "${NUMADRA_GO_TIERS}")
  string(TOLOWER "$ENV{CI}" _numadra_ci)
  if(_numadra_ci STREQUAL "true" OR _numadra_ci STREQUAL "1")
    message(FATAL_ERROR
      "Go is required in CI (CI=$ENV{CI}): ${_numadra_go_error} (-DNUMADRA_GO=/path/to/go names "
      "one). Without it these test tiers would be skipped:\n  - ${_numadra_go_skipped}")
  endif()
  message(WARNING
    "Go: ${_numadra_go_error} (-DNUMADRA_GO=/path/to/go names one). These test tiers are "
    "SKIPPED in this build:\n  - ${_numadra_go_skipped}\n"
    "Run scripts/install-deps.sh, then configure again, to run them.")
  unset(_numadra_go_skipped)
  unset(_numadra_ci)
endif()
foreach(_numadra_go_variable finder doc old_doc note version error result found path)
  unset(_numadra_go_${_numadra_go_variable})
endforeach()
unset(_numadra_go_variable)

# numadra_go_binary(NAME DIR [PACKAGE ./sub]): a target NAME, built by default, that builds the Go
# main package in DIR (a folder with its own go.mod and go.sum; PACKAGE: a main package below it)
# into ${CMAKE_BINARY_DIR}/bin/NAME with
# GOFLAGS="-mod=readonly -trimpath": the build never edits go.mod or go.sum and fails when they
# do not pin every dependency; modules come from GOMODCACHE or through GOPROXY as usual.
# GOCACHE and GOMODCACHE stay at Go's defaults (below $HOME), so they are shared with plain
# `go build` and `go test` runs. It rebuilds when a .go file (tests excepted), go.mod or go.sum of
# the module changes, or when one is added or removed; files of nested modules (folders with a
# go.mod of their own) do not count.
# The target's NUMADRA_GO_OUTPUT property holds the binary's path. Without Go it adds nothing.
function(numadra_go_binary name dir)
  if(NOT NUMADRA_HAVE_GO)
    return()
  endif()
  cmake_parse_arguments(ARG "" "PACKAGE" "" ${ARGN})
  if(NOT ARG_PACKAGE)
    set(ARG_PACKAGE .)
  endif()
  get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  foreach(required go.mod go.sum)
    if(NOT EXISTS "${dir}/${required}")
      message(FATAL_ERROR "numadra_go_binary(${name}): ${dir}/${required} does not exist")
    endif()
  endforeach()

  # *.go.in: Go source a program embeds (//go:embed) to write elsewhere, e.g. a test file it adds
  # to a copy of an upstream module; a change to it must rebuild the program like any source.
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS LIST_DIRECTORIES false "${dir}/*.go" "${dir}/*.go.in")
  file(GLOB_RECURSE nested_modules LIST_DIRECTORIES false "${dir}/*/go.mod")
  list(FILTER sources EXCLUDE REGEX "_test\\.go$")
  list(FILTER sources EXCLUDE REGEX "/testdata/")
  foreach(nested IN LISTS nested_modules)
    get_filename_component(nested_dir "${nested}" DIRECTORY)
    string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" nested_dir_regex "${nested_dir}")
    list(FILTER sources EXCLUDE REGEX "^${nested_dir_regex}/")
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "numadra_go_binary(${name}): no Go sources in ${dir}")
  endif()

  # The list of sources as a file that changes only when the list does: a deleted or added
  # source file then rebuilds the program (the glob re-runs cmake, the timestamps alone would not
  # show a deletion).
  list(SORT sources)
  string(REPLACE ";" "\n" source_list "${sources}")
  set(source_list_file "${CMAKE_CURRENT_BINARY_DIR}/${name}.go-sources")
  file(WRITE "${source_list_file}.new" "${source_list}\n")
  configure_file("${source_list_file}.new" "${source_list_file}" COPYONLY)

  set(output "${CMAKE_BINARY_DIR}/bin/${name}")
  add_custom_command(
    OUTPUT "${output}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_BINARY_DIR}/bin"
    COMMAND ${CMAKE_COMMAND} -E env "GOFLAGS=-mod=readonly -trimpath"
            "${NUMADRA_GO}" build -o "${output}" "${ARG_PACKAGE}"
    WORKING_DIRECTORY "${dir}"
    DEPENDS ${sources} "${dir}/go.mod" "${dir}/go.sum" "${source_list_file}"
    COMMENT "Building Go program ${name} (${dir})"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${output}")
  set_target_properties(${name} PROPERTIES NUMADRA_GO_OUTPUT "${output}")
endfunction()
