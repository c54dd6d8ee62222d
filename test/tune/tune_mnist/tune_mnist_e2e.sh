#!/usr/bin/env bash
# tune_mnist end to end at a tiny scale (np 2, one rank per trial, ASHA with
# R 3 and eta 3 over 6 trials, 2,000 training and 500 validation images):
# the search must finish, and check_tune_log.py checks its log and printout
# independently. Then a bad --ranks-per-trial must be a clear error.
# Usage: tune_mnist_e2e.sh <tune_mnist> <mpirun> <data-dir>
set -u
tune=$1 mpirun=$2 data=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d /tmp/chorus-tune-mnist-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "tune_mnist e2e FAILED: $*"; exit 1; }

timeout --kill-after=5 120 "$mpirun" -np 2 --oversubscribe "$tune" --data-dir "$data" --scheduler asha \
  --ranks-per-trial 1 --max-budget 3 --eta 3 --trials 6 --seed 7 --train-samples 2000 --validation-samples 500 \
  --state "$dir/state.json" --log "$dir/log.json" --checkpoint-dir "$dir/ckpt" >"$dir/out.txt" 2>&1
status=$?
cat "$dir/out.txt"
[[ $status -eq 0 ]] || fail "the search ended with status $status"
python3 "$here/check_tune_log.py" "$dir/log.json" "$dir/out.txt" 6 3 3 500 2 "$dir/ckpt" || fail "the log is not consistent"
cmp -s "$dir/log.json" "$dir/state.json" || fail "--log differs from the final state file"

timeout --kill-after=5 60 "$mpirun" -np 2 --oversubscribe "$tune" --data-dir "$data" --ranks-per-trial 3 \
  --state "$dir/other.json" >"$dir/bad.txt" 2>&1 && fail "--ranks-per-trial 3 at np 2 was accepted"
cat "$dir/bad.txt"
grep -q "tune_mnist: error: --ranks-per-trial 3 does not divide the job's 2 ranks into whole groups" "$dir/bad.txt" ||
  fail "no clear error for --ranks-per-trial 3 at np 2"
echo "tune_mnist e2e passed"
