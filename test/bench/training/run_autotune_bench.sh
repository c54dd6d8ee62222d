#!/usr/bin/env bash
# Autotuning against hand-picked settings, measured in ONE run: each round
# runs chorus_train_bench under chorusrun -np 2 once per configuration (default,
# autotune, then each hand-picked one), the order rotated by one every round
# so that no configuration always runs at the same point of the machine's
# load cycle; the summary gives every round's figure, medians, bests and
# ratios to the defaults and to the best hand-picked configuration (by median).
#   test/bench/training/run_autotune_bench.sh [--rounds N] [--model 25m|ref]
#       [--steps N] [--warmup-steps N] [--np N] [--bench PATH] [--log-dir DIR]
#       [--settings 'name:VAR=V,VAR=V;name:...'] [--autotune-env 'VAR=V,...']
# --settings: the hand-picked configurations (CHORUS_* variables), default a
#   few fusion thresholds and cycle times; --autotune-env: extra variables of
#   the autotune run (e.g. CHORUS_AUTOTUNE_SAMPLES=12). The timed steps include
#   the tuning unless --warmup-steps is larger than the tuning period.
#   The autotuner's CSV of every round goes to --log-dir (default: a temporary
#   folder, printed at the end). Same BLAS, threads and malloc tunables as
#   run_training_bench.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
die() { echo "run_autotune_bench: error: $*" >&2; exit 1; }
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"; }

rounds=3
model=25m
steps=""
warmup=""
np=2
bench=""
log_dir=""
settings=""
autotune_env=""
while (($#)); do
  [[ "$1" == -h || "$1" == --help ]] && { sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0; }
  (($# >= 2)) || die "$1 needs a value"
  case "$1" in
    --rounds) rounds="$2" ;;
    --model) model="$2" ;;
    --steps) steps="$2" ;;
    --warmup-steps) warmup="$2" ;;
    --np) np="$2" ;;
    --bench) bench="$2" ;;
    --log-dir) log_dir="$2" ;;
    --settings) settings="$2" ;;
    --autotune-env) autotune_env="$2" ;;
    *) die "unknown argument '$1' (expected --rounds, --model, --steps, --warmup-steps, --np, --bench, --log-dir, --settings, --autotune-env; see --help)" ;;
  esac
  shift 2
done
positive --rounds "$rounds"
positive --np "$np"
case "$model" in
  25m) layers=784-4096-4096-1024-10; steps=${steps:-300}; warmup=${warmup:-3}
       settings=${settings:-"f4:CHORUS_FUSION_THRESHOLD=4194304;f16:CHORUS_FUSION_THRESHOLD=16777216;f128:CHORUS_FUSION_THRESHOLD=134217728;c2:CHORUS_CYCLE_TIME_MS=2;mpi:CHORUS_SHM_ALLREDUCE=off"} ;;
  ref) layers=784-128-10; steps=${steps:-20000}; warmup=${warmup:-50}
       settings=${settings:-"f1:CHORUS_FUSION_THRESHOLD=1048576;c1:CHORUS_CYCLE_TIME_MS=1;mpi:CHORUS_SHM_ALLREDUCE=off"} ;;
  *) die "--model: expected 25m or ref, got '$model'" ;;
esac
positive --steps "$steps"
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup-steps must be a non-negative integer, got '$warmup'"

# Configurations: name and comma-separated VAR=V list ("" for none).
names=(default autotune)
envs=("" "CHORUS_AUTOTUNE=1${autotune_env:+,$autotune_env}")
IFS=';' read -ra picked <<<"$settings"
for p in "${picked[@]}"; do
  [[ "$p" == *:* ]] || die "--settings: expected 'name:VAR=V,...' entries separated by ';', got '$p'"
  names+=("${p%%:*}")
  envs+=("${p#*:}")
done
for e in "${envs[@]}"; do
  IFS=',' read -ra kv <<<"$e"
  for v in "${kv[@]}"; do [[ "$v" =~ ^CHORUS_[A-Z_]+=.+$ ]] || die "expected CHORUS_NAME=VALUE, got '$v'"; done
done

if [[ -z "$bench" ]]; then
  "$root/scripts/build.sh" chorus_train_bench chorusrun
  bench="$root/build/test/bench/chorus_train_bench"
fi
[[ -x "$bench" ]] || die "$bench was not built (or is not executable)"
chorusrun="$(cd "$(dirname "$bench")/../.." && pwd)/launcher/chorusrun"
[[ -x "$chorusrun" ]] || die "$chorusrun was not built (build the chorusrun target beside $bench)"
[[ -n "$log_dir" ]] || log_dir=$(mktemp -d)
mkdir -p "$log_dir" || die "cannot create $log_dir"

if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

results=$(mktemp)
trap 'rm -f "$results"' EXIT
count=${#names[@]}
for ((r = 1; r <= rounds; r++)); do
  for ((k = 0; k < count; k++)); do
    i=$(((k + r - 1) % count))
    name=${names[i]}
    vars=()
    forward=()
    if [[ -n "${envs[i]}" ]]; then
      IFS=',' read -ra vars <<<"${envs[i]}"
      for v in "${vars[@]}"; do forward+=(-x "${v%%=*}"); done
    fi
    if [[ "$name" == autotune ]]; then
      vars+=("CHORUS_AUTOTUNE_LOG=$log_dir/autotune-$model-round$r.csv")
      forward+=(-x CHORUS_AUTOTUNE_LOG)
    fi
    echo "run_autotune_bench: round $r/$rounds: $name ${vars[*]:-}" >&2
    # As users run it: chorusrun's default binding and oversubscription.
    out=$(env "${vars[@]}" "$chorusrun" -np "$np" -x GLIBC_TUNABLES -x OMP_NUM_THREADS \
      -x OPENBLAS_NUM_THREADS "${forward[@]}" --no-tag-output "$bench" --mode chorus --layers "$layers" \
      --batch-size 64 --warmup-steps "$warmup" --steps "$steps") || die "$name (round $r) failed"
    python3 -c 'import json, sys; d = json.loads(sys.argv[3].strip().splitlines()[-1]); print(json.dumps({"name": sys.argv[1], "env": sys.argv[2], "samples_per_second": d["samples_per_second"]}))' \
      "$name" "${envs[i]}" "$out" >>"$results"
    echo "run_autotune_bench: round $r: $name: $(tail -1 "$results")" >&2
  done
done

echo "machine: $(nproc --all) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)"
echo "model $model ($layers), np=$np, $warmup warm-up + $steps timed steps per run, $rounds rounds; autotune logs: $log_dir"
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by, env = {}, {}
for r in rows:
    by.setdefault(r["name"], []).append(r["samples_per_second"])
    env[r["name"]] = r["env"]
med = {k: statistics.median(v) for k, v in by.items()}
picked = [k for k in by if k not in ("default", "autotune")]
best_picked = max(picked + ["default"], key=lambda k: med[k])
print(f"{'configuration':14s} {'median':>10s} {'best':>10s}  vs default  vs best hand-picked ({best_picked})  settings")
for k, v in by.items():
    print(f"{k:14s} {med[k]:10.1f} {max(v):10.1f}  {med[k] / med['default']:9.3f}x  {med[k] / med[best_picked]:9.3f}x"
          f"                       {env[k] or '(defaults)'}")
print("samples/s by round:")
for k, v in by.items():
    print(f"  {k:14s} " + " ".join(f"{x:8.1f}" for x in v))
PY
