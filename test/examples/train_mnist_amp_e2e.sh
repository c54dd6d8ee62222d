#!/usr/bin/env bash
# Mixed precision end to end, on the prepared MNIST split:
#  1. train_mnist --amp bf16 on 2 ranks for 5 epochs (bfloat16 autocast of
#     the forward pass, GradScaler) reaches a test accuracy >= 0.93, both
#     ranks end with bit-identical parameters, and the summary records the
#     mode, the scaler's skipped steps and its final scale (2^16: 315 finite
#     steps are fewer than the growth interval of 2000, and bfloat16 has
#     float32's range, so no step overflows).
#  2. --amp fp16 stops every rank with the reason where this LibTorch's CPU
#     kernels have no float16 matrix product (1.13), or trains where they do.
#   train_mnist_amp_e2e.sh TRAIN_MNIST MPIEXEC DATA_DIR
set -euo pipefail
train_mnist="$1" mpiexec="$2" data_dir="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3

common=(--data-dir "$data_dir" --seed 11 --progress epochs)
echo "=== np=2, 5 epochs, --amp bf16 ==="
"$mpiexec" -np 2 --oversubscribe "$train_mnist" "${common[@]}" --epochs 5 --amp bf16 \
  --summary-json "$work/bf16.json"

echo "=== np=2, --amp fp16 ==="
fp16_status=0
"$mpiexec" -np 2 --oversubscribe "$train_mnist" "${common[@]}" --epochs 1 --amp fp16 \
  --summary-json "$work/fp16.json" >"$work/fp16.txt" 2>&1 || fp16_status=$?
cat "$work/fp16.txt"

"$python" - "$work/bf16.json" "$work/fp16.txt" "$fp16_status" "$work/fp16.json" <<'PY'
import json, os, sys
run = json.load(open(sys.argv[1]))
fp16_output = open(sys.argv[2]).read()
fp16_status = int(sys.argv[3])
failures = []
def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)
check(run["world_size"] == 2 and run["epochs_run"] == 5, "bf16: 2 ranks, 5 epochs")
check(run["amp"] == "bf16", "bf16: the summary records amp %r" % run["amp"])
check(run["final_test_accuracy"] >= 0.93,
      "bf16: test accuracy after 5 epochs %.4f >= 0.93" % run["final_test_accuracy"])
digests = run["parameter_digests"]
check(len(digests) == 2 and digests[0] == digests[1], "bf16: both ranks hold identical parameters %s" % digests)
check(run["amp_skipped_steps"] == 0 and run["amp_final_scale"] == 65536,
      "bf16: no skipped step, final scale 65536 (got %s, %s)" % (run["amp_skipped_steps"], run["amp_final_scale"]))
print("bf16: mean step %.5f s, %.0f samples/s" % (run["mean_step_seconds"], run["samples_per_second"]))
if fp16_status != 0:
    check(fp16_output.count("amp fp16 is not supported on the CPU") >= 1 and "expected --amp bf16" in fp16_output,
          "fp16: refused with the reason (exit status %d)" % fp16_status)
else:
    fp16 = json.load(open(sys.argv[4]))
    check(fp16["amp"] == "fp16", "fp16: trained (this LibTorch has float16 CPU matmul) and recorded")
sys.exit(1 if failures else 0)
PY
