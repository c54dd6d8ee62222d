#!/usr/bin/env python3
"""Summarises run_training_bench.sh's measurements: one JSON line per
implementation and round (model, layers, np, impl, round, samples_per_second)
in, medians, bests and ratios against the peers of the same run out (printed,
and as JSON with --json).
  training_summary.py ROWS.jsonl [--json OUT] [--rounds N] [--batch-size B]
"""
import argparse
import json
import statistics
import sys

# Ratio name -> (numerator impl, denominator impl); a ratio is given when both ran.
RATIOS = {
    "chorus_vs_ceiling": ("chorus", "ceiling"),
    "chorus_vs_sync": ("chorus", "sync"),
    "sync_vs_ceiling": ("sync", "ceiling"),
    "mpi_vs_ceiling": ("mpi", "ceiling"),
    "chorus_vs_mpi": ("chorus", "mpi"),
    "chorus_vs_ddp": ("chorus", "ddp"),
    "ddp_vs_ceiling": ("ddp", "ceiling"),
    "autotune_vs_chorus": ("chorus_autotune", "chorus"),
    "autotune_vs_ceiling": ("chorus_autotune", "ceiling"),
}
IMPL_ORDER = ("ceiling", "sync", "mpi", "chorus", "chorus_autotune", "ddp")


def load_rows(path):
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not a JSON line ({e})") from None
            for key in ("model", "np", "impl", "samples_per_second"):
                if key not in row:
                    raise ValueError(f"{path}:{number}: no '{key}' in {line.strip()}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no measurements")
    return rows


def summarise(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["model"], row["np"]), []).append(row)
    results = []
    for (model, np), members in groups.items():
        by = {}
        for r in members:
            by.setdefault(r["impl"], []).append(r["samples_per_second"])
        impls = [i for i in IMPL_ORDER if i in by] + sorted(i for i in by if i not in IMPL_ORDER)
        med = {k: statistics.median(by[k]) for k in impls}
        best = {k: max(by[k]) for k in impls}
        ratios = {name: med[a] / med[b] for name, (a, b) in RATIOS.items() if a in med and b in med and med[b] > 0}
        first = members[0]
        results.append({"model": model, "layers": first.get("layers", ""), "np": np,
                        "parameters": next((r["parameters"] for r in members if "parameters" in r), None),
                        "steps": first.get("steps"), "warmup_steps": first.get("warmup_steps"),
                        "median": med, "best": best, "ratios": ratios, "rounds": {k: by[k] for k in impls}})
    return results


def print_summary(results):
    for res in results:
        rounds = max(len(v) for v in res["rounds"].values())
        print(f"\n{res['model']} MLP, np={res['np']}, global samples/s over {rounds} rounds (median / best):")
        for k in res["median"]:
            print(f"  {k:16s} {res['median'][k]:12.1f} / {res['best'][k]:12.1f}")
        for k, v in res["ratios"].items():
            print(f"  {k:20s} {v:.2f}x (medians)")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows")
    p.add_argument("--json", default="")
    p.add_argument("--rounds", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args(argv)
    try:
        results = summarise(load_rows(args.rows))
    except (OSError, ValueError) as e:
        print(f"training_summary: error: {e}", file=sys.stderr)
        return 1
    print_summary(results)
    if args.json:
        out = {"benchmark": "run_training_bench", "rounds": args.rounds, "batch_per_rank": args.batch_size,
               "results": results}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
