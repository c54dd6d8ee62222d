"""The report's figures, computed from the checked inputs of one run: bus
bandwidths, step times and the ratios between implementations measured in the
same run. Plain numbers here; report_markdown.py formats them and
report_plots.py draws them.

busbw = bytes / time x 2(n-1)/n: the bytes each rank sends (and receives) in a
ring allreduce, per second, so figures for different np compare with the link
or memory bandwidth (at np=2 it equals bytes / time).
"""
from report_inputs import ReportError

CONFIGS = {"shm": "CHORUS_SHM_ALLREDUCE=on", "mpi": "CHORUS_SHM_ALLREDUCE=off"}


def busbw(nbytes, seconds, ranks):
    return nbytes / seconds * 2.0 * (ranks - 1) / ranks


def find_piece(pieces, kind, np=None, config=None):
    """The one piece of `kind` (and np, config); a missing one is an error."""
    found = [p for p in pieces if p["kind"] == kind and (np is None or p.get("np") == np)
             and (config is None or p.get("config") == config)]
    if not found:
        detail = "".join([f" at np={np}" if np is not None else "", f" with config '{config}'" if config else ""])
        raise ReportError(f"pieces.jsonl lists no {kind} result{detail}; the run is incomplete")
    if len(found) > 1:
        raise ReportError(f"pieces.jsonl lists {len(found)} {kind} results at np={np} config={config}; expected one")
    piece = found[0]
    data_np = piece.get("data", {}).get("np")
    if np is not None and data_np is not None and data_np != np:
        raise ReportError(f"{piece['file']}: np is {data_np}, but pieces.jsonl lists it as np={np}")
    return piece


def allreduce_nps(pieces):
    return sorted({p["np"] for p in pieces if p["kind"] == "chorus_bench"})


def allreduce_rows(pieces, np):
    """One row per size of the shared-memory run: every implementation's busbw
    (bytes/s, None where not measured) and the ratios of times in this run."""
    shm = find_piece(pieces, "chorus_bench", np, "shm")["data"]
    path = find_piece(pieces, "chorus_bench", np, "mpi")["data"]
    gloo = find_piece(pieces, "gloo", np)["data"]
    path_by_size = {r["bytes"]: r for r in path["allreduce"]}
    gloo_by_size = {r["bytes"]: r for r in gloo["allreduce"]}
    rows = []
    for r in shm["allreduce"]:
        n = r["bytes"]
        p, g = path_by_size.get(n), gloo_by_size.get(n)
        t_shm, t_mpi = r["chorus"]["median_s"], r["mpi"]["median_s"]
        row = {
            "bytes": n,
            "shm_busbw": busbw(n, t_shm, np),
            "mpi_path_busbw": busbw(n, p["chorus"]["median_s"], np) if p else None,
            "mpi_busbw": busbw(n, t_mpi, np),
            "mpi_busbw_beside_path": busbw(n, p["mpi"]["median_s"], np) if p else None,
            "gloo_busbw": busbw(n, g["gloo"]["median_s"], np) if g else None,
            "memcpy_Bps": r.get("memcpy_Bps"),
            "memcpy_warm_Bps": r.get("memcpy_warm_Bps"),  # absent in runs made before it was measured
            # Above 1: the first named is faster. Each against its own run's MPI.
            "shm_vs_mpi": t_mpi / t_shm,
            "path_vs_mpi": p["mpi"]["median_s"] / p["chorus"]["median_s"] if p else None,
            "shm_vs_gloo": g["gloo"]["median_s"] / t_shm if g else None,
        }
        row["shm_of_memcpy"] = row["shm_busbw"] / row["memcpy_Bps"] if row["memcpy_Bps"] else None
        rows.append(row)
    return rows


