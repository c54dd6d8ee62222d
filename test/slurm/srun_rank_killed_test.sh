#!/usr/bin/env bash
# One rank of a 2 x 2 srun job SIGKILLs itself while the others allreduce:
# the step must end with an error well before the test's deadline, srun
# must name the killed task, and no task may be left running.
#   srun_rank_killed_test.sh <slurm_rank_killed binary>
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
slurm_test_begin srun_rank_killed
bin=${1:?usage: $0 TEST_PROGRAM}
[[ -x $bin ]] || fail "$bin is not an executable"
job=chorus-srun-killed

# Plain srun, as a user would type it (chorusrun adds --kill-on-bad-exit).
run_bounded 90 "$work_dir/out" srun --job-name=$job -N2 -n4 --ntasks-per-node=2 --mpi=pmix \
  "$bin" --victim 1 --wait-seconds 60
((timed_out == 0)) || fail "the job hung: srun was still running after 90 s"
((rc != 0)) || fail "srun exited with status 0 although rank 1 was killed"
[[ $(grep -c ': warm-up ok$' "$work_dir/out") -eq 4 ]] || fail "not every rank finished the warm-up allreduce"
expect_line "$work_dir/out" '^rank 1: killing itself$' "rank 1 did not reach its kill"
! grep -q 'all rounds done' "$work_dir/out" || fail "a survivor finished every allreduce without rank 1"
expect_line "$work_dir/out" 'task 1: Killed' "srun did not report task 1 as killed"

wait_until_gone 15 $job
echo "job gone from squeue at $SECONDS s"
deadline=$((SECONDS + 15))
while [[ -n $(pids_running "$bin") ]]; do
  ((SECONDS < deadline)) || fail "tasks of $bin still running 15 s after the job ended: pids $(pids_running "$bin")"
  sleep 0.2
done
echo "no task left at $SECONDS s"
rm -rf "$work_dir"
echo "srun_rank_killed: PASS (job ended with status $rc after ${elapsed} s)"
