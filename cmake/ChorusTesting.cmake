# Test helpers. Unit tests run as plain processes; parallel tests run a
# GoogleTest binary under real `mpirun -np N` ranks, always with a timeout.
include(CTest)

set(CHORUS_MPI_TEST_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Single machine: keep Open MPI on loopback and shared memory.
  OMPI_MCA_btl_tcp_if_include=lo
  OMPI_MCA_oob_tcp_if_include=lo
  # Oversubscribed ranks must yield instead of spinning.
  OMPI_MCA_mpi_yield_when_idle=1
  # Open MPI keeps allocations until MPI_Finalize; LeakSanitizer would report them.
  ASAN_OPTIONS=detect_leaks=0
  # The shared-memory probe's cache (ops/shm/shm_probe_cache.h): measured
  # under the suite's load, so kept in the build tree, not the user's.
  XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-cache)

# The runtime's own tests (test/unit/, test/parallel/, and the fault, shared-
# memory crash, hierarchical and C tests) all run under the sanitizers in
# build-sanitize/. A build configured with CHORUS_RUNTIME_TESTS=OFF (build/ of
# scripts/build.sh) leaves them to it: ctest does not list them there, and
# their programs are built only when asked for by name (the GPU checks'
# bundle asks for some). Running each of them twice, at two optimization
# levels, made the suite slower than its 35-minute budget on 2 cores. The
# ones whose cases depend on CUDA or NCCL, which the sanitizer build has
# not, are registered in every build: CHORUS_TESTS_WITH_DEVICE_CASES.
set(CHORUS_TESTS_WITH_DEVICE_CASES
  # test/unit/
  cuda_api_test cuda_batched_copy_test cuda_device_test device_contract_test gpu_plan_test
  # test/parallel/
  backend_contract_test c_api_collectives_test device_refusal_test init_agreement_test)

# chorus_runtime_test_registered(<out> <program>): TRUE where this build
# registers the runtime test <program>; otherwise FALSE, and <program> is
# left out of the default build.
function(chorus_runtime_test_registered out program)
  if(CHORUS_RUNTIME_TESTS OR program IN_LIST CHORUS_TESTS_WITH_DEVICE_CASES)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set_target_properties(${program} PROPERTIES EXCLUDE_FROM_ALL ON)
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# chorus_add_unit_test(<name> [RUNTIME] <source>...): RUNTIME marks one of
# the runtime's own tests (above).
function(chorus_add_unit_test name)
  cmake_parse_arguments(ARG "RUNTIME" "" "" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  # Unit tests exercise the runtime's parts, not the runtime.
  target_link_libraries(${name} PRIVATE chorus chorus_ops chorus_autotune GTest::gtest GTest::gmock GTest::gtest_main)
  chorus_set_warnings(${name})
  target_precompile_headers(${name} REUSE_FROM chorus_unit_test_pch)  # test/CMakeLists.txt
  set(registered TRUE)
  if(ARG_RUNTIME)
    chorus_runtime_test_registered(registered ${name})
  endif()
  if(registered)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS unit ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endfunction()

# chorus_add_mpi_test(<target> [RUNTIME] [NAME <name>] NP <n>... [TIMEOUT <s>]
#                     [ARGS <arg>...]) registers <name>_np<n> for each n
# (<name> defaults to <target>), running <target> with ARGS on n ranks.
# RUNTIME marks one of the runtime's own tests (above).
function(chorus_add_mpi_test target)
  cmake_parse_arguments(ARG "RUNTIME" "TIMEOUT;NAME" "NP;ARGS" ${ARGN})
  if(ARG_RUNTIME)
    chorus_runtime_test_registered(registered ${target})
    if(NOT registered)
      return()
    endif()
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 240)
  endif()
  if(NOT ARG_NAME)
    set(ARG_NAME ${target})
  endif()
  foreach(np IN LISTS ARG_NP)
    add_test(NAME ${ARG_NAME}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
              $<TARGET_FILE:${target}> --gtest_brief=1 ${ARG_ARGS})
    set_tests_properties(${ARG_NAME}_np${np} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT} LABELS "parallel" PROCESSORS 2
      ENVIRONMENT "${CHORUS_MPI_TEST_ENV}")
  endforeach()
endfunction()

# chorus_gtest_filter(<out> <program> <source>): a --gtest_filter value that
# selects exactly the tests <source> defines, for a program built from several
# test files: "Suite.*" for TEST and TEST_F, "*/Suite.*" for TEST_P (named
# Prefix/Suite.Test/N), "Suite/*" for TYPED_TEST (Suite/N.Test). A suite's
# name must belong to one file of <program>: configuring fails otherwise,
# since that file's test would run the other's tests too.
function(chorus_gtest_filter out program source)
  file(STRINGS ${source} lines REGEX "^(TYPED_TEST|TEST_F|TEST_P|TEST)\\( *[A-Za-z0-9_]+")
  set(patterns "")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^(TYPED_TEST|TEST_F|TEST_P|TEST)\\( *([A-Za-z0-9_]+)" match "${line}")
    set(suite ${CMAKE_MATCH_2})
    if(CMAKE_MATCH_1 STREQUAL "TEST_P")
      list(APPEND patterns "*/${suite}.*")
    elseif(CMAKE_MATCH_1 STREQUAL "TYPED_TEST")
      list(APPEND patterns "${suite}/*")
    else()
      list(APPEND patterns "${suite}.*")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES patterns)
  if(NOT patterns)
    message(FATAL_ERROR "chorus_gtest_filter: ${source} defines no GoogleTest test (TEST, TEST_F, TEST_P, TYPED_TEST)")
  endif()
  get_property(taken GLOBAL PROPERTY CHORUS_GTEST_SUITES_${program})
  foreach(pattern IN LISTS patterns)
    if(pattern IN_LIST taken)
      message(FATAL_ERROR "chorus_gtest_filter: the suite of '${pattern}' in ${source} is defined by another "
                          "test file of ${program} too; give it a name of its own")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY CHORUS_GTEST_SUITES_${program} ${patterns})
  list(JOIN patterns ":" filter)
  set(${out} "${filter}" PARENT_SCOPE)
endfunction()
