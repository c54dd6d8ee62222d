#!/usr/bin/env bash
# sbatch of the example job script (examples/slurm/train_mnist.sbatch) as a
# user submits it, with its default program: one epoch of train_mnist's
# reference MLP on 2 nodes x 2 tasks through chorusrun and srun. Checks that
# the job completed, that rank 0 reported a test accuracy that only correctly
# averaged training reaches after one epoch (>= 0.80; an untrained model
# scores ~0.10, and ranks drifting apart on unaveraged gradients are caught
# by the per-rank parameter digests below), and that all 4 ranks ended with
# identical parameters.
#   sbatch_train_mnist_test.sh <example script> <build dir> <mnist dir>
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
slurm_test_begin sbatch_train_mnist
script=${1:?usage: $0 SBATCH_SCRIPT BUILD_DIR MNIST_DIR}
build_dir=${2:?usage: $0 SBATCH_SCRIPT BUILD_DIR MNIST_DIR}
mnist_dir=${3:?usage: $0 SBATCH_SCRIPT BUILD_DIR MNIST_DIR}
[[ -x $build_dir/examples/train_mnist/train_mnist ]] || fail "train_mnist is not built in $build_dir"
[[ -x $build_dir/launcher/chorusrun ]] || fail "chorusrun is not built in $build_dir"
[[ -r $mnist_dir/train-images-idx3-ubyte ]] || fail "no MNIST files in $mnist_dir (scripts/prepare_mnist.sh)"
job=chorus-sbatch-mnist
output=$work_dir/job.out

cd "$work_dir"
CHORUS_BUILD_DIR="$build_dir" MNIST_DIR="$mnist_dir" CHORUSRUN_OPTIONS="--network-interface lo" \
  submit_job "$job" "$output" "$script"
expect_job_completed "$job_id" 240 "$output"

line=$(grep -E '^\[0\] epoch 1/1 .*test accuracy [0-9.]+' "$output" | tail -n 1) ||
  fail "rank 0 printed no epoch line with a test accuracy"
accuracy=$(sed -E 's/.*test accuracy ([0-9.]+).*/\1/' <<<"$line")
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.80) }' ||
  fail "test accuracy $accuracy after one epoch on 4 ranks; expected >= 0.80"
echo "rank 0: test accuracy $accuracy after one epoch on 4 ranks"
summary=$work_dir/chorus-mnist-$job_id.json
[[ -r $summary ]] || fail "the job wrote no summary $summary"
python3 - "$summary" <<'PY' || fail "the summary $summary does not show 4 ranks with identical parameters"
import json, sys
s = json.load(open(sys.argv[1]))
digests = s["parameter_digests"]
print(f"summary: world_size {s['world_size']}, digests {digests}")
assert s["world_size"] == 4 and len(digests) == 4 and len(set(digests)) == 1
PY
wait_until_gone 15 $job
cd /
rm -rf "$work_dir"
echo "sbatch_train_mnist: PASS"
