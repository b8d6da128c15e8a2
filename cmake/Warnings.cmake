# Warnings apply to the project's own targets only (numadra_target_defaults), never to
# third-party headers, which are included as SYSTEM.
#
# Warnings as errors: on in scripts/build.sh and CI, off for anyone building the project another
# way (another compiler or build type may warn where ours does not; that must not break a build).
option(NUMADRA_WERROR "Treat compiler warnings in the project's own code as errors" OFF)
set(NUMADRA_WARNINGS_AS_ERRORS)
if(NUMADRA_WERROR)
  set(NUMADRA_WARNINGS_AS_ERRORS -Werror)
endif()
set(NUMADRA_WARNINGS -Wall -Wextra ${NUMADRA_WARNINGS_AS_ERRORS} -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
# GCC 12 (Debian 12's) at -O3 and -Os warns -Wrestrict inside std::string's own inlined
# append/insert (GCC bug 105329, fixed in GCC 13): the Release and MinSizeRel builds would print
# dozens of false positives, none about our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND NUMADRA_WARNINGS -Wno-restrict)
endif()

if(NUMADRA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

function(numadra_target_defaults target)
  target_compile_options(${target} PRIVATE ${NUMADRA_WARNINGS})
endfunction()

# numadra_library(NAME SOURCES... DEPS ...): one capability folder = one static library whose
# public headers live in <folder>/include.
function(numadra_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  numadra_target_defaults(${name})
endfunction()

# numadra_test(NAME SOURCES... DEPS ...): a GoogleTest binary registered with ctest.
function(numadra_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT NUMADRA_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} numadra_testing GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    NUMADRA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    NUMADRA_GENERATED_SYSFS="${NUMADRA_GENERATED_SYSFS}"
    NUMADRA_BIN_DIR="${CMAKE_BINARY_DIR}/bin")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  numadra_target_defaults(${name})
  add_dependencies(${name} generated_sysfs)
  # Every GoogleTest case is a "unit" test: the sanitizer build runs them all (ctest -L unit).
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()
