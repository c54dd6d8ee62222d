#!/usr/bin/env bash
# train_mnist_cuda on GPUs, end to end on the prepared MNIST split. Exits 77
# (ctest: skipped) with the reason when no GPU is visible.
#   train_mnist_cuda_gpu_run.sh MODE TRAIN_MNIST_CUDA CUDA_DEVICE_COUNT MPIEXEC DATA_DIR
# MODE:
#  np1, np2     the reference run (5 epochs, batch 64 per rank, lr 1e-3 x
#               ranks) on 1 or 2 ranks: test accuracy >= 0.92, 5 epochs run,
#               all ranks end with bit-identical parameters (digests).
#  equivalence  1 epoch on 2 ranks against the single-process run that is
#               the same computation (batch 128 = both ranks' 64, lr 2e-3 =
#               1e-3 x 2, same data order): parameters within 2e-4 and test
#               losses within 0.1% (float rounding differs, nothing else).
#               Averaging skipped, the wrong tensors reduced or stale
#               gradients would be ~1e-1 apart.
#  resume       2 epochs, then a resumed 3rd, equals 3 epochs in one run
#               (parameters within 1e-5); a missing data folder is named.
# Two ranks share the GPU when only one is visible (the runtime's GPU
# backend decides how).
set -uo pipefail
mode="$1" binary="$2" device_count="$3" mpiexec="$4" data_dir="$5"
count=$("$device_count")
if [[ "$count" -lt 1 ]]; then
  echo "SKIP: no CUDA device is visible (cuda_device_count printed '$count'); train_mnist_cuda needs a GPU"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
common=(--data-dir "$data_dir" --seed 11 --progress epochs)
run() {  # run NP ARGS...
  local np="$1"
  shift
  echo "=== np=$np: $*"
  timeout 540 "$mpiexec" -np "$np" --oversubscribe "$binary" "${common[@]}" "$@"
}

# Parameters and test loss of a train_mnist_cuda checkpoint (cuda_checkpoint.h).
read_checkpoint='
import struct, sys
def load(path):
    data = open(path, "rb").read()
    magic = b"CHORUS-MNIST-CUDA-CHECKPOINT 2\n"
    assert data.startswith(magic), path
    at = len(magic) + 16
    (length,) = struct.unpack_from("<Q", data, at); at += 8 + length
    epochs, best, best_epoch, without, last_loss, last_acc, step = struct.unpack_from("<qdqqddq", data, at)
    at += 56
    (count,) = struct.unpack_from("<Q", data, at); at += 8
    return struct.unpack_from("<%df" % count, data, at), last_loss, epochs
'

case "$mode" in
  np1 | np2)
    np=${mode#np}
    run "$np" --summary-json "$work/summary.json" || exit 1
    "$python" - "$work/summary.json" "$np" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); np = int(sys.argv[2])
ok = True
def check(cond, what):
    global ok
    print(("ok      " if cond else "FAILED  ") + what); ok = ok and cond
check(s["world_size"] == np, "world size %s == %d" % (s["world_size"], np))
check(s["epochs_run"] == 5, "5 epochs run (got %s)" % s["epochs_run"])
check(s["final_test_accuracy"] >= 0.92, "test accuracy %.4f >= 0.92" % s["final_test_accuracy"])
d = s["parameter_digests"]
check(len(d) == np and len(set(d)) == 1, "every rank ends with the same parameters %s" % d)
sys.exit(0 if ok else 1)
PY
    ;;
  equivalence)
    run 2 --epochs 1 --checkpoint-dir "$work/np2" || exit 1
    run 1 --epochs 1 --batch-size 128 --lr 0.002 --checkpoint-dir "$work/np1" || exit 1
    "$python" -c "$read_checkpoint"'
a, loss_a, _ = load(sys.argv[1]); b, loss_b, _ = load(sys.argv[2])
diff = max(abs(x - y) for x, y in zip(a, b)); rel = abs(loss_a - loss_b) / loss_b
print("np=2 vs np=1 after 1 epoch: max |parameter difference| %.3g (largest parameter %.3g), test loss %.6f vs %.6f" % (diff, max(map(abs, b)), loss_a, loss_b))
sys.exit(0 if diff < 2e-4 and rel < 1e-3 else 1)' "$work/np2/last.ckpt" "$work/np1/last.ckpt"
    ;;
  resume)
    run 2 --epochs 3 --checkpoint-dir "$work/straight" || exit 1
    run 2 --epochs 2 --checkpoint-dir "$work/resumed" || exit 1
    run 2 --epochs 3 --checkpoint-dir "$work/resumed" --resume | tee "$work/resume.out" || exit 1
    grep -q "resumed from $work/resumed/last.ckpt after epoch 2" "$work/resume.out" || { echo "FAILED  no resume line"; exit 1; }
    "$python" -c "$read_checkpoint"'
a, _, ea = load(sys.argv[1]); b, _, eb = load(sys.argv[2])
diff = max(abs(x - y) for x, y in zip(a, b))
print("resumed vs straight after 3 epochs: epochs %d and %d, max |parameter difference| %.3g" % (ea, eb, diff))
sys.exit(0 if ea == eb == 3 and diff < 1e-5 else 1)' "$work/resumed/last.ckpt" "$work/straight/last.ckpt" || exit 1
    timeout 120 "$mpiexec" -np 1 "$binary" --data-dir "$work/missing" 2>"$work/missing.err"
    status=$?
    cat "$work/missing.err"
    [[ $status -eq 1 ]] && grep -q "Cannot open MNIST file '$work/missing/train-images-idx3-ubyte'" "$work/missing.err" ||
      { echo "FAILED  a missing data folder: exit $status, expected 1 and its name"; exit 1; }
    ;;
  *) echo "unknown mode '$mode'" >&2; exit 2 ;;
esac
