#!/usr/bin/env bash
# The GPU checks of the NCCL/CUDA half, in one run of under 5 minutes on one
# GPU (an H200 through the device tool). Build the bundle first, here:
#   test/gpu/make_device_bundle.sh          # builds and packs .devbundle/
# then on the GPU machine (device tool: carry .devbundle):
#   test/gpu/run_device_checks.sh [--bundle DIR] [--out DIR]
# Steps (each PASS, FAIL or NOT RUN with the reason; a GoogleTest skip on a
# machine with a GPU is a FAIL, since every check here needs the GPU):
#   1. the bundle's programs find every library (CUDA's from this machine)
#   2. the bundled mpirun runs a CPU test at np=2 (mpi_backend_test)
#   3. the device-operations contract on the real GPU (device_contract_test),
#      CudaDevice's own cases and the public CUDA helpers (cuda_device_test,
#      cuda_api_test without its one case for machines without a GPU)
#   4. every collective through NCCL at np=1 (nccl_backend_test), abort()
#      and the timeout (nccl_abort_test), and the runtime over NCCL through
#      the public API (nccl_runtime_test, without its one case for ranks
#      without a GPU)
#   5. every collective through the host-staged path at np=2 on the one GPU
#      (staged_backend_test; NCCL refuses two ranks on one GPU), and the
#      runtime over it through the public API (staged_runtime_test)
#   5b. the hierarchical allreduce of GPU memory at np=4 on pretend hosts
#      (nccl_hierarchical_test: 2 x 2 with staged levels, 4 x 1 with NCCL
#      over each one-rank host; its NCCL-within-hosts case needs a GPU per
#      rank and is left out here)
#   6. fusion pack/unpack bandwidth against cudaMemcpy device-to-device
#      (chorus_gpu_pack_bench; goal >= 0.8x)
#   7. a 64 MiB allreduce through Chorus against a bare ncclAllReduce
#      (chorus_gpu_allreduce_bench; goal >= 0.95x)
#   8. train_mnist_cuda at np=1 and np=2: test accuracy >= 0.92 after 5 epochs
# On a machine without a GPU (a dry run) steps 1-2 run and the rest say NOT
# RUN. The summary goes to OUT/device_checks.txt and every program's output
# to OUT/device_checks.log (OUT: --out, else $OUT, else build/device_checks).
# Exit status: 0 when no step failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundle="$root/.devbundle"
out_dir="${OUT:-$root/build/device_checks}"
while (($#)); do
  case "$1" in
    --bundle) bundle=${2:?--bundle needs a folder}; shift ;;
    --out) out_dir=${2:?--out needs a folder}; shift ;;
    -h | --help) sed -n '2,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run_device_checks: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -d "$bundle/bin" ]] || { echo "run_device_checks: no bundle at $bundle: run test/gpu/make_device_bundle.sh first" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
mkdir -p "$out_dir"
summary="$out_dir/device_checks.txt"
log="$out_dir/device_checks.log"
: >"$summary"
: >"$log"
failed=0
report() {  # report STEP STATUS DETAIL
  printf '%-28s %-8s %s\n' "$1" "$2" "$3" | tee -a "$summary"
  [[ "$2" == FAIL ]] && failed=1
  return 0
}

# CUDA's libraries come from this machine: its toolkit, and the NVIDIA wheels
# of its Python (NCCL, cuDNN, cuBLAS), wherever they are.
library_path="$bundle/lib"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "$dir" ]] && library_path+=":$dir"
done
if command -v python3 >/dev/null; then
  while read -r dir; do
    [[ -d "$dir" ]] && library_path+=":$dir"
  done < <(python3 -c 'import glob, nvidia; [print(d) for p in nvidia.__path__ for d in sorted(glob.glob(p + "/*/lib"))]' 2>/dev/null)
fi
export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$bundle/usr" PATH="$bundle/usr/bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mca_base_component_show_load_errors=0
# One host: shared memory and loopback only.
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
bin="$bundle/bin"
mpirun=("$bundle/usr/bin/mpirun" --oversubscribe --bind-to none)

gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >>"$log" 2>&1; then
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
fi
{ echo "== machine"; date -u; uname -m; echo "GPUs: $gpus"; } >>"$log"
no_gpu="no GPU on this machine (nvidia-smi: $gpus)"

# run STEP TIMEOUT COMMAND...: the command's output to the log and to
# $step_output; its status in $step_status.
run() {
  local step=$1 limit=$2
  shift 2
  echo "== $step: $*" >>"$log"
  step_output=$(timeout --kill-after=10 "$limit" "$@" 2>&1)
  step_status=$?
  printf '%s\n' "$step_output" >>"$log"
  ((step_status == 124 || step_status == 137)) && step_output+=$'\n'"(timed out after ${limit}s)"
}
# A GoogleTest program: PASS when it exits 0, every process ran at least one
# test and none skipped one (gtest_verdict.sh).
source "$root/test/gpu/gtest_verdict.sh"
gtest_step() {
  local step=$1 limit=$2
  shift 2
  run "$step" "$limit" "$@"
  local verdict
  verdict=$(gtest_verdict "$step_status" "$step_output")
  report "$step" "${verdict%% *}" "${verdict#* }"
}

