# Runs a C++ test binary's CDI spec writer and judges every spec it wrote with cdi-check, for a
# ctest (see README.md, "Wiring into CMake"):
#
#   cmake -DCDI_CHECK=<bin>/cdi-check -DGENERATOR=<test binary> -DOUT=<folder>
#         [-DGTEST_FILTER=CdiSchemaSpecs.*] [-DRESOLVE=ON] -P check_specs.cmake
#
# 1. empties OUT and runs GENERATOR --gtest_filter=GTEST_FILTER with NUMADRA_CDI_SPEC_OUT=OUT, so
#    a stale or half-written folder is never judged;
# 2. fails when no *.json spec was written below OUT;
# 3. cdi-check validate --expect-minimum-version on every spec (JSON schema, the library's spec
#    validation, cdiVersion exactly the minimum);
# 4. with RESOLVE=ON, for each folder of specs: cdi-check resolve of every device its specs
#    define, all at once (the OCI specs go to OUT-resolved/, never into a spec folder, where
#    the cache would read them as CDI specs).

foreach(required CDI_CHECK GENERATOR OUT)
  if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
    message(FATAL_ERROR "check_specs.cmake needs -D${required}=...")
  endif()
endforeach()
if(NOT DEFINED GTEST_FILTER)
  set(GTEST_FILTER "CdiSchemaSpecs.*")
endif()

file(REMOVE_RECURSE "${OUT}" "${OUT}-resolved")
file(MAKE_DIRECTORY "${OUT}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "NUMADRA_CDI_SPEC_OUT=${OUT}" "${GENERATOR}"
          "--gtest_filter=${GTEST_FILTER}"
  RESULT_VARIABLE generated)
if(NOT generated EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} --gtest_filter=${GTEST_FILTER} failed (${generated})")
endif()

file(GLOB_RECURSE specs LIST_DIRECTORIES false "${OUT}/*.json")
list(SORT specs)
list(LENGTH specs count)
if(count EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} wrote no CDI spec below ${OUT}")
endif()

execute_process(COMMAND "${CDI_CHECK}" validate --expect-minimum-version ${specs}
                RESULT_VARIABLE validated)
if(NOT validated EQUAL 0)
  message(FATAL_ERROR "cdi-check validate refused specs written by ${GENERATOR} (exit ${validated})")
endif()

if(NOT RESOLVE)
  return()
endif()

# Every device of every spec, grouped by folder (a spec folder is what a runtime's cache reads).
set(folders "")
foreach(spec IN LISTS specs)
  get_filename_component(folder "${spec}" DIRECTORY)
  list(APPEND folders "${folder}")
  string(MD5 key "${folder}")
  file(READ "${spec}" content)
  string(JSON kind GET "${content}" kind)
  string(JSON devices LENGTH "${content}" devices)
  math(EXPR last "${devices} - 1")
  foreach(i RANGE 0 ${last})
    string(JSON name GET "${content}" devices ${i} name)
    list(APPEND ids_${key} "${kind}=${name}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES folders)

file(MAKE_DIRECTORY "${OUT}-resolved")
set(resolved 0)
foreach(folder IN LISTS folders)
  string(MD5 key "${folder}")
  file(RELATIVE_PATH relative "${OUT}" "${folder}")
  string(MAKE_C_IDENTIFIER "oci_${relative}" name)
  execute_process(
    COMMAND "${CDI_CHECK}" resolve --spec-dir "${folder}"
            --output "${OUT}-resolved/${name}.json" ${ids_${key}}
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "cdi-check resolve failed for the specs in ${folder} (exit ${result})")
  endif()
  list(LENGTH ids_${key} n)
  math(EXPR resolved "${resolved} + ${n}")
endforeach()
list(LENGTH folders folder_count)
message(STATUS "cdi-check resolved ${resolved} device(s) from ${count} spec(s) in ${folder_count} folder(s); OCI specs in ${OUT}-resolved")
