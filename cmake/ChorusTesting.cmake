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

function(chorus_add_unit_test name)
  add_executable(${name} ${ARGN})
  # Unit tests exercise the runtime's parts, not the runtime.
  target_link_libraries(${name} PRIVATE chorus chorus_ops chorus_autotune GTest::gtest GTest::gmock GTest::gtest_main)
  chorus_set_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 LABELS unit ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endfunction()

# chorus_add_mpi_test(<target> NP <n>...) registers <target>_np<n> for each n.
function(chorus_add_mpi_test target)
  cmake_parse_arguments(ARG "" "TIMEOUT" "NP" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 240)
  endif()
  foreach(np IN LISTS ARG_NP)
    add_test(NAME ${target}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
              $<TARGET_FILE:${target}> --gtest_brief=1)
    set_tests_properties(${target}_np${np} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT} LABELS "parallel" PROCESSORS 2
      ENVIRONMENT "${CHORUS_MPI_TEST_ENV}")
  endforeach()
endfunction()
