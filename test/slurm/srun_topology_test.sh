#!/usr/bin/env bash
# Ranks started directly by `srun` (no chorusrun, no mpirun) on 2 virtual
# nodes x 2 tasks: every rank must find its rank, size, local and cross ranks
# (checked inside slurm_rank_check against Slurm's variables, and here
# against the layout srun's block distribution gives) and get correct sums.
#   srun_topology_test.sh <slurm_rank_check binary>
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
slurm_test_begin srun_topology
bin=${1:?usage: $0 TEST_PROGRAM}
[[ -x $bin ]] || fail "$bin is not an executable"

run_bounded 120 "$work_dir/out" srun --job-name=chorus-srun-topology -N2 -n4 --ntasks-per-node=2 \
  --mpi=pmix --kill-on-bad-exit=1 "$bin" --expect-nodes 2 --expect-tasks-per-node 2 --gtest_brief=1
((timed_out == 0)) || fail "srun did not finish within 120 s"
((rc == 0)) || fail "srun exited with status $rc (a check failed on some rank: see above)"

# Block distribution: ranks 0, 1 on the first node, 2, 3 on the second.
for expected in "0/4 local 0/2 cross 0/2 node n1" "1/4 local 1/2 cross 0/2 node n1" \
                "2/4 local 0/2 cross 1/2 node n2" "3/4 local 1/2 cross 1/2 node n2"; do
  expect_line "$work_dir/out" "slurm_rank_check: rank $expected\$" "rank ${expected%%/*} reported a wrong topology"
done
for rank in 0 1 2 3; do
  expect_line "$work_dir/out" "slurm_rank_check: rank $rank allreduce ok" "rank $rank did not check its sums"
done
[[ $(grep -c '^\[  PASSED  \]' "$work_dir/out") -eq 4 ]] || fail "not every rank's GoogleTest run passed"
rm -rf "$work_dir"
echo "srun_topology: PASS"
