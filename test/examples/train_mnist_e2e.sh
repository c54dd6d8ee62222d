#!/usr/bin/env bash
# End to end, on the prepared MNIST split: train_mnist on 2 ranks for 4
# epochs (252 steps per rank) against mnist_reference_train, the same
# computation in one process without Chorus (test/examples/
# reference_training.h: each replica's batch of 64 through the same
# operations, the two gradients averaged in Chorus's documented order, Adam
# at lr 1e-3 x 2, the same seed and data order):
#  - the final parameters are bit-identical (mnist_checkpoint_diff: max
#    |difference| 0, and the same digests on both ranks and in the
#    reference), and so are the test loss and accuracy;
#  - the test accuracy is >= 0.90.
# Equality holds on any CPU: the runs take the same path, so OpenBLAS's
# per-processor kernels cannot make them differ. (The check this replaces
# compared with the single-process run of batch 128 within 2e-4, a bound
# that depends on how rounding grows under Adam with the CPU's kernels: 1.6e-4
# with OpenBLAS's Prescott kernels, 2.03e-4 with its AVX-512 SkylakeX ones.) Ranks that skipped the average,
# reduced the wrong tensors, scaled it wrongly or stepped on stale gradients
# differ from the first step on.
#   train_mnist_e2e.sh TRAIN_MNIST REFERENCE_TRAIN CHECKPOINT_DIFF MPIEXEC DATA_DIR
set -euo pipefail
train_mnist="$1" reference="$2" checkpoint_diff="$3" mpiexec="$4" data_dir="$5"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
# OpenBLAS runs large matrix products (the evaluation's 1000 rows) on threads
# of its own, which --threads does not set, and splits their sums by the
# thread count: a rank that mpirun binds to one core has one, an unbound
# process (the reference, or ranks oversubscribed) one per core. One thread
# everywhere, so the compared runs take the same path on any machine.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

args=(--data-dir "$data_dir" --seed 11 --progress epochs --epochs 4)
echo "=== np=2, 4 epochs ==="
"$mpiexec" -np 2 --oversubscribe "$train_mnist" "${args[@]}" --checkpoint-dir "$work/np2" \
  --summary-json "$work/np2.json"
echo "=== the same computation in one process (mnist_reference_train --np 2) ==="
"$reference" --np 2 "${args[@]}" --checkpoint-dir "$work/reference" --summary-json "$work/reference.json"
"$checkpoint_diff" "$work/np2" "$work/reference" | tee "$work/diff.txt"

"$python" - "$work/np2.json" "$work/reference.json" "$work/diff.txt" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
reference = json.load(open(sys.argv[2]))
diff = dict(line.split() for line in open(sys.argv[3]))
failures = []
def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)
check(run["world_size"] == 2 and reference["world_size"] == 2, "world sizes 2 and 2")
check(run["epochs_run"] == 4, "the run ran 4 epochs (got %s)" % run["epochs_run"])
check(run["final_test_accuracy"] >= 0.90,
      "np=2 test accuracy after 4 epochs %.4f >= 0.90" % run["final_test_accuracy"])
digests = run["parameter_digests"]
check(len(digests) == 2 and digests[0] == digests[1], "both ranks hold identical parameters %s" % digests)
check(float(diff["max_abs_diff"]) == 0,
      "np=2 vs reference: max |parameter difference| %s == 0 (largest parameter %s)"
      % (diff["max_abs_diff"], diff["max_abs_parameter"]))
check(digests == reference["parameter_digests"],
      "np=2 digests %s == reference's %s" % (digests, reference["parameter_digests"]))
for key in ("final_test_loss", "final_test_accuracy"):
    check(run[key] == reference[key], "np=2 vs reference %s: %r == %r" % (key, run[key], reference[key]))
sys.exit(1 if failures else 0)
PY
