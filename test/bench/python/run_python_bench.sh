#!/usr/bin/env bash
# The Python binding's benchmarks, measured in ONE run, alternating round by
# round at np=2 (issue 38):
#   python    examples/python/pytorch_synthetic_benchmark.py under chorusrun:
#             chorus.torch's DistributedOptimizer
#   sync      the same script with --sync-bound: no gradient exchange, every
#             rank meets at one hvd.barrier() per step (the bound of any
#             synchronous data parallelism of this Python loop)
#   ddp       torch.nn.parallel.DistributedDataParallel, gloo
#             (test/bench/training/ddp_baseline.py)
#   cpp       the C++ front end: chorus_train_bench --mode chorus under chorusrun
# all four with the same MLP (ref 784-128-10, 25m 784-4096-4096-1024-10),
# Adam 1e-3, batch 64 per rank, 8 synthetic batches per rank, one thread per
# rank and the same malloc tunables; and the latency of one 4 KiB allreduce,
# submit to wait, from Python (allreduce_latency.py: synchronize(allreduce_async_)
# as "python", allreduce_ as "python_blocking") and from the C++ API
# (chorus_bench's latency figure), each round MPI_Barrier then one op (mpi4py's
# in Python, as chorus_bench's in C++), the slowest rank's time, median over
# the rounds.
# Prints one JSON line per measurement, then the medians and the per-round
# ratios python/sync, python/ddp, python/cpp and latency python/cpp (both calls).
#   test/bench/python/run_python_bench.sh [--rounds 3] [--models ref,25m] [--build-dir build]
#       [--json FILE] [--rows FILE] [--quick]
# --rows FILE: also keep the raw rows (one JSON line per measurement); the rows
# files of several runs, given together to python_bench_summary.py, summarise as
# one measurement (each file's rounds numbered after the previous file's).
# --quick: a few steps and 50 latency rounds (a smoke run; figures meaningless).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
die() { echo "run_python_bench: error: $*" >&2; exit 1; }

rounds=3 models=ref,25m build_dir=$root/build json="" rows="" quick=0
while (($#)); do
  case "$1" in
    -h | --help) sed -n '2,26s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    --quick) quick=1; shift; continue ;;
  esac
  (($# >= 2)) || die "$1 needs a value"
  case "$1" in
    --rounds) rounds="$2" ;;
    --models) models="$2" ;;
    --build-dir) build_dir="$2" ;;
    --json) json="$2" ;;
    --rows) rows="$2" ;;
    *) die "unknown argument '$1' (expected --rounds, --models, --build-dir, --json, --rows, --quick; see --help)" ;;
  esac
  shift 2
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$rounds'"
IFS=',' read -ra wanted <<<"$models"
for m in "${wanted[@]}"; do
  [[ "$m" == ref || "$m" == 25m ]] || die "--models: unknown model '$m' (expected ref and/or 25m)"
done
[[ -d "$build_dir" ]] || die "--build-dir: '$build_dir' is not a directory"
# Absolute: the C++ latency runs from a scratch folder.
build_dir=$(cd "$build_dir" && pwd)
python=/usr/bin/python3
chorusrun=$build_dir/launcher/chorusrun
train_bench=$build_dir/test/bench/chorus_train_bench
chorus_bench=$build_dir/test/bench/chorus_bench
for f in "$chorusrun" "$train_bench" "$chorus_bench"; do
  [[ -x "$f" ]] || die "$f is not built (scripts/build.sh chorusrun chorus_train_bench chorus_bench chorus_python)"
done
[[ -d $build_dir/python/chorus ]] || die "$build_dir/python has no chorus package (scripts/build.sh chorus_python)"
"$python" -c 'import mpi4py' 2>/dev/null ||
  die "$python cannot import mpi4py, which aligns the latency rounds (scripts/install_deps.sh installs python3-mpi4py)"

