#!/usr/bin/env bash
# End to end, pipeline parallelism on the prepared MNIST split:
#  1. train_mnist --pipeline-stages 2 (np 2: one pipeline of 2 stages, 4
#     micro-batches, 1F1B) for the reference 5 epochs reaches a test accuracy
#     >= 0.92; the summary records the layout; --pipeline-trace writes a
#     Chrome trace with every micro-batch's forward and backward on both
#     stages.
#  2. One epoch of the same pipeline with GPipe ends with the test loss of the
#     single-process run of the same batches (np 1, same seed, batch and lr):
#     relative difference < 1e-5 (measured 1.5e-7; a pipeline that lost or mixed up a micro-
#     batch's activations or gradients would be far off).
#  3. np 4 = 2 stages x 2 data-parallel pipelines, 5 epochs: accuracy >= 0.92
#     and each stage's two replicas end bit-identical (digests of ranks 0
#     and 2, 1 and 3), i.e. the gradients were averaged over each stage's set.
#   train_mnist_pipeline_e2e.sh TRAIN_MNIST MPIEXEC DATA_DIR
set -euo pipefail
train_mnist="$1" mpiexec="$2" data_dir="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3

common=(--data-dir "$data_dir" --seed 11 --progress epochs)
echo "=== np=2, --pipeline-stages 2 --micro-batches 4 --schedule 1f1b, 5 epochs ==="
"$mpiexec" -np 2 --oversubscribe "$train_mnist" "${common[@]}" --epochs 5 --pipeline-stages 2 \
  --micro-batches 4 --schedule 1f1b --pipeline-trace "$work/trace.json" --summary-json "$work/long.json"
echo "=== np=2, --pipeline-stages 2 --micro-batches 4 --schedule gpipe, 1 epoch ==="
"$mpiexec" -np 2 --oversubscribe "$train_mnist" "${common[@]}" --epochs 1 --pipeline-stages 2 \
  --micro-batches 4 --schedule gpipe --summary-json "$work/pp.json"
echo "=== np=4, --pipeline-stages 2 (2 x 2), 5 epochs ==="
"$mpiexec" -np 4 --oversubscribe "$train_mnist" "${common[@]}" --epochs 5 --pipeline-stages 2 \
  --micro-batches 4 --schedule 1f1b --summary-json "$work/dp.json"
echo "=== np=1, 1 epoch (the same batches in one process) ==="
"$mpiexec" -np 1 "$train_mnist" "${common[@]}" --epochs 1 --summary-json "$work/np1.json"

"$python" - "$work/long.json" "$work/pp.json" "$work/np1.json" "$work/trace.json" "$work/dp.json" <<'PY'
import json, sys
long_run, pp, np1, trace, dp = (json.load(open(p)) for p in sys.argv[1:6])
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
relative = abs(pp["final_test_loss"] - np1["final_test_loss"]) / np1["final_test_loss"]
check(relative < 1e-5, "pipeline vs np=1 test loss after 1 epoch %.6f vs %.6f (relative difference %.2g < 1e-5)"
      % (pp["final_test_loss"], np1["final_test_loss"], relative))
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
sys.exit(1 if failures else 0)
PY
