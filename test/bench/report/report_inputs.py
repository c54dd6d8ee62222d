"""Reads and checks one benchmark-report run directory (scripts/bench_report.sh
writes it): run.json (the run: command, dates, machine), pieces.jsonl (one
line per measurement: its kind, np, configuration, result file, exact command,
date and load average) and the result files the pieces name. Anything missing
or malformed raises ReportError naming the file, the place in it and what was
expected, so a broken run never turns into a plausible-looking report.
"""
import csv
import json
import os


class ReportError(Exception):
    pass


def read_json(path, what):
    """The parsed JSON of `path`; `what` says what the file should hold."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file (expected {what})") from None
    except OSError as e:
        raise ReportError(f"{path}: cannot read it ({e.strerror}); expected {what}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
                          f"expected {what}") from None


def require(obj, key, kind, where):
    """obj[key], checked to be of `kind` (a type or tuple of types)."""
    if not isinstance(obj, dict):
        raise ReportError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        raise ReportError(f"{where}: missing '{key}'")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python; a flag is never a measurement.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ReportError(f"{where}: '{key}' should be {names}, got {json.dumps(value)[:60]}")
    return value


def require_time(obj, key, where):
    """A statistics object {median_s, min_s, samples} with positive times."""
    s = require(obj, key, dict, where)
    for k in ("median_s", "min_s"):
        if require(s, k, (int, float), f"{where}.{key}") <= 0:
            raise ReportError(f"{where}.{key}: '{k}' should be a positive number of seconds, got {s[k]}")
    require(s, "samples", int, f"{where}.{key}")
    return s


def check_chorus_bench(doc, where):
    if doc.get("benchmark") != "chorus_bench":
        raise ReportError(f"{where}: 'benchmark' should be \"chorus_bench\", got {json.dumps(doc.get('benchmark'))}")
    require(doc, "np", int, where)
    rows = require(doc, "allreduce", list, where)
    if not rows:
        raise ReportError(f"{where}: 'allreduce' has no sizes")
    for i, row in enumerate(rows):
        at = f"{where}: allreduce[{i}]"
        if require(row, "bytes", int, at) <= 0:
            raise ReportError(f"{at}: 'bytes' should be positive, got {row['bytes']}")
        require_time(row, "chorus", at)
        require_time(row, "mpi", at)
        # The memcpy ceiling is optional: older chorus_bench builds do not measure it.
        for key in ("memcpy_Bps", "memcpy_warm_Bps"):
            if key in row and require(row, key, (int, float), at) <= 0:
                raise ReportError(f"{at}: '{key}' should be positive, got {row[key]}")
    small = require(doc, "small_tensors", dict, where)
    require(small, "tensors", int, f"{where}: small_tensors")
    require(small, "bytes_each", int, f"{where}: small_tensors")
    for k in ("chorus", "mpi_separate", "mpi_fused_with_copies"):
        require_time(small, k, f"{where}: small_tensors")
    latency = require(doc, "latency", dict, where)
    require(latency, "bytes", int, f"{where}: latency")
    require_time(latency, "chorus", f"{where}: latency")
    require_time(latency, "mpi", f"{where}: latency")
    idle = doc.get("idle_cpu")
    if idle is not None:
        require(idle, "max_percent", (int, float), f"{where}: idle_cpu")
        background = idle.get("background_thread")  # absent in runs made before it was measured
        if background is not None and background.get("max_percent") is not None:
            require(background, "max_percent", (int, float), f"{where}: idle_cpu: background_thread")


def check_gloo(doc, where):
    if doc.get("benchmark") != "gloo_allreduce_bench":
        raise ReportError(f"{where}: 'benchmark' should be \"gloo_allreduce_bench\", "
                          f"got {json.dumps(doc.get('benchmark'))}")
    require(doc, "np", int, where)
    rows = require(doc, "allreduce", list, where)
    for i, row in enumerate(rows):
        require(row, "bytes", int, f"{where}: allreduce[{i}]")
        require_time(row, "gloo", f"{where}: allreduce[{i}]")
    small = require(doc, "small_tensors", dict, where)
    for k in ("gloo_async", "gloo_separate"):
        require_time(small, k, f"{where}: small_tensors")


def check_chorus_bench_p2p(doc, where):
    if doc.get("benchmark") != "chorus_bench_p2p":
        raise ReportError(f"{where}: 'benchmark' should be \"chorus_bench_p2p\", got {json.dumps(doc.get('benchmark'))}")
    require(doc, "np", int, where)
    rows = require(doc, "pingpong", list, where)
    if not rows:
        raise ReportError(f"{where}: 'pingpong' is empty")
    for i, row in enumerate(rows):
        require(row, "bytes", int, f"{where}: pingpong[{i}]")
        for key in ("chorus", "mpi_send_recv", "mpi_isend_irecv"):
            require_time(row, key, f"{where}: pingpong[{i}]")


def check_training(doc, where):
    if doc.get("benchmark") != "run_training_bench":
        raise ReportError(f"{where}: 'benchmark' should be \"run_training_bench\", "
                          f"got {json.dumps(doc.get('benchmark'))}")
    results = require(doc, "results", list, where)
    if not results:
        raise ReportError(f"{where}: 'results' is empty")
    for i, res in enumerate(results):
        at = f"{where}: results[{i}]"
        require(res, "model", str, at)
        require(res, "np", int, at)
        for key in ("median", "best"):
            for impl, value in require(res, key, dict, at).items():
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                    raise ReportError(f"{at}.{key}: '{impl}' should be a positive samples/s, got {json.dumps(value)}")


def check_pipeline(doc, where):
    if doc.get("benchmark") != "pipeline_bubble":
        raise ReportError(f"{where}: 'benchmark' should be \"pipeline_bubble\", "
                          f"got {json.dumps(doc.get('benchmark'))}")
    require(doc, "compute", str, where)
    require(doc, "cores", int, where)
    results = require(doc, "results", list, where)
    if not results:
        raise ReportError(f"{where}: 'results' is empty")
    for i, res in enumerate(results):
        at = f"{where}: results[{i}]"
        require(res, "schedule", str, at)
        for key in ("stages", "micro_batches"):
            require(res, key, int, at)
        for key in ("theoretical_bubble", "measured_bubble", "worst_stage_bubble", "step_ms"):
            require(res, key, (int, float), at)


def check_heartbeat(doc, where):
    for key in ("np", "rounds"):
        require(doc, key, int, where)
    require(doc, "idle_seconds", (int, float), where)
    settings = require(doc, "settings", list, where)
    if not settings:
        raise ReportError(f"{where}: 'settings' is empty")
    for i, s in enumerate(settings):
        at = f"{where}: settings[{i}]"
        require(s, "timeout_seconds", (int, float), at)
        for key in ("latency_median_s", "latency_min_s", "mpi_latency_median_s", "idle_percent"):
            if not require(s, key, list, at):
                raise ReportError(f"{at}: '{key}' is empty")


def read_csv(path):
    """(header, rows) of a CSV file; a missing or empty file is an error."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise ReportError(f"{path}: cannot read it ({e.strerror}); expected the autotune CSV log") from None
    rows = [r for r in rows if r]
    if not rows:
        raise ReportError(f"{path}: empty; expected the autotune CSV log with a header line")
    return rows[0], rows[1:]


