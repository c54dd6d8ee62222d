#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md and its plots (docs/benchmarks/*.png) from ONE
# run of every benchmark, each beside its peers:
#   (a) allreduce busbw, 4 KiB to 256 MiB, np=2 and np=4: chorus_bench with
#       CHORUS_SHM_ALLREDUCE=on, then =off (each alternating with raw
#       MPI_Allreduce, memcpy ceiling included), then gloo
#       (test/bench/gloo_allreduce_bench.py);
#   (b) the 200 x 4 KiB step (the same runs); (b2) at np=4 the same runs
#       sweep the sizes on a process set (the first half of the ranks) too;
#   (c) training throughput, reference and 25M MLPs at np=1,2,4: ceiling,
#       Chorus, PyTorch DDP (test/bench/training/run_training_bench.sh);
#   (d) the 25M MLP with defaults vs CHORUS_AUTOTUNE=1 at np=2, when this
#       build has autotuning (otherwise the section says it is not available);
#   (e) point-to-point: chorus_bench --mode p2p at np=2, send/recv ping-pong
#       against MPI_Send/Recv and MPI_Isend/Irecv, 256 B to 4 MiB;
#   (f) the pipeline bubble of GPipe and 1F1B at S=2 and S=4 (oversubscribed
#       beyond the cores), M = 1, 2, 4, 8, against (S-1)/(M+S-1)
#       (test/bench/pipeline/run_pipeline_bench.sh);
#   (g) the heartbeat's cost while all is well: idle CPU and 4 KiB latency with it
#       off, at 30 s and at 3 s (scripts/bench_heartbeat.sh).
#   (h) elastic recovery: chorusrun --elastic running train_mnist --elastic on
#       3 network-namespace hosts, one killed mid-epoch and listed again
#       (test/launcher/elastic_netns_test.sh, needs root): start-up, commit
#       interval, failure -> named, failure -> training again, regrow.
#   (i) pipeline memory: each stage's peak bytes of tensors under GPipe and
#       1F1B at S=2 and S=4, M = 8 and 16
#       (test/bench/pipeline/run_pipeline_memory_bench.sh).
#   (j) the Python binding at np=2: examples/python/pytorch_synthetic_benchmark.py
#       against its own --sync-bound, PyTorch DDP and the C++ front end
#       (reference and 25M MLPs), and the 4 KiB allreduce latency from Python
#       against the C++ API (test/bench/python/run_python_bench.sh).
# Installs what is missing (gnuplot-nox, python3-torch), builds what is stale,
# writes every measurement to a fresh build/bench/report-<date>/ and then the
# report (test/bench/report/generate_report.py).
#   scripts/bench_report.sh [--quick] [--docs-dir DIR] [--results-dir DIR] [--build-dir DIR]
#   scripts/bench_report.sh --from RESULTS_DIR [--docs-dir DIR]   (report only, no measuring)
#   scripts/bench_report.sh --only elastic|pipeline-memory|python [--results-dir DIR] [--docs-dir DIR] [--build-dir DIR]
# --only SECTION: measure only that section (elastic: (h), pipeline-memory: (i), python: (j)) in its own run and
# replace just that section of DIR/BENCHMARKS.md (default docs/), leaving the
# rest of the page as it was; the section says it comes from its own run.
# --quick: 3 sizes, 3 rounds, 1 training round of a few steps (a smoke run of
# a few minutes); its report goes to the results dir unless --docs-dir is given.
# --build-dir: use (and build) that CMake tree instead of build/.
# The full run took 38 min on a shared 2-core machine at load average 5-11
# (allreduce 5, training 19, autotune 14); run it on a quiet machine.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
invocation="scripts/bench_report.sh${*:+ $*}"
die() { echo "bench_report: error: $*" >&2; exit 1; }
log() { echo "bench_report: $*" >&2; }

quick=0 docs_dir="" results_dir="" build_dir="" from="" only=""
while (($#)); do
  case "$1" in
    --quick) quick=1; shift; continue ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
  esac
  case "$1" in
    --docs-dir | --results-dir | --build-dir | --from | --only) ;;
    *) die "unknown argument '$1' (expected --quick, --docs-dir DIR, --results-dir DIR, --build-dir DIR, --from DIR, --only SECTION)" ;;
  esac
  [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a $([[ $1 == --only ]] && echo "section name (elastic, pipeline-memory or python)" || echo directory) (see --help)"
  case "$1" in
    --docs-dir) docs_dir="$2" ;;
    --results-dir) results_dir="$2" ;;
    --build-dir) build_dir="$2" ;;
    --from) from="$2" ;;
    --only) only="$2" ;;
  esac
  shift 2
