#!/usr/bin/env bash
# Training throughput at np=2, measured in ONE run, alternating the three
# implementations round by round (ceiling, Chorus, DDP, ceiling, ...):
#   ceiling  two independent single-process LibTorch trainings side by side,
#            no communication (chorus_train_bench --mode local, twice)
#   chorus   chorus_train_bench --mode chorus under mpirun -np 2
#            (DistributedOptimizer)
#   ddp      PyTorch DistributedDataParallel, gloo backend (ddp_baseline.py,
#            Debian's python3-torch)
# for the reference MLP (784-128-10) and a ~24M-parameter MLP
# (784-4096-4096-1024-10). Same BLAS (OpenBLAS), one intra-op thread per
# process, same malloc tunables, batch 64 per rank, Adam, synthetic data.
# Prints global samples/s (median and best of the rounds) and the ratios.
#   test/bench/training/run_training_bench.sh [--rounds N] [--models ref,25m] [--json FILE]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
die() { echo "run_training_bench: error: $*" >&2; exit 1; }

rounds=3
models=ref,25m
json=""
while (($#)); do
  case "$1" in
    --rounds) rounds="${2:-}"; shift 2 ;;
    --models) models="${2:-}"; shift 2 ;;
    --json) json="${2:-}"; shift 2 ;;
    -h | --help) sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (expected --rounds N, --models ref,25m, --json FILE)" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$rounds'"

"$root/scripts/install_deps.sh"
# The DDP peer needs Debian's PyTorch (not needed by anything else).
if ! dpkg-query -W -f='${db:Status-Status}' python3-torch 2>/dev/null | grep -qx installed; then
  echo "run_training_bench: installing python3-torch for the DDP baseline" >&2
  sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends python3-torch >&2 ||
    die "could not install python3-torch"
fi
"$root/scripts/build.sh" chorus_train_bench
bench="$root/build/test/bench/chorus_train_bench"
[[ -x "$bench" ]] || die "$bench was not built"

if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

results=$(mktemp)
trap 'rm -f "$results"' EXIT

run_model() {
  local name="$1" layers="$2" warmup="$3" steps="$4"
  local common=(--layers "$layers" --batch-size 64 --warmup-steps "$warmup" --steps "$steps")
  for ((r = 1; r <= rounds; r++)); do
    echo "run_training_bench: $name round $r/$rounds" >&2
    # Ceiling: two processes at once; their rates add up.
    local a b
    a=$(mktemp); b=$(mktemp)
    "$bench" --mode local "${common[@]}" >"$a" & local pa=$!
    "$bench" --mode local "${common[@]}" >"$b" & local pb=$!
    wait "$pa" || die "ceiling process failed"
    wait "$pb" || die "ceiling process failed"
    python3 - "$name" "$a" "$b" >>"$results" <<'PY'
import json, sys
rates = [json.load(open(f))["samples_per_second"] for f in sys.argv[2:]]
print(json.dumps({"model": sys.argv[1], "impl": "ceiling", "samples_per_second": sum(rates)}))
PY
    rm -f "$a" "$b"
    mpirun -np 2 -x GLIBC_TUNABLES -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS --bind-to none \
      "$bench" --mode chorus "${common[@]}" |
      python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(json.dumps({"model": sys.argv[1], "impl": "chorus", "samples_per_second": d["samples_per_second"]}))' "$name" >>"$results"
    /usr/bin/python3 "$here/ddp_baseline.py" --np 2 "${common[@]}" |
      python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(json.dumps({"model": sys.argv[1], "impl": "ddp", "samples_per_second": d["samples_per_second"]}))' "$name" >>"$results"
  done
}

IFS=',' read -ra wanted <<<"$models"
for m in "${wanted[@]}"; do
  case "$m" in
    ref) run_model ref 784-128-10 50 600 ;;
    25m) run_model 25m 784-4096-4096-1024-10 3 25 ;;
    *) die "--models: unknown model '$m' (expected ref and/or 25m)" ;;
  esac
done

echo "machine: $(nproc --all) cores, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)"
python3 - "$results" "$json" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = {}
for model in dict.fromkeys(r["model"] for r in rows):
    by = {}
    for r in rows:
        if r["model"] == model:
            by.setdefault(r["impl"], []).append(r["samples_per_second"])
    med = {k: statistics.median(v) for k, v in by.items()}
    best = {k: max(v) for k, v in by.items()}
    print(f"\n{model} MLP, np=2, global samples/s over {len(by['chorus'])} rounds (median / best):")
    for k in ("ceiling", "chorus", "ddp"):
        print(f"  {k:8s} {med[k]:12.1f} / {best[k]:12.1f}")
    ratios = {"chorus_vs_ceiling": med["chorus"] / med["ceiling"], "chorus_vs_ddp": med["chorus"] / med["ddp"],
              "ddp_vs_ceiling": med["ddp"] / med["ceiling"]}
    for k, v in ratios.items():
        print(f"  {k:18s} {v:.2f}x (medians)")
    out[model] = {"median": med, "best": best, "ratios": ratios, "rounds": by}
if sys.argv[2]:
    json.dump(out, open(sys.argv[2], "w"), indent=2)
PY
