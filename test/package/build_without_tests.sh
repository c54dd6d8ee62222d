#!/usr/bin/env bash
# The library builds without GoogleTest (issue 29): configures Chorus in a
# temporary build dir with CHORUS_BUILD_TESTS=OFF and GoogleTest made
# unfindable (CMAKE_DISABLE_FIND_PACKAGE_GTest: any find_package(GTest
# REQUIRED) outside test/ fails the configure), then builds the core library only (CUDA and LibTorch off to
# keep it short: what this checks is that nothing outside test/ needs
# GoogleTest; and at -O0 without debug information, half the time of the
# default RelWithDebInfo, since no code of it runs).
#   build_without_tests.sh <source dir> <c++ compiler>
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 <source dir> <c++ compiler>" >&2; exit 2; }
source_dir=$1 cxx=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/chorus_no_tests.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake -S "$source_dir" -B "$work" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCHORUS_BUILD_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
  -DCHORUS_WITH_CUDA=OFF -DCHORUS_WITH_NCCL=OFF -DCHORUS_WITH_CUDNN=OFF -DCHORUS_WITH_TORCH=OFF ||
  { echo "build_without_tests: FAIL: configuring with CHORUS_BUILD_TESTS=OFF failed" >&2; exit 1; }
cmake --build "$work" -j 2 --target chorus ||
  { echo "build_without_tests: FAIL: building chorus with CHORUS_BUILD_TESTS=OFF failed" >&2; exit 1; }
echo "build_without_tests: chorus built without GoogleTest"
