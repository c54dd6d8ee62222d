#!/usr/bin/env bash
# Each stage's peak bytes of tensors under GPipe and 1F1B: runs
# chorus_pipeline_memory_bench at np = S for each S (one pipeline of S
# stages) and merges the results into one JSON file (and a table on stderr).
#   run_pipeline_memory_bench.sh [--stages 2,4] [--micro-batches 8,16] [--rows N] [--width N]
#                                [--steps N] [--bench PATH] --json OUT
# More ranks than cores run oversubscribed (--oversubscribe, yielding when
# idle): the figures count bytes, not time, so that does not change them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
stages=2,4 micro_batches=8,16 steps=3 bench="$root/build/test/bench/chorus_pipeline_memory_bench"
json="" extra=()
while (($#)); do
  case "$1" in
    --stages) stages=$2; shift ;;
    --micro-batches) micro_batches=$2; shift ;;
    --steps) steps=$2; shift ;;
    --rows | --width) extra+=("$1" "$2"); shift ;;
    --bench) bench=$2; shift ;;
    --json) json=$2; shift ;;
    *) echo "run_pipeline_memory_bench: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$json" ]] || { echo "run_pipeline_memory_bench: --json OUT is required" >&2; exit 2; }
[[ -x "$bench" ]] || { echo "run_pipeline_memory_bench: $bench not built (scripts/build.sh chorus_pipeline_memory_bench)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
files=()
for s in ${stages//,/ }; do
  args=(-np "$s")
  ((s <= cores)) || args+=(--oversubscribe --mca mpi_yield_when_idle 1)
  mpirun "${args[@]}" "$bench" --micro-batches "$micro_batches" --steps "$steps" "${extra[@]}" \
    --json "$work/S$s.json" >/dev/null
  files+=("$work/S$s.json")
done
python3 - "$json" "$cores" "${files[@]}" <<'PY'
import json, sys
out, cores, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = [json.load(open(f)) for f in files]
first = runs[0]
merged = {"benchmark": "pipeline_memory", "cores": cores,
          **{k: first[k] for k in ("width", "rows", "boundary_bytes", "stage_parameter_bytes", "steps")},
          "results": [row for r in runs for row in r["results"]]}
json.dump(merged, open(out, "w"), indent=1)
unit = merged["boundary_bytes"]
print("%-6s %2s %3s  %s" % ("sched", "S", "M", "peak per stage, in boundary tensors of %d bytes" % unit), file=sys.stderr)
for r in merged["results"]:
    print("%-6s %2d %3d  %s" % (r["schedule"], r["stages"], r["micro_batches"],
          " ".join("%6.2f" % (p / unit) for p in r["stage_peak_bytes"])), file=sys.stderr)
PY
