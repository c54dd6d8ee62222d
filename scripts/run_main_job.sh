#!/usr/bin/env bash
# The main job: trains the reference model of examples/train_mnist (a
# 784-128-10 MLP, Adam lr 1e-3 x ranks, batch 64 per rank, 5 epochs) on 2
# ranks. It installs what is missing (scripts/install_deps.sh), prepares the
# MNIST data (scripts/prepare_mnist.sh), builds what is stale
# (scripts/build.sh train_mnist chorusrun) and runs train_mnist through the
# chorusrun launcher (which runs mpirun, oversubscribing when np exceeds the cores).
#   scripts/run_main_job.sh [--np N] [train_mnist options...]
#     --np N   ranks (default 2; above the core count they are oversubscribed)
#     train_mnist options, e.g. --model cnn --epochs 3 (train_mnist --help)
# The summary (accuracy, loss, samples/s) goes to build/train_mnist/summary-np<N>-<time>.json.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
die() { echo "run_main_job: error: $*" >&2; exit 1; }

np=2
train_args=()
while (($#)); do
  case "$1" in
    --np)
      (($# >= 2)) || die "--np needs a number of ranks"
      np="$2"
      shift
      ;;
    --np=*) np="${1#--np=}" ;;
    -h | --help) usage; exit 0 ;;
    *) train_args+=("$1") ;;
  esac
  shift
done
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np '$np' is invalid: expected a positive integer"

"$root/scripts/install_deps.sh"
"$root/scripts/prepare_mnist.sh" --data-dir "$root/data/mnist"
"$root/scripts/build.sh" train_mnist chorusrun
command -v mpirun >/dev/null 2>&1 || die "mpirun not found; run scripts/install_deps.sh"

# Persistent large allocations instead of fresh mappings (see docs/BENCHMARKING.md).
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
# Rank 0 is the only rank that prints, so its lines need no rank tag.
launch_args=(--np "$np" -x GLIBC_TUNABLES --no-tag-output)

# Whether ranks' stdout is a terminal says nothing about where this script's
# output goes: ask for the live line only when that is a terminal.
progress=epochs
[[ -t 1 ]] && progress=live

mkdir -p "$root/build/train_mnist"
summary="$root/build/train_mnist/summary-np$np-$(date +%Y%m%d-%H%M%S).json"
chorusrun="$root/build/launcher/chorusrun"
train_mnist="$root/build/examples/train_mnist/train_mnist"
run_args=(--data-dir "$root/data/mnist" --summary-json "$summary" --progress "$progress" "${train_args[@]}")
echo "run_main_job: $chorusrun ${launch_args[*]} -- $train_mnist ${run_args[*]}" >&2
"$chorusrun" "${launch_args[@]}" -- "$train_mnist" "${run_args[@]}"
echo "run_main_job: summary in $summary" >&2
cat "$summary"
