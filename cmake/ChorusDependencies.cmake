# Dependencies, all from Debian's packages (scripts/install_deps.sh installs
# them); CUDA and NCCL are optional and come from the CUDA Toolkit install.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)

# CUDA Toolkit and NCCL (beside it on these machines). ON when found; the
# NCCL backend slots into ops/nccl/ behind the same Backend interface.
find_package(CUDAToolkit QUIET)
set(CHORUS_NCCL_FOUND OFF)
if(CUDAToolkit_FOUND)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    set(CHORUS_NCCL_FOUND ON)
  endif()
endif()
option(CHORUS_WITH_NCCL "Build the NCCL backend (needs CUDA Toolkit and NCCL)" ${CHORUS_NCCL_FOUND})
if(CHORUS_WITH_NCCL AND NOT CHORUS_NCCL_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_NCCL=ON but the CUDA Toolkit or NCCL was not found")
endif()
message(STATUS "Chorus: MPI ${MPI_C_VERSION}, NCCL backend: ${CHORUS_WITH_NCCL}, sanitizers: ${CHORUS_SANITIZE}")

# LibTorch (Debian's libtorch-dev): the torch front end (frameworks/torch) and
# the examples build when it is found.
find_package(Torch CONFIG QUIET)
option(CHORUS_WITH_TORCH "Build the LibTorch front end and the examples" ${Torch_FOUND})
if(CHORUS_WITH_TORCH AND NOT Torch_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_TORCH=ON but LibTorch was not found (Debian: libtorch-dev)")
endif()
message(STATUS "Chorus: LibTorch front end: ${CHORUS_WITH_TORCH}")
