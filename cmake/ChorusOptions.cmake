# Build options.
# The sanitizer build is the suite's check of the runtime: the libraries, the
# C API and the launcher (the fault tests run under it), with the tests of
# those. The hyperparameter search, the benchmarks, the launcher's and
# Slurm's own tests, packaging and the documents are checked by the normal
# build only: they add no concurrency of the runtime's, and building and
# running them twice made the suite slower than its 35-minute budget.
option(CHORUS_SANITIZE "Build the runtime and its tests with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(CHORUS_BUILD_TESTS "Build the test suite and the benchmarks (test/)" ON)
# cmake/ChorusTesting.cmake says which tests are the runtime's own and why
# scripts/build.sh leaves them to build-sanitize/.
option(CHORUS_RUNTIME_TESTS "Register the runtime's own tests with ctest (OFF: only those with CUDA or NCCL cases)" ON)
option(CHORUS_WERROR "Treat warnings in Chorus's own code as errors" OFF)

if(CHORUS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # The sanitizers' usual level, with line tables only: -O2 -g made every
  # instrumented file compile 2.4x slower, and this build exists to find
  # memory and UB errors (with file:line in its reports), not to be fast.
  add_compile_options(-O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()

# Warnings for our own targets only (dependencies' headers are SYSTEM), and
# for their C++ files only: nvcc takes none of these flags (a target with CUDA
# kernels, ops/cuda/, mixes both languages).
function(chorus_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
  if(CHORUS_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