done
generator="$root/test/bench/report/generate_report.py"
case "$only" in
  "" | elastic | pipeline-memory | python) ;;
  *) die "--only: unknown section '$only' (expected elastic, pipeline-memory or python)" ;;
esac
[[ -z "$only" || -z "$from" ]] || die "--only and --from cannot be combined"
[[ -z "$only" ]] || ((!quick)) || die "--only $only has no --quick mode (its scenario is fixed)"

install_missing() {  # Debian packages only this script needs
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  local as_root=(); [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { "${as_root[@]}" apt-get update >&2 &&
      DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2; } ||
    die "could not install ${missing[*]}"
}

"$root/scripts/install_deps.sh"
[[ -n "$only" ]] || install_missing gnuplot-nox python3-torch  # plots; gloo and DDP

if [[ -n "$from" ]]; then
  [[ -d "$from" ]] || die "--from: '$from' is not a directory (expected a results dir of an earlier run)"
  from=$(cd "$from" && pwd)
  python3 "$generator" "$from" --docs-dir "${docs_dir:-$root/docs}" --results-label "${from//"$root/"/}"
  exit
fi

# --- build ---------------------------------------------------------------
targets=(chorus_bench chorus_train_bench chorus_pipeline_bench chorus_pipeline_memory_bench chorusrun train_mnist
         launcher_test_program chorus_python)
case "$only" in
  elastic) targets=(chorusrun train_mnist launcher_test_program chorus_bench) ;;
  pipeline-memory) targets=(chorus_pipeline_memory_bench chorus_bench) ;;
  python) targets=(chorus_bench chorus_train_bench chorusrun chorus_python) ;;
esac
if [[ -z "$build_dir" ]]; then
  "$root/scripts/build.sh" "${targets[@]}"
  build_dir="$root/build"
else
  build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)
  [[ -f "$build_dir/build.ninja" ]] ||
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2 || die "configuring $build_dir failed"
  cmake --build "$build_dir" -j "${CHORUS_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}" >&2 ||
    die "building ${targets[*]} in $build_dir failed"
fi
chorus_bench="$build_dir/test/bench/chorus_bench"
train_bench="$build_dir/test/bench/chorus_train_bench"
pipeline_bench="$build_dir/test/bench/chorus_pipeline_bench"
memory_bench="$build_dir/test/bench/chorus_pipeline_memory_bench"
chorusrun="$build_dir/launcher/chorusrun"
train_mnist="$build_dir/examples/train_mnist/train_mnist"
launcher_program="$build_dir/test/launcher/launcher_test_program"
case "$only" in
  "") needed=("$chorusrun" "$train_mnist" "$launcher_program" "$chorus_bench" "$train_bench" "$pipeline_bench"
              "$memory_bench") ;;
  elastic) needed=("$chorusrun" "$train_mnist" "$launcher_program" "$chorus_bench") ;;
  pipeline-memory) needed=("$memory_bench" "$chorus_bench") ;;
  python) needed=("$chorusrun" "$chorus_bench" "$train_bench") ;;
esac
for b in "${needed[@]}"; do [[ -x "$b" ]] || die "$b was not built"; done

# --- the run's folder and description ---------------------------------------
stamp=$(date +%Y%m%d-%H%M%S)
results_dir="${results_dir:-$root/build/bench/report-$stamp}"
[[ ! -e "$results_dir" ]] || die "$results_dir already exists; every report run starts in a fresh folder"
mkdir -p "$results_dir"
results_dir=$(cd "$results_dir" && pwd)
if ((quick)); then docs_dir="${docs_dir:-$results_dir}"; else docs_dir="${docs_dir:-$root/docs}"; fi
[[ -z "$only" || -f "$docs_dir/BENCHMARKS.md" ]] ||
  die "--only replaces one section of $docs_dir/BENCHMARKS.md, which does not exist (run the full report first)"
log "measurements go to $results_dir, the report to $docs_dir"

if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
tunables=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
export GLIBC_TUNABLES=$tunables
cores=$(nproc)
started_epoch=$(date +%s)
dirty=""; [[ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]] || dirty=" (with uncommitted changes)"