if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$build_dir/python PYTHONDONTWRITEBYTECODE=1
np=2
job=("$chorusrun" -np $np -x GLIBC_TUNABLES -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x PYTHONPATH --no-tag-output)
synthetic=$root/examples/python/pytorch_synthetic_benchmark.py
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# record KIND MODEL ROUND: the JSON piped in (a file, or a command's last
# line that is a JSON object) as one row.
record() {
  "$python" -c '
import json, sys
text = sys.stdin.read()
try:
    d = json.loads(text)  # a JSON file (chorus_bench --json)
except ValueError:
    lines = [l for l in text.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit("run_python_bench: error: %s (%s) printed no result" % (sys.argv[1], sys.argv[2]))
    d = json.loads(lines[-1])
row = {"impl": sys.argv[1], "model": sys.argv[2], "round": int(sys.argv[3]), "np": int(sys.argv[4])}
if "samples_per_second" in d:
    row.update(samples_per_second=d["samples_per_second"], parameters=d.get("parameters"))
    if "cpu_ms_per_step" in d:
        row["cpu_ms_per_step"] = d["cpu_ms_per_step"]
elif "latency" in d:
    row.update(median_seconds=d["latency"]["chorus"]["median_s"], min_seconds=d["latency"]["chorus"]["min_s"])
else:
    row.update(median_seconds=d["median_seconds"], min_seconds=d["min_seconds"])
    if "barrier" in d:
        row["barrier"] = d["barrier"]
print(json.dumps(row))
sys.stdout.flush()' "$@" $np | tee -a "$results"
}

scratch=$(mktemp -d)
trap 'rm -rf "$results" "$scratch"' EXIT
lat_repeats=1000
((quick)) && lat_repeats=50
for ((r = 1; r <= rounds; r++)); do
  echo "run_python_bench: round $r/$rounds" >&2
  for m in "${wanted[@]}"; do
    case "$m" in
      ref) layers=784-128-10 warmup=100 iters=30 per_iter=100 ;;
      25m) layers=784-4096-4096-1024-10 warmup=3 iters=5 per_iter=5 ;;
    esac
    ((quick)) && { warmup=1 iters=2 per_iter=2; }
    steps=$((iters * per_iter))
    py_args=(--model "$m" --batch-size 64 --num-warmup-batches "$warmup" --num-iters "$iters"
             --num-batches-per-iter "$per_iter" --json)
    "${job[@]}" "$python" "$synthetic" "${py_args[@]}" | record python "$m" "$r" ||
      die "pytorch_synthetic_benchmark.py ($m) failed"
    "${job[@]}" "$python" "$synthetic" "${py_args[@]}" --sync-bound | record sync "$m" "$r" ||
      die "pytorch_synthetic_benchmark.py --sync-bound ($m) failed"
    "$python" "$root/test/bench/training/ddp_baseline.py" --np $np --layers "$layers" --batch-size 64 \
      --warmup-steps "$warmup" --steps "$steps" | record ddp "$m" "$r" || die "ddp_baseline.py ($m) failed"
    "${job[@]}" "$train_bench" --mode chorus --layers "$layers" --batch-size 64 --warmup-steps "$warmup" \
      --steps "$steps" | record cpp "$m" "$r" || die "chorus_train_bench ($m) failed"
  done
  "${job[@]}" "$python" "$here/allreduce_latency.py" --bytes 4096 --repeats $lat_repeats --warmup 100 |
    record python latency4k "$r" || die "allreduce_latency.py failed"
  "${job[@]}" "$python" "$here/allreduce_latency.py" --bytes 4096 --repeats $lat_repeats --warmup 100 \
    --call blocking | record python_blocking latency4k "$r" || die "allreduce_latency.py --call blocking failed"
  # chorus_bench initialises MPI itself, so Chorus leaves Open MPI's
  # progress engine as it is; the Python program's chorus.torch.init() sets
  # it to yield when idle (ops/mpi/mpi_context.cc), which on this kind of VM
  # adds ~5 us to a 4 KiB allreduce, raw MPI's and Chorus's alike. Both
  # sides run with the setting that init() gives (or the caller's own).
  (cd "$scratch" && OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1} "${job[@]}" \
    -x OMPI_MCA_mpi_yield_when_idle "$chorus_bench" --sizes 4KiB --repeats 1 --warmup 0 \
    --latency-repeats $lat_repeats --idle-seconds 0 --json "$scratch/chorus_bench.json" >/dev/null) ||
    die "chorus_bench failed"
  record cpp latency4k "$r" <"$scratch/chorus_bench.json"
done
echo "machine: $(nproc --all) cores, $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u +%FT%TZ)"
[[ -z "$rows" ]] || cp "$results" "$rows"
"$python" "$here/python_bench_summary.py" "$results" ${json:+--json "$json"}
