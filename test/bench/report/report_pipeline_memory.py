"""Section (i) of BENCHMARKS.md: pipeline memory, from
test/bench/pipeline/run_pipeline_memory_bench.sh (chorus_pipeline_memory_bench
at np = S): the most bytes of tensors each stage held at once in a step,
under GPipe and 1F1B, for each S and M. Each row's highest stage is also
shown against the same schedule's row at the smallest M (same S) and at the
smallest S (same M), which is what tells the schedules apart: 1F1B grows
with S and not with M, GPipe with M.
"""
import json

from report_inputs import ReportError, require

DASH = "–"
MIB = 1 << 20


def check_pipeline_memory(doc, where):
    if doc.get("benchmark") != "pipeline_memory":
        raise ReportError(f"{where}: 'benchmark' should be \"pipeline_memory\", "
                          f"got {json.dumps(doc.get('benchmark'))}")
    for key in ("cores", "width", "rows", "boundary_bytes", "stage_parameter_bytes", "steps"):
        if require(doc, key, int, where) <= 0:
            raise ReportError(f"{where}: '{key}' should be a positive integer, got {doc[key]}")
    results = require(doc, "results", list, where)
    if not results:
        raise ReportError(f"{where}: 'results' is empty")
    for i, res in enumerate(results):
        at = f"{where}: results[{i}]"
        if require(res, "schedule", str, at) not in ("gpipe", "1f1b"):
            raise ReportError(f"{at}: 'schedule' should be \"gpipe\" or \"1f1b\", got {json.dumps(res['schedule'])}")
        for key in ("stages", "micro_batches"):
            if require(res, key, int, at) <= 0:
                raise ReportError(f"{at}: '{key}' should be a positive integer, got {res[key]}")
        peaks = require(res, "stage_peak_bytes", list, at)
        if len(peaks) != res["stages"]:
            raise ReportError(f"{at}: 'stage_peak_bytes' should have one figure per stage ({res['stages']}), "
                              f"got {len(peaks)}")
        for s, p in enumerate(peaks):
            if not isinstance(p, int) or isinstance(p, bool) or p < 0:
                raise ReportError(f"{at}: stage_peak_bytes[{s}] should be a number of bytes, got {json.dumps(p)}")


def pipeline_memory_section(run, pieces, num, table, provenance):
    """The markdown lines of section (i); the formatting helpers come from
    report_markdown (passed in: that module imports this one)."""
    lines = ["## (i) Pipeline memory", ""]
    found = [p for p in pieces if p["kind"] == "pipeline_memory"]
    if not found:
        return lines + ["**Not measured in this run** (its results directory has no pipeline_memory piece; "
                        "`scripts/bench_report.sh --only pipeline-memory` measures it).", ""]
    piece = found[0]
    d = piece["data"]
    unit = d["boundary_bytes"]
    results = d["results"]
    widest = max(r["stages"] for r in results)

    def cell(nbytes):
        return f"{num(nbytes / MIB)} MiB ({num(nbytes / unit)} B)"

    def highest(schedule, stages, micro_batches):
        row = next((r for r in results if (r["schedule"], r["stages"], r["micro_batches"]) ==
                    (schedule, stages, micro_batches)), None)
        return None if row is None else max(row["stage_peak_bytes"])

    def versus(value, peer):
        return DASH if peer is None or peer == 0 else num(value / peer) + "x"

    lines += [f"One pipeline of S stages (`chorus_pipeline_memory_bench`, np = S, one stage per rank, messages "
              f"over Chorus's send/recv); the model is S layers Linear({d['width']}, {d['width']}), one per stage, "
              f"and a micro-batch has {d['rows']} rows, so every boundary tensor (an activation between stages or "
              f"its gradient) is **B** = {num(unit / MIB)} MiB and a stage's parameters are "
              f"{num(d['stage_parameter_bytes'] / MIB)} MiB. **Peak** of a stage = the most bytes of CPU tensor "
              "storage alive at once during a step, less what was alive when the step began (the parameters, "
              "their gradients, the batch), counted exactly by replacing c10's CPU allocator "
              "(`test/support/cpu_tensor_bytes.h`; not RSS); the highest over "
              f"{d['steps']} steps after one untimed step. 1F1B lets stage s hold at most S - s micro-batches "
              "between their forward and their backward, GPipe all M. The last columns compare the row's highest "
              "stage with the same schedule's at the smallest M (same S) and at the smallest S (same M).", ""]
    smallest_m = {(r["schedule"], r["stages"]): min(q["micro_batches"] for q in results
                                                    if (q["schedule"], q["stages"]) == (r["schedule"], r["stages"]))
                  for r in results}
    smallest_s = {(r["schedule"], r["micro_batches"]): min(q["stages"] for q in results
                                                           if (q["schedule"], q["micro_batches"]) ==
                                                           (r["schedule"], r["micro_batches"]))
                  for r in results}
    rows = []
    for r in results:
        key = (r["schedule"], r["stages"], r["micro_batches"])
        top = max(r["stage_peak_bytes"])
        m0 = smallest_m[(r["schedule"], r["stages"])]
        s0 = smallest_s[(r["schedule"], r["micro_batches"])]
        stages = [cell(p) for p in r["stage_peak_bytes"]] + [DASH] * (widest - r["stages"])
        rows.append([key[0], str(key[1]), str(key[2])] + stages + [
            cell(top), versus(top, highest(r["schedule"], r["stages"], m0)) + f" (M={m0})",
            versus(top, highest(r["schedule"], s0, r["micro_batches"])) + f" (S={s0})"])
    lines += table(["schedule", "S", "M"] + [f"stage {s}" for s in range(widest)] +
                   ["highest stage", "vs smallest M", "vs smallest S"], rows)
    if run.get("sections"):
        lines += ["", "This section was measured in its own run (`" + run["command"] + "`), not beside the "
                  "other sections of this page. It counts bytes, not time: the machine's load can only move a "
                  "figure by a send still in transit at the peak (when a neighbour took it)."]
    return lines + provenance(run, [piece], ["pipeline memory, all S and M"])
