#!/usr/bin/env bash
# sbatch of examples/slurm/train_mnist_python.sbatch as a user submits it:
# examples/python/train_mnist.py (5 epochs, its defaults) on 2 nodes x 2 tasks
# through chorusrun and srun. Checks that the job completed, that rank 0
# printed its last epoch's accuracy line, and that the run equals
# test/python/launch/mnist_reference.py --np 4 --hosts 2 (the same
# computation in one process without Chorus, summing the gradients in the
# hierarchical allreduce's order: each node's 2 ranks, then the nodes) bit for bit: all 4 ranks' final parameters, the test
# loss and accuracy, with accuracy >= 0.94.
#   sbatch_train_mnist_python_test.sh <example script> <source dir> <build dir> <python> <mnist dir>
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
slurm_test_begin sbatch_train_mnist_python
usage="usage: $0 SBATCH_SCRIPT SOURCE_DIR BUILD_DIR PYTHON MNIST_DIR"
script=${1:?$usage} source_dir=${2:?$usage} build_dir=${3:?$usage} python=${4:?$usage} mnist_dir=${5:?$usage}
[[ -x $build_dir/launcher/chorusrun ]] || fail "chorusrun is not built in $build_dir"
[[ -d $build_dir/python/chorus ]] || fail "the chorus package is not built in $build_dir/python"
[[ -r $mnist_dir/train-images-idx3-ubyte ]] || fail "no MNIST files in $mnist_dir (scripts/prepare_mnist.sh)"
job=chorus-sbatch-mnist-python
output=$work_dir/job.out

cd "$work_dir"
CHORUS_SOURCE_DIR="$source_dir" CHORUS_BUILD_DIR="$build_dir" CHORUS_PYTHON="$python" MNIST_DIR="$mnist_dir" \
  CHORUSRUN_OPTIONS="--network-interface lo" submit_job "$job" "$output" "$script"
expect_job_completed "$job_id" 200 "$output"
grep -Eq '^\[0\] epoch 5/5 .*test accuracy [0-9.]+' "$output" ||
  fail "rank 0 printed no 'epoch 5/5 ... test accuracy' line"
summary=$work_dir/chorus-mnist-python-$job_id.json
[[ -r $summary ]] || fail "the job wrote no summary $summary"
here=$source_dir/test/python/launch
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$python" "$here/mnist_reference.py" --np 4 --hosts 2 --data-dir "$mnist_dir" \
  --summary-json "$work_dir/reference.json" || fail "the reference run failed"
"$python" "$here/check_mnist_run.py" "$summary" "$work_dir/reference.json" 4 0.94 ||
  fail "the job's result differs from the single-process reference (above)"
wait_until_gone 15 $job
cd /
rm -rf "$work_dir"
echo "sbatch_train_mnist_python: PASS"
