#!/usr/bin/env bash
# train_mnist_cuda on GPUs, end to end on the prepared MNIST split. Exits 77
# (ctest: skipped) with the reason when no GPU is visible.
#   train_mnist_cuda_gpu_run.sh MODE TRAIN_MNIST_CUDA CUDA_DEVICE_COUNT MPIEXEC DATA_DIR
# MODE:
#  np1, np2     the reference run (5 epochs, batch 64 per rank, lr 1e-3 x
#               ranks) on 1 or 2 ranks: test accuracy >= 0.92, 5 epochs run,
#               all ranks end with bit-identical parameters (digests).
#  equivalence  1 epoch (80 steps of 100 samples, lr 2e-3, the same data
#               order) in three float orders of the same computation:
#               C, 2 ranks of 50 averaged by Chorus (the run under test);
#               A, 1 rank of 100; B, 2 ranks of 2 accumulated passes of 25.
#               A vs B is a reordering that is right by construction: how
#               far its parameters and test loss drift apart is what
#               rounding does on this GPU (cuBLAS picks its kernels per
#               GPU, so no fixed bound holds on every machine). C must be
#               within 10 x that of A (the largest of ~100k differences
#               varies by a small factor between equally valid orders).
#               Averaging skipped, the wrong tensors reduced or stale
#               gradients would be ~1e-1 apart, hundreds of times more.
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
    # 4000 samples per rank: 50 divides them, so no step of any run is partial.
    run 2 --epochs 1 --batch-size 50 --checkpoint-dir "$work/c" || exit 1
    run 1 --epochs 1 --batch-size 100 --lr 0.002 --checkpoint-dir "$work/a" || exit 1
    run 2 --epochs 1 --batch-size 25 --accumulate 2 --checkpoint-dir "$work/b" || exit 1
    "$python" -c "$read_checkpoint"'
c, loss_c, _ = load(sys.argv[1]); a, loss_a, _ = load(sys.argv[2]); b, loss_b, _ = load(sys.argv[3])
def apart(x, y): return max(abs(p - q) for p, q in zip(x, y))
spread, diff = apart(a, b), apart(c, a)
loss_spread, loss_diff = abs(loss_a - loss_b), abs(loss_c - loss_a)
print("reference pair (1 rank of 100 vs 2 ranks of 2 x 25): max |parameter difference| %.3g, test loss %.9g vs %.9g" % (spread, loss_a, loss_b))
print("2 ranks of 50 vs 1 rank of 100: max |parameter difference| %.3g (bound 10 x %.3g), test loss %.9g (bound |difference| <= 10 x %.3g)" % (diff, spread, loss_c, loss_spread))
ok = spread > 0 and diff <= 10 * spread and loss_diff <= 10 * loss_spread
if spread == 0: print("FAILED  the reference pair is bit-identical: it measures no rounding to bound by")
sys.exit(0 if ok else 1)' "$work/c/last.ckpt" "$work/a/last.ckpt" "$work/b/last.ckpt"
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
