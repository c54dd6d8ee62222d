#!/usr/bin/env bash
# End to end, pipeline parallelism on the prepared MNIST split, each run
# against mnist_reference_train with the same arguments: the same
# computation in one process without Chorus (test/examples/
# reference_training.h: each batch's micro-batches through the whole model,
# loss / M backward in micro-batch order, the pipelines' gradients averaged
# in Chorus's documented order). The stages' parameters (digests), the test
# loss and the accuracy must equal the reference's bit for bit, which holds
# on any CPU (the same operations on the same tensors); a pipeline that lost
# or mixed up a micro-batch's activations or gradients, or a data-parallel
# set that did not average, differs from the first step on.
#  1. train_mnist --pipeline-stages 2 (np 2: one pipeline of 2 stages, 4
#     micro-batches, 1F1B) for the reference 5 epochs reaches a test accuracy
#     >= 0.92 and equals the reference; the summary records the layout;
#     --pipeline-trace writes a Chrome trace with every micro-batch's forward
#     and backward on both stages.
#  2. One epoch of the same pipeline with GPipe equals the reference.
#  3. np 4 = 2 stages x 2 data-parallel pipelines, 5 epochs: accuracy >= 0.92,
#     each stage's two replicas end bit-identical (digests of ranks 0 and 2,
#     1 and 3), and the run equals the reference.
#   train_mnist_pipeline_e2e.sh TRAIN_MNIST REFERENCE_TRAIN MPIEXEC DATA_DIR
set -euo pipefail
train_mnist="$1" reference="$2" mpiexec="$3" data_dir="$4"
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

common=(--data-dir "$data_dir" --seed 11 --progress epochs --pipeline-stages 2 --micro-batches 4)
run() {  # run NAME NP ARGS...: train_mnist and its reference
  local name="$1" np="$2"
  shift 2
  echo "=== $name: np=$np $* ==="
  "$mpiexec" -np "$np" --oversubscribe "$train_mnist" "${common[@]}" "$@" --summary-json "$work/$name.json"
  "$reference" --np "$np" "${common[@]}" "$@" --summary-json "$work/$name.reference.json"
}
run long 2 --epochs 5 --schedule 1f1b --pipeline-trace "$work/trace.json"
run pp 2 --epochs 1 --schedule gpipe
run dp 4 --epochs 5 --schedule 1f1b

"$python" - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(name):
    return json.load(open(os.path.join(work, name)))
long_run, trace, dp = load("long.json"), load("trace.json"), load("dp.json")
failures = []
def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)
layout = {k: long_run.get(k) for k in ("pipeline_stages", "micro_batches", "schedule", "data_parallel_size")}
check(layout == {"pipeline_stages": 2, "micro_batches": 4, "schedule": "1f1b", "data_parallel_size": 1},
      "the summary records the layout: %s" % layout)
check(long_run["epochs_run"] == 5, "the long run ran 5 epochs (got %s)" % long_run["epochs_run"])
check(long_run["final_test_accuracy"] >= 0.92,
      "pipeline test accuracy after 5 epochs %.4f >= 0.92" % long_run["final_test_accuracy"])
spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
steps = {e["args"]["step"] for e in spans}
for stage in (0, 1):
    mine = [e for e in spans if e["tid"] == stage]
    want = 2 * 4 * len(steps)  # F and B of 4 micro-batches per step
    check(len(mine) == want, "trace: stage %d has %d spans (expected %d)" % (stage, len(mine), want))
check(dp["data_parallel_size"] == 2 and dp["pipeline_stages"] == 2, "np=4: 2 stages x 2 pipelines")
check(dp["final_test_accuracy"] >= 0.92, "np=4 test accuracy after 5 epochs %.4f >= 0.92" % dp["final_test_accuracy"])
d = dp["parameter_digests"]
check(len(d) == 4 and d[0] == d[2] and d[1] == d[3] and d[0] != d[1],
      "np=4: each stage's replicas hold identical parameters %s" % d)
for name in ("long", "pp", "dp"):
    run, reference = load(name + ".json"), load(name + ".reference.json")
    check(run["parameter_digests"] == reference["parameter_digests"],
          "%s: every rank's stage equals the reference's: %s == %s"
          % (name, run["parameter_digests"], reference["parameter_digests"]))
    for key in ("final_test_loss", "final_test_accuracy"):
        check(run[key] == reference[key], "%s: %s %r == reference's %r" % (name, key, run[key], reference[key]))
sys.exit(1 if failures else 0)
PY
