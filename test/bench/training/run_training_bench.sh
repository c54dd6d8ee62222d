#!/usr/bin/env bash
# Training throughput, measured in ONE run, alternating the implementations
# round by round (ceiling, Chorus, DDP, ceiling, ...), at each --np:
#   ceiling  np independent single-process LibTorch trainings side by side,
#            no communication (chorus_train_bench --mode local, np times)
#   sync     the ceiling's trainings as one job that only synchronises: no
#            gradients exchanged, one MPI_Barrier per step, so every step
#            lasts as long as the slowest rank's (chorus_train_bench --mode
#            sync): the bound of any synchronous data-parallel training here
#   mpi      data parallel written by hand without Chorus: after backward
#            the training thread allreduces one buffer of all gradients with
#            MPI_Allreduce (chorus_train_bench --mode mpi): the bound plus
#            what the exchange itself costs on this machine's Open MPI
#   chorus   chorus_train_bench --mode chorus under chorusrun -np N, as users
#            run it (DistributedOptimizer; at np=1 one rank through the runtime)
#   chorus_autotune  the same with CHORUS_AUTOTUNE=1 (only when asked for in
#            --impls; each run's CHORUS_AUTOTUNE_LOG goes to --autotune-log-dir)
#   ddp      PyTorch DistributedDataParallel, gloo backend (ddp_baseline.py,
#            Debian's python3-torch; at np=1 a one-process group)
# for the reference MLP (784-128-10) and a ~24M-parameter MLP
# (784-4096-4096-1024-10). Same BLAS (OpenBLAS), one intra-op thread per
# process, same malloc tunables, batch 64 per rank, Adam, synthetic data.
# Prints global samples/s (median and best of the rounds) and the ratios.
#   test/bench/training/run_training_bench.sh [--rounds N] [--models ref,25m] [--np 2]
#       [--impls ceiling,sync,mpi,chorus,ddp] [--steps N] [--warmup-steps N] [--json FILE]
#       [--bench PATH] [--autotune-log-dir DIR]
# Defaults: 3 rounds, both models, np=2, ceiling,sync,chorus,ddp; steps per
# model: ref 100 warm-up + 3000 timed (a ref step takes ~0.5 ms: shorter runs
# swing with every scheduler hiccup), 25m 3 + 25. --bench uses that
# chorus_train_bench (and the chorusrun of its build directory) instead of
# building build/test/bench/chorus_train_bench and build/launcher/chorusrun.
# sync, mpi and chorus get chorusrun's default process binding.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
die() { echo "run_training_bench: error: $*" >&2; exit 1; }
positive() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"; }

rounds=3
models=ref,25m
np_list=2
impls=ceiling,sync,chorus,ddp
steps=""
warmup=""
json=""
bench=""
autotune_log_dir=""
while (($#)); do
  [[ "$1" == -h || "$1" == --help ]] && { sed -n '2,32s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0; }
  (($# >= 2)) || die "$1 needs a value"
  case "$1" in
    --rounds) rounds="$2" ;;
    --models) models="$2" ;;
    --np) np_list="$2" ;;
    --impls) impls="$2" ;;
    --steps) steps="$2" ;;
    --warmup-steps) warmup="$2" ;;
    --json) json="$2" ;;
    --bench) bench="$2" ;;
    --autotune-log-dir) autotune_log_dir="$2" ;;
    *) die "unknown argument '$1' (expected --rounds, --models, --np, --impls, --steps, --warmup-steps, --json, --bench, --autotune-log-dir; see --help)" ;;
  esac
  shift 2
