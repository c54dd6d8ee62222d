#!/usr/bin/env python3
"""Draws a pipeline Chrome trace (Pipeline::write_trace, train_mnist
--pipeline-trace, CHORUS_PIPELINE_TRACE, chorus_pipeline_bench --trace) as
text: one row per stage, one column per time slot, each span written as its
name (F0, B3, ...) over the slots it covers and '.' where the stage is idle.

  scripts/pipeline_trace_chart.py TRACE.json [--step N] [--pipeline G] [--width W]

Shows one step (the last one recorded unless --step) of one pipeline.
"""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--step", type=int, help="the step to draw (default: the last)")
    parser.add_argument("--pipeline", type=int, default=0, help="the pipeline (data-parallel index)")
    parser.add_argument("--width", type=int, default=96, help="characters for the time axis")
    args = parser.parse_args()
    events = [e for e in json.load(open(args.trace))["traceEvents"] if e.get("ph") == "X"]
    events = [e for e in events if e["pid"] == args.pipeline]
    if not events:
        sys.exit("no spans of pipeline %d in %s" % (args.pipeline, args.trace))
    step = args.step if args.step is not None else max(e["args"]["step"] for e in events)
    events = [e for e in events if e["args"]["step"] == step]
    if not events:
        sys.exit("no spans of step %d" % step)
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    scale = args.width / (end - start)
    stages = sorted({e["tid"] for e in events})
    print("step %d of pipeline %d: %.1f ms, %.2f ms per column" %
          (step, args.pipeline, (end - start) / 1000, 1 / scale / 1000))
    for stage in stages:
        row = ["."] * args.width
        for e in sorted((e for e in events if e["tid"] == stage), key=lambda e: e["ts"]):
            first = int((e["ts"] - start) * scale)
            last = max(first + 1, int((e["ts"] + e["dur"] - start) * scale))
            label = e["name"]
            for i in range(first, min(last, args.width)):
                k = i - first
                row[i] = label[k] if k < len(label) else ("-" if label[0] == "F" else "=")
        busy = sum(e["dur"] for e in events if e["tid"] == stage)
        print("stage %d |%s| busy %3.0f%%" % (stage, "".join(row), 100 * busy / (end - start)))
    print("F<m>---: forward of micro-batch m, B<m>===: its backward, '.': idle "
          "(waiting for a neighbour)")


if __name__ == "__main__":
    main()