write_run_json() {  # [finished]: run.json, rewritten at the end with the finish time
  python3 - "$results_dir/run.json" "$invocation" "$quick" "$started_epoch" "${1:-}" \
    "$(hostname)" "$cores" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
    "$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 ))" "$(uname -sr)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty" "$tunables" \
    "$(mpirun --version 2>/dev/null | head -n 1)" \
    "$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown)" "$only" \
    "${memcpy_64mib_Bps:-}" <<'PY'
import datetime, json, sys
(path, command, quick, started, finished, host, nproc, cpu, mem, kernel, load, commit, tunables, mpi,
 torch, only, memcpy) = sys.argv[1:]
iso = lambda t: datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
run = {"command": command, "mode": "quick" if quick == "1" else "full", "started": iso(started),
       "machine": {"host": host, "nproc": int(nproc), "cpu_model": cpu or "unknown", "memory_bytes": int(mem),
                   "kernel": kernel, "load_average": load},
       "git_commit": commit, "glibc_tunables": tunables, "mpi_library": mpi or "unknown", "torch_version": torch}
if memcpy:
    run["machine"]["memcpy_64mib_Bps"] = float(memcpy)  # one rank alone, at the start of this run
if only:
    run["sections"] = only.split(",")  # a run of --only: these sections, nothing else
if finished:
    run.update(finished=iso(finished), wall_seconds=int(finished) - int(started))
json.dump(run, open(path, "w"), indent=2)
PY
}
write_run_json

# The machine's memory bandwidth, for the page's machine line: one memcpy of
# 64 MiB by one rank alone (chorus_bench's memcpy ceiling at np=1), median of
# 10 after warm-up. Every figure is still a ratio against a peer measured in
# the same run; this says what kind of machine the ratios come from. A run
# of --only measures it too (about a second): its section gets its own
# machine line.
measure_memcpy() {
  local json="$results_dir/memcpy-64mib.json"
  env "GLIBC_TUNABLES=$tunables" mpirun -np 1 -x GLIBC_TUNABLES "$chorus_bench" --sizes 64MiB --repeats 10 \
    --latency-repeats 10 --idle-seconds 0 --json "$json" >"$results_dir/memcpy-64mib.log" 2>&1 ||
    die "measuring memcpy of 64 MiB failed; see $results_dir/memcpy-64mib.log"
  memcpy_64mib_Bps=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["allreduce"][0]["memcpy_Bps"])' "$json")
  log "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $cores cores;" \
    "memcpy of 64 MiB $(python3 -c 'import sys; print(f"{float(sys.argv[1]) / 1e9:.2f}")' "$memcpy_64mib_Bps") GB/s"
  write_run_json
}
measure_memcpy

# One word of a command as a shell would need it (quoted only when it must be).
shell_word() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then printf '%s' "$1"; else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}

# piece <kind> <np> <config> <result file> <timeout s> -- command...: runs one
# measurement (output to <result file>.log), then appends its line to
# pieces.jsonl with the exact command (paths relative to the repository root).
piece() {
  local kind="$1" np="$2" config="$3" file="$4" limit="$5"
  shift 6
  local shown="" arg load start end rc=0
  for arg in "$@"; do shown+="${shown:+ }$(shell_word "$arg")"; done
  shown=${shown//"$root/"/}
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s.%N)
  log "[$kind np=$np $config] $shown"
  (cd "$root" && timeout --kill-after=30 "$limit" "$@") > >(tee "$results_dir/$file.log") 2>&1 || rc=$?
  end=$(date +%s.%N)
  ((rc == 0)) || die "$kind (np=$np $config) failed with status $rc$( ((rc == 124)) && echo ": over its ${limit} s limit"); see $results_dir/$file.log"
  [[ -s "$results_dir/$file" ]] || die "$kind (np=$np $config) wrote no $results_dir/$file"
  python3 -c 'import json, sys; k, n, c, f, cmd, d, l, t0, t1 = sys.argv[1:]; print(json.dumps({"kind": k, "np": int(n) if n != "-" else None, "config": c if c != "-" else None, "file": f, "command": cmd, "started": d, "load_average": l, "seconds": round(float(t1) - float(t0), 1)}))' \
    "$kind" "$np" "$config" "$file" "$shown" "$(date -u -d "@$start" '+%Y-%m-%d %H:%M:%S UTC')" "$load" \
    "$start" "$end" >>"$results_dir/pieces.jsonl"
}