done
positive --rounds "$rounds"
[[ -z "$steps" ]] || positive --steps "$steps"
[[ -z "$warmup" || "$warmup" =~ ^[0-9]+$ ]] || die "--warmup-steps must be a non-negative integer, got '$warmup'"
IFS=',' read -ra nps <<<"$np_list"
((${#nps[@]})) || die "--np: expected a comma-separated list of rank counts like 1,2,4, got '$np_list'"
for n in "${nps[@]}"; do positive "--np (in '$np_list')" "$n"; done
IFS=',' read -ra impl_list <<<"$impls"
((${#impl_list[@]})) || die "--impls: expected a list of ceiling, sync, mpi, chorus, chorus_autotune, ddp, got '$impls'"
for i in "${impl_list[@]}"; do
  case "$i" in
    ceiling | sync | mpi | chorus | ddp) ;;
    chorus_autotune) [[ -n "$autotune_log_dir" ]] || autotune_log_dir=$(mktemp -d) ;;
    *) die "--impls: unknown implementation '$i' (expected ceiling, sync, mpi, chorus, chorus_autotune, ddp)" ;;
  esac
done
IFS=',' read -ra wanted <<<"$models"
for m in "${wanted[@]}"; do
  [[ "$m" == ref || "$m" == 25m ]] || die "--models: unknown model '$m' (expected ref and/or 25m)"
done
if [[ -n "$autotune_log_dir" ]]; then mkdir -p "$autotune_log_dir" || die "cannot create $autotune_log_dir"; fi

if [[ " ${impl_list[*]} " == *" ddp "* ]]; then
  "$root/scripts/install_deps.sh"
  # The DDP peer needs Debian's PyTorch (not needed by anything else).
  if ! dpkg-query -W -f='${db:Status-Status}' python3-torch 2>/dev/null | grep -qx installed; then
    echo "run_training_bench: installing python3-torch for the DDP baseline" >&2
    sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends python3-torch >&2 ||
      die "could not install python3-torch"
  fi
fi
if [[ -z "$bench" ]]; then
  "$root/scripts/build.sh" chorus_train_bench chorusrun
  bench="$root/build/test/bench/chorus_train_bench"
fi
[[ -x "$bench" ]] || die "$bench was not built (or is not executable)"
chorusrun="$(cd "$(dirname "$bench")/../.." && pwd)/launcher/chorusrun"
[[ -x "$chorusrun" ]] || die "$chorusrun was not built (build the chorusrun target beside $bench)"

if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

results=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$results" "$scratch"' EXIT

# record <model> <layers> <np> <impl> <round> <steps> <warmup>: reads the
# benchmark's last stdout line (its JSON) and appends one row to $results.
record() {
  python3 -c '
import json, sys
lines = sys.stdin.read().strip().splitlines()
if not lines:
    sys.exit("run_training_bench: error: %s at np=%s printed no result" % (sys.argv[4], sys.argv[3]))
d = json.loads(lines[-1])
print(json.dumps({"model": sys.argv[1], "layers": sys.argv[2], "np": int(sys.argv[3]), "impl": sys.argv[4],
                  "round": int(sys.argv[5]), "steps": int(sys.argv[6]), "warmup_steps": int(sys.argv[7]),
                  "parameters": d.get("parameters"), "samples_per_second": d["samples_per_second"]}))' "$@" >>"$results"
}

run_ceiling() {  # np local processes at once; their rates add up
  local np="$1"; shift
  local pids=() files=() k
  for ((k = 0; k < np; k++)); do
    files+=("$scratch/ceiling.$k")
    "$bench" --mode local "$@" >"${files[k]}" &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || die "a ceiling process failed"; done
  python3 -c '
import json, sys
d = [json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:]]
print(json.dumps({"parameters": d[0]["parameters"], "samples_per_second": sum(x["samples_per_second"] for x in d)}))' "${files[@]}"
}

run_job() {  # mode np env_assignments... -- bench args: one job through chorusrun
  local mode="$1" np="$2"; shift 2
  local env_names=() args=(-np "$np" -x GLIBC_TUNABLES -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS --no-tag-output)
  while [[ "$1" != -- ]]; do env_names+=("$1"); args+=(-x "${1%%=*}"); shift; done
  shift
  env "${env_names[@]}" "$chorusrun" "${args[@]}" "$bench" --mode "$mode" "$@" ||
    die "chorus_train_bench --mode $mode at np=$np failed"
}

run_model() {
  local name="$1" layers="$2" w="${warmup:-$3}" s="${steps:-$4}" np r impl
  local common=(--layers "$layers" --batch-size 64 --warmup-steps "$w" --steps "$s")
  for np in "${nps[@]}"; do
    for ((r = 1; r <= rounds; r++)); do
      echo "run_training_bench: $name np=$np round $r/$rounds" >&2
      for impl in "${impl_list[@]}"; do
        case "$impl" in
          ceiling) run_ceiling "$np" "${common[@]}" ;;
          sync) run_job sync "$np" -- "${common[@]}" ;;
          mpi) run_job mpi "$np" -- "${common[@]}" ;;
          chorus) run_job chorus "$np" -- "${common[@]}" ;;
          chorus_autotune)
            run_job chorus "$np" CHORUS_AUTOTUNE=1 \
              "CHORUS_AUTOTUNE_LOG=$autotune_log_dir/autotune-$name-np$np-round$r.csv" -- "${common[@]}" ;;
          ddp) /usr/bin/python3 "$here/ddp_baseline.py" --np "$np" "${common[@]}" || die "ddp_baseline at np=$np failed" ;;
        esac | record "$name" "$layers" "$np" "$impl" "$r" "$s" "$w"
      done
    done
  done
}

for m in "${wanted[@]}"; do
  case "$m" in
    ref) run_model ref 784-128-10 100 3000 ;;
    25m) run_model 25m 784-4096-4096-1024-10 3 25 ;;
  esac
done

echo "machine: $(nproc --all) cores, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)"
[[ -z "$autotune_log_dir" ]] || echo "autotune logs: $autotune_log_dir"
summary_args=("$results" --rounds "$rounds")
[[ -z "$json" ]] || summary_args+=(--json "$json")
python3 "$here/training_summary.py" "${summary_args[@]}"
