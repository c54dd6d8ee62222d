#!/usr/bin/python3
"""Summarises run_python_bench.sh's rows (one JSON object per measurement:
impl, model, round, and samples_per_second or median_seconds): medians over
the rounds and, round by round, the ratios of the issue's targets:
python/sync (>= 0.9), python/ddp (>= 2), and for the 4 KiB latency
python/cpp (<= 1.5). Prints them, and writes them as JSON with --json.
    python_bench_summary.py ROWS.jsonl [ROWS.jsonl...] [--json OUT]
Rows of several files are rounds of one measurement: each file's rounds are
numbered after the previous file's.
"""
import argparse
import json
import statistics

RATIOS = (("python_vs_sync", "python", "sync"), ("python_vs_ddp", "python", "ddp"),
          ("python_vs_cpp", "python", "cpp"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("rows", nargs="+")
    p.add_argument("--json")
    a = p.parse_args()
    rows, offset = [], 0
    for path in a.rows:
        mine = [json.loads(line) for line in open(path) if line.strip()]
        for r in mine:
            r["round"] += offset
        offset = max([offset] + [r["round"] for r in mine])
        rows += mine
    out = {"training": [], "latency": None}
    for model in sorted({r["model"] for r in rows if r["model"] != "latency4k"}, key=lambda m: m != "ref"):
        mine = [r for r in rows if r["model"] == model]
        rate = {}
        for r in mine:
            rate.setdefault(r["impl"], {})[r["round"]] = r["samples_per_second"]
        rounds = sorted(set.intersection(*(set(v) for v in rate.values())))
        entry = {"model": model, "np": mine[0]["np"], "parameters": next(r["parameters"] for r in mine if r.get("parameters")),
                 "median_samples_per_second": {k: statistics.median(v.values()) for k, v in rate.items()},
                 "rounds": {k: [v[n] for n in rounds] for k, v in rate.items()}, "ratios": {}}
        for name, a_, b in RATIOS:
            if a_ in rate and b in rate:
                entry["ratios"][name] = [rate[a_][n] / rate[b][n] for n in rounds]
        out["training"].append(entry)
        print("%s MLP (%d parameters) at np=%d, global samples/s, median of %d rounds:" %
              (model, entry["parameters"], entry["np"], len(rounds)))
        print("  " + "   ".join("%s %.0f" % (k, v) for k, v in entry["median_samples_per_second"].items()))
        cpu = {}
        for r in mine:
            if "cpu_ms_per_step" in r:
                cpu.setdefault(r["impl"], []).append(r["cpu_ms_per_step"])
        if cpu:
            # Process CPU time per step (training and Chorus's threads), the
            # highest rank's: less sensitive than samples/s to a loaded machine.
            entry["median_cpu_ms_per_step"] = {k: statistics.median(v) for k, v in cpu.items()}
            print("  CPU ms per step: " + "   ".join("%s %.3g" % kv for kv in entry["median_cpu_ms_per_step"].items()))
        for name, values in entry["ratios"].items():
            print("  %-15s %s" % (name, "  ".join("%.2fx" % v for v in values)))
    lat = [r for r in rows if r["model"] == "latency4k"]
    if lat:
        by = {}
        for r in lat:
            by.setdefault(r["impl"], {})[r["round"]] = r["median_seconds"]
        # python: synchronize(allreduce_async_); python_blocking: allreduce_
        # (rows of older runs have no such impl).
        pythons = [k for k in ("python", "python_blocking") if k in by]
        rounds = sorted(set.intersection(*(set(by[k]) for k in pythons + ["cpp"])))
        out["latency"] = {"bytes": 4096, "median_seconds": {k: [v[n] for n in rounds] for k, v in by.items()}}
        # Which barrier started the Python rounds (rows from before
        # 2026-12-07 have none: Chorus's own, hvd.barrier()).
        barriers = {r.get("barrier", "chorus") for r in lat if r["impl"] in pythons}
        out["latency"]["python_barrier"] = barriers.pop() if len(barriers) == 1 else "mixed"
        for k in pythons:
            out["latency"][k + "_vs_cpp"] = [by[k][n] / by["cpp"][n] for n in rounds]
        print("4 KiB allreduce latency, submit to wait, median per round:")
        for k in pythons + ["cpp"]:
            print("  %-15s %s" % (k, "  ".join("%.2f us" % (1e6 * by[k][n]) for n in rounds)))
        for k in pythons:
            print("  %-15s %s" % (k + "/cpp", "  ".join("%.2fx" % v for v in out["latency"][k + "_vs_cpp"])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
