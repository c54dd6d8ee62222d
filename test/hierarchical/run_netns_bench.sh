#!/usr/bin/env bash
# chorus_bench over two network-namespace hosts (test/support/netns_hosts.sh)
# with the hierarchical allreduce (CHORUS_HIERARCHICAL_ALLREDUCE=auto) and
# with flat MPI (off), alternated run by run (A B A B ...), each run also
# timing raw MPI_Allreduce on the same buffers; prints each run's figures and
# writes their JSON to OUT_DIR.
# Usage: run_netns_bench.sh CHORUS_BENCH OUT_DIR [ROUNDS [SLOTS [chorus_bench options...]]]
#   ROUNDS: runs per mode (default 2); SLOTS: ranks per host (default 2).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/netns_hosts.sh
source "$here/../support/netns_hosts.sh"

bench=$1 out=$2 rounds=${3:-2} slots=${4:-2}
shift $(($# < 4 ? $# : 4))
options=("$@")
((${#options[@]})) || options=(--sizes 1MiB,16MiB,64MiB --repeats 10 --warmup 2 --latency-repeats 100 --idle-seconds 0)
mkdir -p "$out"
netns_hosts_up
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= rounds; ++round)); do
  for mode in auto off; do
    json=$out/netns-2x$slots-$mode-$round.json
    echo "=== round $round, CHORUS_HIERARCHICAL_ALLREDUCE=$mode ($(date +%T), load $(cut -d' ' -f1 /proc/loadavg))"
    NETNS_DEADLINE=600 netns_mpirun "$slots,$slots" --mca mpi_yield_when_idle 1 -x GLIBC_TUNABLES \
      -x CHORUS_HIERARCHICAL_ALLREDUCE=$mode -- "$bench" "${options[@]}" --json "$json" ||
      { echo "run_netns_bench: chorus_bench failed ($mode, round $round)"; exit 1; }
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
