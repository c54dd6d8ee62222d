#!/usr/bin/env bash
# Builds chorus_bench if stale and runs it under mpirun.
#   test/bench/run_bench.sh [np] [chorus_bench options...]
# np defaults to 2. Both sides (Chorus and raw MPI, every rank) run with the
# same glibc malloc tunables: no fresh mmap per large allocation and no trim,
# because first touch of fresh memory dominates large collectives on these
# machines (see PERF-NOTES.md). Above one rank per core the ranks are
# oversubscribed and Open MPI is told to yield when idle. The figures go to
# stdout and, as JSON, to build/bench/chorus_bench-np<np>-<time>.json.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
die() { echo "run_bench: error: $*" >&2; exit 1; }

np=2
if (($#)) && [[ "$1" != -* ]]; then
  np="$1"
  shift
fi
[[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "run_bench: np must be a positive integer, got '$np'" >&2; exit 2; }

"$root/scripts/build.sh" chorus_bench
bench="$root/build/test/bench/chorus_bench"
[[ -x "$bench" ]] || die "$bench was not built"
command -v mpirun >/dev/null 2>&1 || die "mpirun not found; run scripts/install_deps.sh"

if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296

mpi_args=(-np "$np" -x GLIBC_TUNABLES)
cores=$(nproc)
if ((np > cores)); then
  mpi_args+=(--oversubscribe --mca mpi_yield_when_idle 1)
fi

out_dir="$root/build/bench"
mkdir -p "$out_dir"
bench_args=("$@")
# Unless the caller chose a JSON path, write one under build/bench/.
if [[ " $* " != *" --json"* ]]; then
  bench_args+=(--json "$out_dir/chorus_bench-np$np-$(date +%Y%m%d-%H%M%S).json")
fi
echo "run_bench: GLIBC_TUNABLES=$GLIBC_TUNABLES mpirun ${mpi_args[*]} $bench ${bench_args[*]}" >&2
mpirun "${mpi_args[@]}" "$bench" "${bench_args[@]}"