def small_step(pieces, np):
    """The step of many small allreduces at one np: times (s) and ratios."""
    shm = find_piece(pieces, "chorus_bench", np, "shm")["data"]
    path = find_piece(pieces, "chorus_bench", np, "mpi")["data"]
    gloo = find_piece(pieces, "gloo", np)["data"]
    s, p, g = shm["small_tensors"], path["small_tensors"], gloo["small_tensors"]
    times = {
        "chorus_shm": s["chorus"]["median_s"],
        "chorus_mpi_path": p["chorus"]["median_s"],
        "mpi_separate": s["mpi_separate"]["median_s"],
        "mpi_fused": s["mpi_fused_with_copies"]["median_s"],
        "gloo_async": g["gloo_async"]["median_s"],
        "gloo_separate": g["gloo_separate"]["median_s"],
    }
    ratios = {
        "mpi_separate_vs_shm": times["mpi_separate"] / times["chorus_shm"],
        "mpi_fused_vs_shm": times["mpi_fused"] / times["chorus_shm"],
        "path_mpi_separate_vs_path": p["mpi_separate"]["median_s"] / times["chorus_mpi_path"],
        "gloo_async_vs_shm": times["gloo_async"] / times["chorus_shm"],
    }
    return {"np": np, "tensors": s["tensors"], "bytes_each": s["bytes_each"], "times": times, "ratios": ratios}


def latency_idle(pieces, np):
    """4 KiB latency (s) and idle CPU (% of a core: the whole process, and the
    background thread alone) of both Chorus configurations."""
    out = {}
    for config in CONFIGS:
        d = find_piece(pieces, "chorus_bench", np, config)["data"]
        idle = d.get("idle_cpu")
        out[config] = {"bytes": d["latency"]["bytes"], "chorus": d["latency"]["chorus"]["median_s"],
                       "mpi": d["latency"]["mpi"]["median_s"],
                       "ratio": d["latency"]["mpi"]["median_s"] / d["latency"]["chorus"]["median_s"],
                       "idle_percent": idle["max_percent"] if idle else None,
                       # Runs before the background thread was measured on its own have no figure.
                       "idle_background_percent": (idle.get("background_thread") or {}).get("max_percent")
                                                  if idle else None}
    return out


TRAINING_RATIOS = (("chorus", "ceiling"), ("chorus", "sync"), ("chorus", "ddp"), ("ddp", "ceiling"))


def training_rows(doc, model):
    """Per np (ascending): median and best samples/s per implementation and the
    ratios of medians, recomputed here from the medians."""
    rows = []
    for res in sorted((r for r in doc["results"] if r["model"] == model), key=lambda r: r["np"]):
        med = res["median"]
        ratios = {f"{a}_vs_{b}": med[a] / med[b] for a, b in TRAINING_RATIOS if a in med and b in med}
        rows.append({"np": res["np"], "median": med, "best": res["best"], "ratios": ratios,
                     "parameters": res.get("parameters"), "layers": res.get("layers", ""),
                     "rounds": max((len(v) for v in res.get("rounds", {}).values()), default=0)})
    return rows


def training_models(doc):
    return list(dict.fromkeys(r["model"] for r in doc["results"]))


def autotune_rows(doc):
    """Per (model, np): defaults vs CHORUS_AUTOTUNE=1, medians and the ratio."""
    rows = []
    for res in doc["results"]:
        med = res["median"]
        if "chorus" not in med or "chorus_autotune" not in med:
            raise ReportError(f"autotune results for {res['model']} at np={res['np']} need both 'chorus' and "
                              f"'chorus_autotune' medians, got {sorted(med)}")
        rows.append({"model": res["model"], "np": res["np"], "median": med, "best": res["best"],
                     "ratio": med["chorus_autotune"] / med["chorus"],
                     "rounds": max((len(v) for v in res.get("rounds", {}).values()), default=0)})
    return rows


# What the autotuner maximises, by the names its CSV log may give it.
SCORE_COLUMNS = ("score", "bytes_per_second", "samples_per_second")


def score_column(header):
    """Index of the autotune log's objective column (any case), or None."""
    names = [h.strip().lower() for h in header]
    for wanted in SCORE_COLUMNS:
        if wanted in names:
            return names.index(wanted)
    return None
