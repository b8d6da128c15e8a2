# Every dependency comes from a Debian 12 package (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
pkg_check_modules(LIBPCI REQUIRED IMPORTED_TARGET libpci)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
# RE2 gives CEL's matches() the same regular-expression dialect as cel-go.
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
if(NUMADRA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(NUMADRA_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# The daemon: gRPC towards the kubelet, libcurl towards the API server.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
pkg_check_modules(LIBCURL REQUIRED IMPORTED_TARGET libcurl)
# HTTP/2 framing, HPACK and flow control for plugin/grpc's server (libcurl loads it already).
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
find_package(Threads REQUIRED)
# cpp-httplib (header only) is used by the tests' fake API server only.
find_path(HTTPLIB_INCLUDE_DIR httplib.h REQUIRED)
