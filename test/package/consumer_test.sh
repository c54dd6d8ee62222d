#!/usr/bin/env bash
# A user's project against an installed Chorus (issue 29, packaging):
#  1. cmake --install <build dir> into a temporary prefix; the prefix's
#     include/ holds the public headers (chorus/...) and nothing else;
#  2. configures and builds test/package/consumer/ with find_package(Chorus)
#     and CMAKE_PREFIX_PATH=<prefix> only (and, with torch, COMPONENTS torch);
#     then the core consumer again with nlohmann_json unfindable (only
#     Chorus::tune needs it);
#  3. compiles the core consumer a second way, with pkg-config's flags
#     (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig);
#  4. builds examples/c (C99, the C compiler alone) against the C API, once
#     with find_package(Chorus) (Chorus::c) and once with gcc -std=c99 and
#     pkg-config's chorus-c flags;
#  5. runs every program at np=2 under mpirun; each checks its results
#     against values it computes itself and exits non-zero on a mismatch
#     (the C example's lines are compared with test/c/c_example_reference.py).
#   consumer_test.sh <build dir> <mpiexec> <c++ compiler> <ON|OFF: torch> <c compiler>
# Needs the build complete (cmake --install copies what the build made).
set -euo pipefail

[[ $# -eq 5 ]] || { echo "usage: $0 <build dir> <mpiexec> <c++ compiler> <ON|OFF> <c compiler>" >&2; exit 2; }
build_dir=$1 mpiexec=$2 cxx=$3 with_torch=$4 cc=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/chorus_consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail() { echo "consumer_test: FAIL: $*" >&2; exit 1; }
step() { echo "=== consumer_test: $* ($(date +%T))"; }

step "install $build_dir into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "cmake --install $build_dir failed: is the build complete (scripts/build.sh)?"
}

step "installed headers are the public ones only"
extra=$(cd "$prefix/include" && find . -type f ! \( -path './chorus/*' -name '*.h' \) | sort)
[[ -z "$extra" ]] || fail "include/ holds more than chorus/*.h: $extra"
[[ -f "$prefix/include/chorus/chorus.h" ]] || fail "include/chorus/chorus.h was not installed"
[[ -f "$prefix/include/chorus/c_api.h" ]] || fail "include/chorus/c_api.h was not installed"
if [[ "$with_torch" == ON ]]; then
  [[ -f "$prefix/include/chorus/torch.h" ]] || fail "include/chorus/torch.h was not installed"
fi

step "configure and build the consumer (find_package, torch: $with_torch)"
cmake -S "$here/consumer" -B "$work/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_WITH_TORCH="$with_torch" ||
  fail "configuring the consumer against $prefix failed"
cmake --build "$work/build" -j 2 || fail "building the consumer against $prefix failed"

step "the core consumer needs no nlohmann-json (only Chorus::tune's headers use it)"
cmake -S "$here/consumer" -B "$work/build_no_json" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON >"$work/no_json.log" 2>&1 || {
  cat "$work/no_json.log" >&2
  fail "configuring the core consumer with nlohmann_json unfindable failed"
}
cmake --build "$work/build_no_json" -j 2 --target core_consumer >>"$work/no_json.log" 2>&1 || {
  cat "$work/no_json.log" >&2
  fail "building the core consumer with nlohmann_json unfindable failed"
}

step "compile the core consumer with pkg-config"
pc_file=$(find "$prefix" -name chorus.pc -print -quit)
[[ -n "$pc_file" ]] || fail "no chorus.pc under $prefix"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc_file")
pc_flags=$(pkg-config --cflags --libs chorus) || fail "pkg-config --cflags --libs chorus failed"
echo "pkg-config: $pc_flags"
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++17 -Wall -Wextra -Werror "$here/consumer/core_consumer.cc" -o "$work/pc_consumer" \
  $pc_flags || fail "compiling with pkg-config's flags failed"

step "configure and build examples/c with the C compiler alone (find_package, Chorus::c)"
cmake -S "$source_dir/examples/c" -B "$work/build_c" -G Ninja -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/build_c.log" 2>&1 || {
  cat "$work/build_c.log" >&2
  fail "configuring examples/c against $prefix failed"
}
cmake --build "$work/build_c" -j 2 >>"$work/build_c.log" 2>&1 || {
  cat "$work/build_c.log" >&2
  fail "building examples/c against $prefix failed"
}

step "compile examples/c with $cc -std=c99 and pkg-config (chorus-c)"
pc_c_flags=$(pkg-config --cflags --libs chorus-c) || fail "pkg-config --cflags --libs chorus-c failed"
pc_c_libdir=$(pkg-config --variable=libdir chorus-c) || fail "pkg-config --variable=libdir chorus-c failed"
echo "pkg-config: $pc_c_flags"
# shellcheck disable=SC2086  # the flags are words
"$cc" -std=c99 -pedantic -Wall -Wextra -Werror "$source_dir/examples/c/collectives.c" -o "$work/pc_c_collectives" \
  $pc_c_flags -Wl,-rpath,"$pc_c_libdir" || fail "compiling examples/c with pkg-config's chorus-c flags failed"

for program in "$work/build_c/c_collectives" "$work/pc_c_collectives"; do
  step "mpirun -np 2 $(basename "$program") (compared with test/c/c_example_reference.py)"
  bash "$source_dir/test/c/c_example_test.sh" "$mpiexec" "$program" 2 || fail "$(basename "$program") failed at np=2"
done

programs=("$work/build/core_consumer" "$work/pc_consumer")
[[ "$with_torch" == ON ]] && programs+=("$work/build/torch_consumer")
for program in "${programs[@]}"; do
  step "mpirun -np 2 $(basename "$program")"
  "$mpiexec" -np 2 --oversubscribe "$program" || fail "$(basename "$program") failed at np=2"
done
if [[ "$with_torch" == ON ]]; then
  # docs/BUILDING.md's training program: fits known weights (it checks them itself
  # after 10 epochs), and a run stopped after 4 epochs and resumed from its
  # checkpoints must end with the same weights, to the last digit printed.
  train="$work/build/train_consumer"
  step "mpirun -np 2 train_consumer: 10 epochs, and 4 then resumed to 10"
  whole=$("$mpiexec" -np 2 --oversubscribe "$train" "$work/ckpt_whole" 10) || fail "train_consumer (10 epochs) failed at np=2"
  "$mpiexec" -np 2 --oversubscribe "$train" "$work/ckpt_resumed" 4 >/dev/null || fail "train_consumer (4 epochs) failed at np=2"
  resumed=$("$mpiexec" -np 2 --oversubscribe "$train" "$work/ckpt_resumed" 10) || fail "train_consumer (resumed to 10) failed at np=2"
  echo "uninterrupted: $whole"
  echo "resumed:       $resumed"
  [[ "$whole" == *"train_consumer final:"* ]] || fail "train_consumer printed no final weights"
  [[ "$whole" == "$resumed" ]] || fail "the resumed run ended with other weights than the uninterrupted one"
  kept=$(cd "$work/ckpt_resumed" && ls | sort | tr '\n' ' ')
  [[ "$kept" == "best.ckpt checkpoint-10.ckpt checkpoint-9.ckpt " ]] ||
    fail "checkpoint folder holds '$kept', expected best.ckpt and the newest 2 (keep_last=2)"
fi
step "all consumers passed"
