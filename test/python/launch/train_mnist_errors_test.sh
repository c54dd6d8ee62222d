#!/usr/bin/env bash
# examples/python/train_mnist.py on bad input, at np=2 under mpirun: each
# case must end (no rank left waiting) with a failing status and a message
# naming what was wrong and what was expected.
#   train_mnist_errors_test.sh MPIEXEC PYTHON DATA_DIR
set -euo pipefail
mpiexec=${1:?usage: $0 MPIEXEC PYTHON DATA_DIR} python=${2:?} data_dir=${3:?}
example=$(cd "$(dirname "$0")/../../../examples/python" && pwd)/train_mnist.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect NAME STATUS TEXT ARGS...: the example at np=2 exits with STATUS
# (mpirun's, which is the failing ranks') within 60 s and its output holds TEXT (a fixed string) once per rank.
expect() {
  local name=$1 status=$2 text=$3
  shift 3
  local rc=0
  timeout --kill-after=5 60 "$mpiexec" -np 2 --oversubscribe "$python" "$example" "$@" >"$work/out" 2>&1 || rc=$?
  local count
  count=$(grep -oF -- "$text" "$work/out" | wc -l)
  if ((rc == 124 || rc == 137)); then
    echo "FAILED  $name: still running after 60 s"; failures=$((failures + 1))
  elif ((rc != status || count != 2)); then
    echo "FAILED  $name: exit status $rc (expected $status), '$text' printed $count times (expected by both ranks)"
    sed 's/^/  | /' "$work/out"; failures=$((failures + 1))
  else
    echo "ok      $name: exit status $rc, both ranks: $(grep -F -m1 -- "$text" "$work/out")"
  fi
}

bad=$work/mnist
mkdir "$bad"
cp "$data_dir"/*-ubyte "$bad/"
expect "bad flag" 2 "argument --batch-size: '0' is not an integer from 1 to 65536" --data-dir "$data_dir" --batch-size 0
expect "missing folder" 1 "cannot open MNIST file '$work/none/train-images-idx3-ubyte': No such file or directory (expected an IDX file; scripts/prepare_mnist.sh prepares them)" \
  --data-dir "$work/none"
head -c 5000 "$data_dir/t10k-images-idx3-ubyte" >"$bad/t10k-images-idx3-ubyte"
expect "truncated images" 1 "MNIST file '$bad/t10k-images-idx3-ubyte' is 5000 bytes, expected 1568016 (16-byte header + 2000 x 28 x 28 bytes as its header says): truncated" \
  --data-dir "$bad"
cp "$data_dir/t10k-images-idx3-ubyte" "$bad/"
printf '\x00\x00\x08\x03' | cat - <(tail -c +5 "$data_dir/train-labels-idx1-ubyte") >"$bad/train-labels-idx1-ubyte"
expect "labels file with an images magic" 1 "MNIST file '$bad/train-labels-idx1-ubyte' has magic number 0x00000803, expected 0x00000801 (IDX labels: N unsigned bytes)" \
  --data-dir "$bad"
((failures == 0)) || { echo "train_mnist_errors_test: $failures case(s) failed"; exit 1; }
echo "train_mnist_errors_test: PASS"