def check_elastic_recovery(doc, where):
    from report_elastic import check_elastic_recovery as check  # it imports this module
    check(doc, where)


def check_pipeline_memory(doc, where):
    from report_pipeline_memory import check_pipeline_memory as check  # it imports this module
    check(doc, where)


def check_python_bench(doc, where):
    from report_python import check_python_bench as check  # it imports this module
    check(doc, where)


PIECE_CHECKS = {"chorus_bench": check_chorus_bench, "gloo": check_gloo, "training": check_training,
                "autotune": check_training, "chorus_bench_p2p": check_chorus_bench_p2p,
                "pipeline": check_pipeline, "heartbeat": check_heartbeat,
                "elastic_recovery": check_elastic_recovery, "pipeline_memory": check_pipeline_memory,
                "python": check_python_bench}
PIECE_WHAT = {"chorus_bench": "chorus_bench --json output", "gloo": "gloo_allreduce_bench.py --json output",
              "training": "run_training_bench.sh --json output", "autotune": "run_training_bench.sh --json output",
              "chorus_bench_p2p": "chorus_bench --mode p2p --json output",
              "pipeline": "run_pipeline_bench.sh --json output",
              "heartbeat": "scripts/bench_heartbeat.sh --json output",
              "elastic_recovery": "elastic_netns_test.sh's JSON timings",
              "pipeline_memory": "run_pipeline_memory_bench.sh --json output",
              "python": "test/bench/python/run_python_bench.sh --json output"}


def load_run(directory):
    """{"run": run.json, "pieces": [piece with its parsed "data"]} of a run directory."""
    if not os.path.isdir(directory):
        raise ReportError(f"{directory}: not a directory (expected a results directory of scripts/bench_report.sh)")
    run = read_json(os.path.join(directory, "run.json"), "the run description written by scripts/bench_report.sh")
    for key in ("command", "started", "machine"):
        require(run, key, (str, dict) if key == "machine" else str, "run.json")
    machine = require(run, "machine", dict, "run.json")
    for key in ("host", "cpu_model", "kernel"):
        require(machine, key, str, "run.json: machine")
    for key in ("nproc", "memory_bytes"):
        require(machine, key, int, "run.json: machine")
    pieces_path = os.path.join(directory, "pieces.jsonl")
    try:
        with open(pieces_path) as f:
            lines = f.readlines()
    except OSError as e:
        raise ReportError(f"{pieces_path}: cannot read it ({e.strerror}); expected one JSON line per measurement") from None
    pieces = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"pieces.jsonl line {number}"
        try:
            piece = json.loads(line)
        except json.JSONDecodeError as e:
            raise ReportError(f"{pieces_path}: line {number} is not valid JSON ({e.msg})") from None
        kind = require(piece, "kind", str, where)
        if kind not in PIECE_CHECKS:
            raise ReportError(f"{where}: unknown kind '{kind}' (expected one of {', '.join(PIECE_CHECKS)})")
        require(piece, "command", str, where)
        # Pieces that may be absent from a run say why ("available": false).
        available = (require(piece, "available", bool, where) if kind == "autotune"
                     else piece.get("available", True))
        if not available:
            require(piece, "reason", str, where)
            pieces.append(piece)
            continue
        name = require(piece, "file", str, where)
        path = os.path.join(directory, name)
        piece["data"] = read_json(path, PIECE_WHAT[kind])
        PIECE_CHECKS[kind](piece["data"], name)
        if kind == "autotune":
            piece["logs"] = [(log, *read_csv(os.path.join(directory, log)))
                             for log in require(piece, "logs", list, where)]
        pieces.append(piece)
    if not pieces:
        raise ReportError(f"{pieces_path}: no measurements listed")
    return {"run": run, "pieces": pieces}
