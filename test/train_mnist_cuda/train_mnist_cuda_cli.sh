#!/usr/bin/env bash
# train_mnist_cuda's command line and its behaviour without a GPU, on any
# machine (the GPUs are hidden with CUDA_VISIBLE_DEVICES=""):
#  - --help lists the options and exits 0;
#  - a bad option exits 2 with one line naming it;
#  - under mpirun -np 2 with no GPU visible, every rank exits 1 after one line
#    "train_mnist_cuda: no CUDA device is visible to rank N (...)": no crash,
#    no hang, nothing else on stderr from the program.
#   train_mnist_cuda_cli.sh TRAIN_MNIST_CUDA MPIEXEC
set -uo pipefail
binary="$1" mpiexec="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check DESCRIPTION CONDITION...
  local what="$1"
  shift
  if "$@"; then echo "ok      $what"; else echo "FAILED  $what"; failures=$((failures + 1)); fi
}

"$binary" --help >"$work/help.out" 2>"$work/help.err"
check "--help exits 0" test $? -eq 0
check "--help lists --batch-size and --checkpoint-dir" grep -q -- "--checkpoint-dir" "$work/help.out"

"$binary" --batch-size 0 >"$work/bad.out" 2>"$work/bad.err"
status=$?
check "--batch-size 0 exits 2 (got $status)" test $status -eq 2
check "--batch-size 0 says why" grep -qx "train_mnist_cuda: error: --batch-size=0 is invalid: expected an integer from 1 to 65536" "$work/bad.err"

"$binary" --model cnn >"$work/model.out" 2>"$work/model.err"
status=$?
check "--model (a LibTorch option) exits 2 (got $status)" test $status -eq 2
check "--model is named" grep -q "unrecognised option '--model'" "$work/model.err"

CUDA_VISIBLE_DEVICES="" timeout 120 "$mpiexec" -np 2 --oversubscribe -x CUDA_VISIBLE_DEVICES "$binary" \
  --data-dir /nonexistent >"$work/nogpu.out" 2>"$work/nogpu.err"
status=$?
echo "--- stderr of the run without a GPU:"
cat "$work/nogpu.err"
echo "---"
check "without a GPU the job exits 1 (got $status; 124 would be a hang)" test $status -eq 1
for rank in 0 1; do
  check "rank $rank says it has no CUDA device" \
    grep -q "^train_mnist_cuda: no CUDA device is visible to rank $rank (.*CUDA_VISIBLE_DEVICES is '')$" "$work/nogpu.err"
done
program_lines=$(grep -c "^train_mnist_cuda" "$work/nogpu.err")
check "exactly one line per rank from the program (got $program_lines)" test "$program_lines" -eq 2
check "no crash" bash -c "! grep -q -i -E 'segmentation|core dumped|terminate called|signal' '$work/nogpu.err'"

echo "$failures failed"
exit $((failures > 0))
