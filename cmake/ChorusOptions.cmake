# Build options.
option(CHORUS_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(CHORUS_BUILD_TESTS "Build the test suite and the benchmarks (test/)" ON)
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
