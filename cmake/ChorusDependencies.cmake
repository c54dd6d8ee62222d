# Dependencies, all from Debian's packages (scripts/install_deps.sh installs
# them); CUDA and NCCL are optional and come from the CUDA Toolkit install.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
# xxHash (Debian's libxxhash-dev) checksums checked files and checkpoints
# (core/base/checked_file.cc). Only its header: that file compiles the
# hash in (XXH_INLINE_ALL), so nothing links libxxhash and the installed
# package does not need it.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
if(NOT XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found: install libxxhash-dev (scripts/install_deps.sh) "
                      "or set XXHASH_INCLUDE_DIR to the folder that holds it")
endif()
# nlohmann-json (Debian's nlohmann-json3-dev, header-only): every JSON file
# Chorus writes or reads (timeline, tune's state file and log, run summaries,
# benchmark results) and the tests that parse them.
find_package(nlohmann_json 3 REQUIRED)

# CUDA Toolkit, NCCL and cuDNN (beside it on these machines). Each ON when
# found. CHORUS_WITH_CUDA builds the GPU device operations (ops/cuda/) and
# the host-staged GPU backend; CHORUS_WITH_NCCL adds the NCCL backend
# (ops/nccl/); CHORUS_WITH_CUDNN the cuBLAS/cuDNN example. A build without
# them serves host memory only, and a CUDA tensor gets an error saying so.
find_package(CUDAToolkit QUIET)
include(CheckLanguage)
check_language(CUDA)
set(CHORUS_CUDA_FOUND OFF)
if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER)
  set(CHORUS_CUDA_FOUND ON)
endif()
option(CHORUS_WITH_CUDA "Build the GPU device operations and backends (needs the CUDA Toolkit and nvcc)"
       ${CHORUS_CUDA_FOUND})
if(CHORUS_WITH_CUDA AND NOT CHORUS_CUDA_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_CUDA=ON but the CUDA Toolkit or nvcc was not found")
endif()
set(CHORUS_NCCL_FOUND OFF)
set(CHORUS_CUDNN_FOUND OFF)
if(CHORUS_WITH_CUDA)
  # Hopper (H100/H200) and Ampere (A100); override with -DCMAKE_CUDA_ARCHITECTURES=...
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # One CUDA runtime per process, the shared one that CUDA::cudart names:
  # CMake otherwise links cudart_static into every target with .cu files,
  # and a program linking both would hold two runtimes.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
    set(CHORUS_NCCL_FOUND ON)
  endif()
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(CUDNN_LIBRARY AND CUDNN_INCLUDE_DIR)
    set(CHORUS_CUDNN_FOUND ON)
  endif()
endif()
option(CHORUS_WITH_NCCL "Build the NCCL backend (needs CHORUS_WITH_CUDA and NCCL)" ${CHORUS_NCCL_FOUND})
if(CHORUS_WITH_NCCL AND NOT CHORUS_NCCL_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_NCCL=ON but CUDA is off or NCCL was not found")
endif()
option(CHORUS_WITH_CUDNN "Build the cuBLAS/cuDNN example (needs CHORUS_WITH_CUDA and cuDNN)" ${CHORUS_CUDNN_FOUND})
if(CHORUS_WITH_CUDNN AND NOT CHORUS_CUDNN_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_CUDNN=ON but CUDA is off or cuDNN was not found")
endif()
message(STATUS "Chorus: MPI ${MPI_C_VERSION}, CUDA: ${CHORUS_WITH_CUDA} ${CUDAToolkit_VERSION}, "
               "NCCL backend: ${CHORUS_WITH_NCCL}, cuDNN: ${CHORUS_WITH_CUDNN}, sanitizers: ${CHORUS_SANITIZE}")

# LibTorch (Debian's libtorch-dev): the torch front end (frameworks/torch) and
# the examples build when it is found.
find_package(Torch CONFIG QUIET)
option(CHORUS_WITH_TORCH "Build the LibTorch front end and the examples" ${Torch_FOUND})
if(CHORUS_WITH_TORCH AND NOT Torch_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_TORCH=ON but LibTorch was not found (Debian: libtorch-dev)")
endif()
message(STATUS "Chorus: LibTorch front end: ${CHORUS_WITH_TORCH}")

# The Python package (frameworks/python): a pybind11 extension for Debian's
# interpreter, whose python3-torch is the same LibTorch as libtorch-dev's.
# Another python3 may come first on PATH, so the default is Debian's own.
set(CHORUS_PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH
    "The Python interpreter the chorus package is built for (it needs torch)")
set(CHORUS_PYTHON_FOUND OFF)
if(CHORUS_WITH_TORCH AND EXISTS "${CHORUS_PYTHON_EXECUTABLE}")
  execute_process(COMMAND "${CHORUS_PYTHON_EXECUTABLE}" -c "import torch"
                  RESULT_VARIABLE chorus_python_torch OUTPUT_QUIET ERROR_QUIET)
  set(Python_EXECUTABLE "${CHORUS_PYTHON_EXECUTABLE}")
  find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  find_library(CHORUS_TORCH_PYTHON_LIBRARY torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib)
  if(chorus_python_torch EQUAL 0 AND Python_FOUND AND pybind11_FOUND AND CHORUS_TORCH_PYTHON_LIBRARY)
    set(CHORUS_PYTHON_FOUND ON)
  endif()
endif()
option(CHORUS_WITH_PYTHON
       "Build the Python package chorus (needs LibTorch, pybind11 and torch for CHORUS_PYTHON_EXECUTABLE)"
       ${CHORUS_PYTHON_FOUND})
if(CHORUS_WITH_PYTHON AND NOT CHORUS_PYTHON_FOUND)
  message(FATAL_ERROR "CHORUS_WITH_PYTHON=ON but ${CHORUS_PYTHON_EXECUTABLE} with torch, pybind11 "
                      "or libtorch_python was not found (Debian: python3-torch pybind11-dev)")
endif()
message(STATUS "Chorus: Python package: ${CHORUS_WITH_PYTHON} (${CHORUS_PYTHON_EXECUTABLE})")