# --- (h) elastic recovery ------------------------------------------------------
# The elastic netns scenario's own timings (it checks the recovery too: a
# failed check fails this step). Root only: it makes network namespaces.
elastic_recovery() {
  [[ -f "$root/data/mnist/train-images-idx3-ubyte" ]] || "$root/scripts/prepare_mnist.sh" >&2 ||
    die "preparing data/mnist for the elastic scenario failed"
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null 2>&1; then
    python3 -c 'import json, sys; print(json.dumps({"kind": "elastic_recovery", "available": False, "command": sys.argv[1], "reason": sys.argv[2]}))' \
      "test/launcher/elastic_netns_test.sh" \
      "the elastic scenario makes network-namespace hosts, which needs root and iproute2; this run had $( [[ $(id -u) -eq 0 ]] && echo "no ip command" || echo "no root")." \
      >>"$results_dir/pieces.jsonl"
    log "elastic recovery not measured (needs root and ip): section (h) says so"
    return
  fi
  piece elastic_recovery 3 - elastic_recovery.json 600 -- "$root/test/launcher/elastic_netns_test.sh" \
    "$chorusrun" "$train_mnist" "$launcher_program" "$root/data/mnist" "$results_dir/elastic_recovery.txt" \
    "$results_dir/elastic_recovery.json"
}

# --- (i) pipeline memory ------------------------------------------------------
# Bytes, not time: its figures do not depend on the machine's load.
pipeline_memory() {
  piece pipeline_memory - - pipeline_memory.json 600 -- "$root/test/bench/pipeline/run_pipeline_memory_bench.sh" \
    --stages 2,4 --micro-batches 8,16 --bench "$memory_bench" --json "$results_dir/pipeline_memory.json"
}

# --- (j) the Python binding ----------------------------------------------------
python_binding() {
  piece python 2 - python.json 1800 -- "$root/test/bench/python/run_python_bench.sh" "${python_opts[@]}" \
    --build-dir "$build_dir" --json "$results_dir/python.json"
}
python_opts=(--rounds 3)
((quick)) && python_opts=(--rounds 1 --quick)

if [[ -n "$only" ]]; then
  case "$only" in
    elastic) elastic_recovery; section="(h)" ;;
    pipeline-memory) pipeline_memory; section="(i)" ;;
    python) python_binding; section="(j)" ;;
  esac
  write_run_json "$(date +%s)"
  python3 "$generator" "$results_dir" --docs-dir "$docs_dir" --only "$only"
  log "done in $(( $(date +%s) - started_epoch )) s: section $section of $docs_dir/BENCHMARKS.md"
  exit
fi

if ((quick)); then
  sizes=4KiB,64KiB,1MiB
  bench_opts=(--repeats 3 --warmup 1 --latency-repeats 50 --idle-seconds 0.2)
  p2p_opts=(--p2p-sizes 4KiB,4MiB --repeats 3 --warmup 1)
  gloo_opts=(--repeats 3 --warmup 1)
  training_opts=(--rounds 1 --steps 4 --warmup-steps 1)
  autotune_opts=(--rounds 1 --steps 20 --warmup-steps 1)
  pipeline_opts=(--steps 3)
  heartbeat_opts=(--rounds 1 --idle-seconds 2)
else
  sizes=4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB
  bench_opts=(--repeats 20 --warmup 3 --latency-repeats 1000 --idle-seconds 2)
  p2p_opts=(--p2p-sizes 256B,4KiB,64KiB,1MiB,4MiB --repeats 20 --warmup 3)
  gloo_opts=(--repeats 20 --warmup 3)
  training_opts=(--rounds 3)
  # With its defaults (a few warm-up steps, 20 samples of 4 steps, one
  # change-over step each) the autotuner's search ends within ~110 steps:
  # the warm-up covers it, the timed steps run on the setting it chose (the
  # report says so only conditionally: the log shows where it froze).
  autotune_opts=(--rounds 3 --steps 40 --warmup-steps 150)
  pipeline_opts=(--steps 10)
  heartbeat_opts=(--rounds 6 --idle-seconds 10)
fi

