"""Section (j) of BENCHMARKS.md: the Python binding (chorus.torch), from
test/bench/python/run_python_bench.sh: the Python example's training
throughput against its own sync bound, PyTorch DDP (gloo) and the C++ front
end, for the reference and the 25M-parameter MLP at np=2, and the 4 KiB
allreduce latency from Python against the C++ API, round by round.
"""
import json
import statistics

from report_inputs import ReportError, require

DASH = "–"
TARGETS = {"python_vs_sync": ">= 0.9x", "python_vs_ddp": ">= 2x"}


def check_python_bench(doc, where):
    training = require(doc, "training", list, where)
    if not training:
        raise ReportError(f"{where}: 'training' is empty; expected one entry per model")
    for i, entry in enumerate(training):
        at = f"{where}: training[{i}]"
        require(entry, "model", str, at)
        require(entry, "np", int, at)
        rounds = require(entry, "rounds", dict, at)
        for impl in ("python", "sync", "ddp", "cpp"):
            values = rounds.get(impl)
            if not isinstance(values, list) or not values or \
                    not all(isinstance(v, (int, float)) and v > 0 for v in values):
                raise ReportError(f"{at}: 'rounds' should hold positive samples/s per round for '{impl}', "
                                  f"got {json.dumps(values)}")
    latency = require(doc, "latency", dict, where)
    for impl in ("python", "cpp"):
        values = require(latency, "median_seconds", dict, f"{where}: latency").get(impl)
        if not isinstance(values, list) or not values:
            raise ReportError(f"{where}: latency.median_seconds should hold a list for '{impl}', "
                              f"got {json.dumps(values)}")


def python_section(run, pieces, num, duration, table, provenance):
    """The markdown lines of section (j); the formatting helpers come from
    report_markdown (passed in: that module imports this one)."""
    lines = ["## (j) Python: chorus.torch", ""]
    found = [p for p in pieces if p["kind"] == "python"]
    if not found:
        return lines + ["**Not measured in this run** (its results directory has no python piece; "
                        "`scripts/bench_report.sh --only python` measures it).", ""]
    piece = found[0]
    doc = piece["data"]
    lines += ["The Python binding at np=2 (`test/bench/python/run_python_bench.sh`), the implementations "
              "alternating round by round: **Python** is `examples/python/pytorch_synthetic_benchmark.py` "
              "(chorus.torch's `DistributedOptimizer`) under `chorusrun`; its **sync bound** the same script "
              "with `--sync-bound` (no gradient exchange, every rank meets at one `hvd.barrier()` per step: what "
              "a Python loop can reach with any synchronous data parallelism); **DDP** PyTorch's "
              "`DistributedDataParallel` with gloo (`ddp_baseline.py`); **C++** `chorus_train_bench --mode "
              "chorus`, the LibTorch front end. Same MLP, Adam, batch 64 per rank, 8 synthetic batches per rank, "
              "one thread per rank. Global samples/s, median of the rounds; ratios per round (the issue's "
              "targets: >= 0.9x the sync bound, >= 2x DDP).", ""]
    rows = []
    with_cpu = any("median_cpu_ms_per_step" in e for e in doc["training"])
    for e in doc["training"]:
        med = {k: statistics.median(v) for k, v in e["rounds"].items()}
        ratio = {name: [a / b for a, b in zip(e["rounds"][x], e["rounds"][y])]
                 for name, x, y in (("python_vs_sync", "python", "sync"), ("python_vs_ddp", "python", "ddp"),
                                    ("python_vs_cpp", "python", "cpp"))}
        rows.append([f"{e['model']} ({e.get('parameters', 0):,} parameters)", str(e["np"]),
                     num(med["python"]), num(med["sync"]), num(med["ddp"]), num(med["cpp"])] +
                    [" / ".join(num(v) + "x" for v in ratio[name]) for name in ("python_vs_sync", "python_vs_ddp",
                                                                                "python_vs_cpp")])
        if with_cpu:
            cpu = e.get("median_cpu_ms_per_step", {})
            rows[-1].append(" / ".join(num(cpu.get(k)) for k in ("python", "sync")))
    lines += table(["model", "np", "Python", "sync bound", "DDP (gloo)", "C++ front end",
                    "Python vs sync bound (per round)", "Python vs DDP (per round)", "Python vs C++ (per round)"] +
                   (["CPU ms per step, Python / sync bound"] if with_cpu else []), rows)
    if with_cpu:
        lines += ["", "CPU ms per step: the process's CPU time (training thread and Chorus's threads) over the "
                  "timed steps, the highest rank's, median of the rounds: what a step costs, less sensitive than "
                  "samples/s to other work on the machine."]
    lat = doc["latency"]["median_seconds"]
    # python_blocking (hvd.allreduce_) is in the runs from 2026-12-07 on.
    pythons = [k for k in ("python", "python_blocking") if lat.get(k)]
    n = min(len(lat[k]) for k in pythons + ["cpp"])
    barrier = {"mpi": "MPI's barrier (`MPI_Barrier`, through mpi4py in Python, as `chorus_bench` in C++)",
               "chorus": "a barrier (in Python Chorus's `hvd.barrier()`, in C++ `MPI_Barrier`)"}.get(
        doc["latency"].get("python_barrier", "chorus"), "a barrier (not the same one in every round)")
    lines += ["", "One 4 KiB float32 allreduce, submit to wait: every round the ranks meet at " + barrier +
              ", then time the op, and a round counts as its slowest rank's time; median of 1000 rounds. Python: "
              "`synchronize(allreduce_async_(...))`" +
              (" and, blocking, `allreduce_(...)`" if "python_blocking" in pythons else "") +
              " (`test/bench/python/allreduce_latency.py`); C++: "
              "`chorus::allreduce_async(...).wait()` (`chorus_bench`'s latency, with Open MPI yielding when idle "
              "as `init()` sets it for the Python program). Target: Python within 1.5x.", ""]
    names = {"python": "Python", "python_blocking": "Python, blocking"}
    lines += table(["round"] + [names[k] for k in pythons] + ["C++ API"] +
                   [names[k] + " vs C++" for k in pythons],
                   [[str(i + 1)] + [duration(lat[k][i]) for k in pythons] + [duration(lat["cpp"][i])] +
                    [num(lat[k][i] / lat["cpp"][i]) + "x" for k in pythons] for i in range(n)])
    if run.get("sections"):
        lines += ["", "This section was measured in its own run (`" + run["command"] + "`), not beside the "
                  "other sections of this page."]
    return lines + provenance(run, [piece], ["python binding, np=2"])