# 1. Libraries.
missing=$(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" ldd "$bin"/* "$bundle"/usr/bin/* 2>/dev/null | grep 'not found' | sort -u | tr -s ' \t\n' ' ')
if [[ -z "$missing" ]]; then
  report libraries PASS "every program of the bundle finds its libraries"
elif ((gpus == 0)) && ! grep -qv -E 'lib(cuda|cudart|nccl|cudnn|cublas)' <<<"$(tr ' ' '\n' <<<"$missing" | grep '\.so')"; then
  report libraries PASS "all but CUDA's, which a GPU machine provides: $missing"
else
  report libraries FAIL "missing: $missing"
fi

# 2. The bundled mpirun, two ranks.
gtest_step "mpirun np=2 (CPU)" 120 "${mpirun[@]}" -np 2 "$bin/mpi_backend_test" --gtest_brief=1 --gtest_color=no

if ((gpus == 0)); then
  for step in "device contract" "CUDA device" "CUDA API" "NCCL collectives np=1" "NCCL abort np=1" "NCCL runtime np=1" \
              "staged collectives np=2" "staged runtime np=2" "hierarchical np=4" "pack bandwidth" \
              "64 MiB allreduce" "train_mnist_cuda np=1" "train_mnist_cuda np=2"; do
    report "$step" "NOT RUN" "$no_gpu"
  done
  echo "run_device_checks: summary in $summary"
  exit "$failed"
fi

# 3-5. Correctness on the GPU.
gtest_step "device contract" 120 "$bin/device_contract_test" --gtest_brief=1 --gtest_color=no
gtest_step "CUDA device" 60 "$bin/cuda_device_test" --gtest_brief=1 --gtest_color=no
gtest_step "CUDA API" 60 "$bin/cuda_api_test" --gtest_brief=1 --gtest_color=no --gtest_filter=-*WithoutAGpu*
gtest_step "NCCL collectives np=1" 180 "${mpirun[@]}" -np 1 "$bin/nccl_backend_test" --gtest_brief=1 --gtest_color=no
gtest_step "NCCL abort np=1" 60 "${mpirun[@]}" -np 1 "$bin/nccl_abort_test" --gtest_brief=1 --gtest_color=no
gtest_step "NCCL runtime np=1" 120 "${mpirun[@]}" -np 1 "$bin/nccl_runtime_test" --gtest_brief=1 --gtest_color=no \
  --gtest_filter=-NcclRuntimeSetup.*
gtest_step "staged collectives np=2" 180 "${mpirun[@]}" -np 2 "$bin/staged_backend_test" --gtest_brief=1 --gtest_color=no
gtest_step "staged runtime np=2" 180 "${mpirun[@]}" -np 2 "$bin/staged_runtime_test" --gtest_brief=1 --gtest_color=no
gtest_step "hierarchical np=4" 180 "${mpirun[@]}" -np 4 "$bin/nccl_hierarchical_test" --gtest_brief=1 \
  --gtest_color=no --gtest_filter=-*TheRealConfiguration*

# 6-7. Speed against the same machine's peer, in the same run.
ratio_step() {  # ratio_step STEP GOAL PATTERN COMMAND...
  local step=$1 goal=$2 pattern=$3
  shift 3
  run "$step" 180 "$@"
  local lines
  lines=$(grep "^$pattern" <<<"$step_output")
  if ((step_status != 0)) || [[ -z "$lines" ]]; then
    report "$step" FAIL "exit $step_status, no '$pattern' line; see the log"
    return
  fi
  local worst
  worst=$(grep -o 'ratio=[0-9.]*' <<<"$lines" | cut -d= -f2 | sort -g | head -1)
  local verdict=PASS
  awk -v r="$worst" -v g="$goal" 'BEGIN { exit !(r < g) }' && verdict=FAIL
  report "$step" "$verdict" "lowest ratio ${worst}x (goal ${goal}x): $(tr '\n' ';' <<<"$lines")"
}
ratio_step "pack bandwidth" 0.8 pack_bandwidth "$bin/chorus_gpu_pack_bench"
ratio_step "64 MiB allreduce" 0.95 nccl_allreduce "${mpirun[@]}" -np 1 "$bin/chorus_gpu_allreduce_bench"

# 8. Training.
train_step() {  # train_step NP
  local np=$1 json="$out_dir/train_mnist_cuda_np$1.json"
  run "train_mnist_cuda np=$np" 240 "${mpirun[@]}" -np "$np" "$bin/train_mnist_cuda" \
    --data-dir "$bundle/mnist" --epochs 5 --summary-json "$json"
  local accuracy
  accuracy=$(grep -o '"final_test_accuracy": [0-9.]*' "$json" 2>/dev/null | grep -o '[0-9.]*$')
  if ((step_status != 0)) || [[ -z "$accuracy" ]]; then
    report "train_mnist_cuda np=$np" FAIL "exit $step_status, no accuracy in $json; see the log"
  elif awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.92) }'; then
    report "train_mnist_cuda np=$np" PASS "test accuracy $accuracy (goal 0.92)"
  else
    report "train_mnist_cuda np=$np" FAIL "test accuracy $accuracy (goal 0.92)"
  fi
}
train_step 1
train_step 2

echo "run_device_checks: summary in $summary"
exit "$failed"
