#!/usr/bin/env bash
# Configures (only when needed) and builds Chorus with Ninja, RelWithDebInfo.
#   scripts/build.sh [--sanitize] [target...]
#     (default)   build/            all targets
#     --sanitize  build-sanitize/   -DCHORUS_SANITIZE=ON (AddressSanitizer + UBSan), without
#                 the LibTorch front end and examples (LibTorch itself is not
#                 instrumented, and compiling its headers twice would double
#                 the suite's build time on 2 cores) and without CUDA (the
#                 normal build compiles it; this one proves a build without
#                 it works); it runs the runtime's own tests, which build/
#                 leaves to it (-DCHORUS_RUNTIME_TESTS=OFF there:
#                 cmake/ChorusTesting.cmake says which and why)
#     target...   build only these (e.g. chorus_bench); Ninja rebuilds only what is stale.
#   CHORUS_BUILD_JOBS=N overrides the parallelism (default: nproc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
die() { echo "build: error: $*" >&2; exit 1; }

sanitize=OFF
runtime_tests=OFF
with_torch=AUTO
build_dir="$root/build"
targets=()
while (($#)); do
  case "$1" in
    --sanitize) sanitize=ON; runtime_tests=ON; with_torch=OFF; build_dir="$root/build-sanitize" ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "build: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done

for tool in cmake ninja; do
  command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found; run scripts/install_deps.sh"
done
jobs="${CHORUS_BUILD_JOBS:-$(nproc)}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "CHORUS_BUILD_JOBS='$jobs' is not a positive integer"

# Configure only when there is no usable Ninja build tree with our settings;
# once configured, Ninja re-runs CMake by itself when a CMakeLists.txt changes.
cache="$build_dir/CMakeCache.txt"
configure=0
if [[ ! -f "$cache" || ! -f "$build_dir/build.ninja" ]]; then
  configure=1
else
  if ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
    die "$build_dir was configured with another generator than Ninja; remove it and rerun"
  fi
  grep -qx "CHORUS_SANITIZE:BOOL=$sanitize" "$cache" || configure=1
  grep -qx "CHORUS_RUNTIME_TESTS:BOOL=$runtime_tests" "$cache" || configure=1
  grep -qx 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo' "$cache" || configure=1
  if [[ "$with_torch" == OFF ]]; then grep -qx 'CHORUS_WITH_TORCH:BOOL=OFF' "$cache" || configure=1; fi
  if [[ "$sanitize" == ON ]]; then grep -qx 'CHORUS_WITH_CUDA:BOOL=OFF' "$cache" || configure=1; fi
fi
if ((configure)); then
  echo "build: configuring $build_dir (CHORUS_SANITIZE=$sanitize)" >&2
  torch_flag=()
  [[ "$with_torch" == OFF ]] && torch_flag=(-DCHORUS_WITH_TORCH=OFF)
  # The sanitizer build is the suite's build without CUDA.
  [[ "$sanitize" == ON ]] && torch_flag+=(-DCHORUS_WITH_CUDA=OFF -DCHORUS_WITH_NCCL=OFF -DCHORUS_WITH_CUDNN=OFF)
  cmake -S "$root" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHORUS_SANITIZE="$sanitize" \
    -DCHORUS_RUNTIME_TESTS="$runtime_tests" "${torch_flag[@]}" ||
    die "configuring $build_dir failed (see CMake's messages above)"
fi

echo "build: building ${targets[*]:-all targets} in $build_dir with -j$jobs" >&2
if ((${#targets[@]})); then
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" || die "build in $build_dir failed"
else
  cmake --build "$build_dir" -j "$jobs" || die "build in $build_dir failed"
fi