# --- (a), (b): allreduce ------------------------------------------------------
for np in 2 4; do
  mpi_args=(-np "$np" -x GLIBC_TUNABLES -x CHORUS_SHM_ALLREDUCE)
  ((np <= cores)) || mpi_args+=(--oversubscribe --mca mpi_yield_when_idle 1)
  for config in shm mpi; do
    shm_mode=on; [[ "$config" == mpi ]] && shm_mode=off
    file="chorus_bench-np$np-$config.json"
    # At np=4 the same run also sweeps the sizes on a process set of ranks
    # 0,1 beside the world's (section (b2)).
    set_opts=(); ((np == 4)) && set_opts=(--process-set half)
    piece chorus_bench "$np" "$config" "$file" 1200 -- env "GLIBC_TUNABLES=$tunables" "CHORUS_SHM_ALLREDUCE=$shm_mode" \
      mpirun "${mpi_args[@]}" "$chorus_bench" --sizes "$sizes" "${bench_opts[@]}" "${set_opts[@]}" --json "$results_dir/$file"
  done
  file="gloo-np$np.json"
  piece gloo "$np" - "$file" 1200 -- env "GLIBC_TUNABLES=$tunables" /usr/bin/python3 \
    "$root/test/bench/gloo_allreduce_bench.py" --np "$np" --sizes "$sizes" "${gloo_opts[@]}" --json "$results_dir/$file"
done

# --- (e) point-to-point (before training, while the machine is as quiet as for (a)) ---
piece chorus_bench_p2p 2 - chorus_bench_p2p-np2.json 600 -- env "GLIBC_TUNABLES=$tunables" \
  mpirun -np 2 -x GLIBC_TUNABLES "$chorus_bench" --mode p2p "${p2p_opts[@]}" --json "$results_dir/chorus_bench_p2p-np2.json"

# --- (c) training ---------------------------------------------------------------
piece training - - training.json 3600 -- "$root/test/bench/training/run_training_bench.sh" --np 1,2,4 \
  --models ref,25m "${training_opts[@]}" --bench "$train_bench" --json "$results_dir/training.json"

# --- (d) autotuning, when this build has it ---------------------------------------
if grep -qF CHORUS_AUTOTUNE "$train_bench"; then
  logs="$results_dir/autotune-logs"
  piece autotune 2 - autotune.json 3600 -- "$root/test/bench/training/run_training_bench.sh" --np 2 --models 25m \
    --impls chorus,chorus_autotune "${autotune_opts[@]}" --bench "$train_bench" --autotune-log-dir "$logs" \
    --json "$results_dir/autotune.json"
  # Name the CSV logs the autotuned runs wrote (none is reported as such).
  python3 -c 'import json, os, sys; d, logs = sys.argv[1:]; lines = open(os.path.join(d, "pieces.jsonl")).read().splitlines(); p = json.loads(lines[-1]); p["available"] = True; p["logs"] = sorted(os.path.join("autotune-logs", f) for f in os.listdir(logs) if f.endswith(".csv")) if os.path.isdir(logs) else []; lines[-1] = json.dumps(p); open(os.path.join(d, "pieces.jsonl"), "w").write("\n".join(lines) + "\n")' \
    "$results_dir" "$logs"
else
  python3 -c 'import json, sys; print(json.dumps({"kind": "autotune", "available": False, "command": sys.argv[1], "reason": sys.argv[2]}))' \
    "grep -F CHORUS_AUTOTUNE ${train_bench//"$root/"/}" \
    "this build of chorus_train_bench does not know CHORUS_AUTOTUNE (the string is not in the binary), so autotuning has not landed in this source tree and the 25M MLP was not run with it. Rerun scripts/bench_report.sh once it has." \
    >>"$results_dir/pieces.jsonl"
  log "autotuning not in this build: section (d) says so"
fi

# --- (f) pipeline bubble ---------------------------------------------------------
piece pipeline - - pipeline.json 1200 -- "$root/test/bench/pipeline/run_pipeline_bench.sh" --stages 2,4 \
  --micro-batches 1,2,4,8 "${pipeline_opts[@]}" --bench "$pipeline_bench" --json "$results_dir/pipeline.json"

# --- (g) heartbeat ----------------------------------------------------------------
piece heartbeat 2 - heartbeat.json 1800 -- "$root/scripts/bench_heartbeat.sh" --np 2 "${heartbeat_opts[@]}" \
  --build-dir "$build_dir" --json "$results_dir/heartbeat.json"
pipeline_memory
python_binding
# --- (h) elastic recovery (last: it kills processes and makes namespaces) ---
elastic_recovery

write_run_json "$(date +%s)"
python3 "$generator" "$results_dir" --docs-dir "$docs_dir" --results-label "${results_dir//"$root/"/}"
log "done in $(( $(date +%s) - started_epoch )) s: $docs_dir/BENCHMARKS.md"
