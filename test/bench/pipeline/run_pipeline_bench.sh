#!/usr/bin/env bash
# The pipeline bubble of GPipe and 1F1B against (S-1)/(M+S-1): runs
# chorus_pipeline_bench at np = S for each S (one pipeline of S stages) and
# merges the results into one JSON file (and a table on stderr).
#   run_pipeline_bench.sh [--stages 2,4] [--micro-batches 1,2,4,8] [--compute sleep|matmul]
#                         [--steps N] [--bench PATH] [--trace-dir DIR] --json OUT
# More ranks than cores run oversubscribed (--oversubscribe, yielding when
# idle); the JSON records the machine's core count next to the figures.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
stages=2,4 micro_batches=1,2,4,8 compute=sleep steps=10 bench="$root/build/test/bench/chorus_pipeline_bench"
json="" trace_dir=""
while (($#)); do
  case "$1" in
    --stages) stages=$2; shift ;;
    --micro-batches) micro_batches=$2; shift ;;
    --compute) compute=$2; shift ;;
    --steps) steps=$2; shift ;;
    --bench) bench=$2; shift ;;
    --trace-dir) trace_dir=$2; shift ;;
    --json) json=$2; shift ;;
    *) echo "run_pipeline_bench: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$json" ]] || { echo "run_pipeline_bench: --json OUT is required" >&2; exit 2; }
[[ -x "$bench" ]] || { echo "run_pipeline_bench: $bench not built (scripts/build.sh chorus_pipeline_bench)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
files=()
for s in ${stages//,/ }; do
  args=(-np "$s")
  ((s <= cores)) || args+=(--oversubscribe --mca mpi_yield_when_idle 1)
  trace=()
  [[ -z "$trace_dir" ]] || { mkdir -p "$trace_dir"; trace=(--trace "$trace_dir/pipeline-S$s.json"); }
  mpirun "${args[@]}" "$bench" --micro-batches "$micro_batches" --compute "$compute" --steps "$steps" \
    "${trace[@]}" --json "$work/S$s.json" >/dev/null
  files+=("$work/S$s.json")
done
python3 - "$json" "$cores" "$compute" "${files[@]}" <<'PY'
import json, sys
out, cores, compute, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
runs = [json.load(open(f)) for f in files]
merged = {"benchmark": "pipeline_bubble", "compute": compute, "cores": cores,
          "forward_ms_per_step": runs[0]["forward_ms_per_step"],
          "backward_ms_per_step": runs[0]["backward_ms_per_step"], "steps": runs[0]["steps"],
          "oversubscribed_stages": [r["stages"] for r in runs if r["stages"] > cores],
          "results": [row for r in runs for row in r["results"]]}
json.dump(merged, open(out, "w"), indent=1)
print("%-6s %2s %2s %12s %9s %11s %8s" % ("sched", "S", "M", "theoretical", "measured", "worst stage", "step ms"), file=sys.stderr)
for r in merged["results"]:
    print("%-6s %2d %2d %12.3f %9.3f %11.3f %8.1f" % (r["schedule"], r["stages"], r["micro_batches"],
          r["theoretical_bubble"], r["measured_bubble"], r["worst_stage_bubble"], r["step_ms"]), file=sys.stderr)
PY
