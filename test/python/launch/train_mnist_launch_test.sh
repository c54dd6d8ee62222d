#!/usr/bin/env bash
# examples/python/train_mnist.py as a user launches it, at np=2:
#   mpirun     mpirun -np 2 PYTHON train_mnist.py
#   chorusrun  chorusrun -np 2 PYTHON train_mnist.py
# 5 epochs (the example's defaults) on the prepared MNIST split, compared
# with mnist_reference.py, the same computation in one process without
# Chorus: the final parameters bit-identical on both ranks and in the
# reference, the same test loss and accuracy, and accuracy >= 0.94 (the
# issue's bar; an untrained model scores ~0.10, ranks that skip the average
# or scale it wrongly differ from the reference from the first step on).
# Equality holds on any CPU: the compared runs take the same path with one
# BLAS thread each (see test/examples/train_mnist_e2e.sh).
#   train_mnist_launch_test.sh mpirun|chorusrun LAUNCHER PYTHON DATA_DIR
set -euo pipefail
route=${1:?usage: $0 mpirun|chorusrun LAUNCHER PYTHON DATA_DIR}
launcher=${2:?} python=${3:?} data_dir=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
example=$here/../../../examples/python/train_mnist.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
case "$route" in
  mpirun) launch=("$launcher" -np 2 --oversubscribe) ;;
  chorusrun) launch=("$launcher" -np 2) ;;
  *) echo "train_mnist_launch_test: unknown route '$route' (expected mpirun or chorusrun)" >&2; exit 2 ;;
esac
echo "=== $route -np 2 train_mnist.py ==="
"${launch[@]}" "$python" "$example" --data-dir "$data_dir" --summary-json "$work/run.json" | tee "$work/out.txt"
grep -Eq '^(\[0\] )?epoch 5/5 .*test accuracy [0-9.]+' "$work/out.txt" ||
  { echo "FAILED  rank 0 printed no 'epoch 5/5 ... test accuracy' line"; exit 1; }
echo "=== the same computation in one process (mnist_reference.py --np 2) ==="
"$python" "$here/mnist_reference.py" --np 2 --data-dir "$data_dir" --summary-json "$work/reference.json"
"$python" "$here/check_mnist_run.py" "$work/run.json" "$work/reference.json" 2 0.94
