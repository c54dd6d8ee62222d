#!/usr/bin/env bash
# sbatch of the example job script (examples/slurm/train_mnist.sbatch) on
# 2 nodes x 2 tasks: the script runs chorusrun, which starts the ranks with
# srun. Instead of train_mnist (which needs LibTorch and the MNIST files)
# the job runs slurm_rank_check, so the job's output shows every rank's
# topology and checked sums.
#   sbatch_example_test.sh <example script> <chorusrun> <slurm_rank_check>
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
slurm_test_begin sbatch_example
script=${1:?usage: $0 SBATCH_SCRIPT CHORUSRUN TEST_PROGRAM}
chorusrun=${2:?usage: $0 SBATCH_SCRIPT CHORUSRUN TEST_PROGRAM}
bin=${3:?usage: $0 SBATCH_SCRIPT CHORUSRUN TEST_PROGRAM}
[[ -r $script ]] || fail "$script does not exist"
[[ -x $chorusrun ]] || fail "$chorusrun is not an executable (is chorusrun built?)"
[[ -x $bin ]] || fail "$bin is not an executable"
job=chorus-sbatch-example
output=$work_dir/job.out

# The script's own #SBATCH lines ask for 2 nodes x 2 tasks; sbatch passes
# this environment (SLURM_CONF, OMPI_MCA_*) on to the job.
cd "$work_dir"
echo "+ sbatch $script $bin ..."
CHORUSRUN="$chorusrun" CHORUSRUN_OPTIONS="--network-interface lo" \
  submit_job "$job" "$output" "$script" "$bin" --expect-nodes 2 --expect-tasks-per-node 2 --gtest_brief=1

expect_job_completed "$job_id" 150 "$output"

# chorusrun prefixes each line with its rank; block distribution puts
# ranks 0, 1 on the first node and 2, 3 on the second.
for expected in "0/4 local 0/2 cross 0/2 node n1" "1/4 local 1/2 cross 0/2 node n1" \
                "2/4 local 0/2 cross 1/2 node n2" "3/4 local 1/2 cross 1/2 node n2"; do
  r=${expected%%/*}
  expect_line "$output" "^\[$r\] slurm_rank_check: rank $expected\$" "rank $r reported a wrong topology"
  expect_line "$output" "^\[$r\] slurm_rank_check: rank $r allreduce ok\$" "rank $r did not check its sums"
  expect_line "$output" "^\[$r\] \[  PASSED  \]" "rank $r's checks did not all pass"
done
wait_until_gone 15 $job
cd /
rm -rf "$work_dir"
echo "sbatch_example: PASS"
