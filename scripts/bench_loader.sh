#!/usr/bin/env bash
# train_mnist throughput with the PrefetchLoader against the original
# preloaded index_select, in the same session: runs alternate (preloaded,
# prefetch, preloaded, ...) so that load from other processes hits both
# alike; prints every run and the medians of samples/s and their ratio.
# Every run trains from the same seed on the same batches, so all must end
# with the same parameters: the script fails if their digests differ.
#   scripts/bench_loader.sh [--np N] [--runs R] [--epochs E] [-- extra train_mnist options]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
np=2
runs=5
epochs=5
while (($#)); do
  case "$1" in
    --np) np="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --epochs) epochs="$2"; shift ;;
    --) shift; break ;;
    *) echo "bench_loader: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
train_mnist="$root/build/examples/train_mnist/train_mnist"
[[ -x "$train_mnist" ]] || { echo "bench_loader: build train_mnist first (scripts/build.sh train_mnist)" >&2; exit 1; }
"$root/scripts/prepare_mnist.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
for ((i = 0; i < runs; ++i)); do
  for loader in preloaded prefetch; do
    json="$work/$loader.$i.json"
    mpirun -np "$np" --oversubscribe "$train_mnist" --data-dir "$root/data/mnist" --epochs "$epochs" \
      --progress epochs --loader "$loader" --summary-json "$json" "$@" >/dev/null
    echo "$loader run $i: $(field "$json" samples_per_second) samples/s, accuracy $(field "$json" final_test_accuracy)"
    field "$json" samples_per_second >>"$work/$loader.rates"
    field "$json" parameter_digests >>"$work/digests"
  done
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
median = {l: statistics.median(float(x) for x in open(f"{work}/{l}.rates")) for l in ("preloaded", "prefetch")}
print(f"median samples/s: preloaded {median['preloaded']:.0f}, prefetch {median['prefetch']:.0f}, "
      f"prefetch/preloaded {median['prefetch'] / median['preloaded']:.3f}")
PY
if [[ $(sort -u "$work/digests" | wc -l) != 1 ]]; then
  echo "bench_loader: runs ended with different parameters:" >&2
  sort "$work/digests" | uniq -c >&2
  exit 1
fi
echo "all $((2 * runs)) runs ended with bit-identical parameters"
