"""gnuplot figures of the report: for each plot a data file and a script in
the run's plots/ folder (kept, so a figure can be redrawn or checked by hand)
and, when drawn, a PNG in the docs' benchmarks/ folder.
"""
import os
import shutil
import subprocess

from report_inputs import ReportError

MISSING = "?"
# noenhanced: names like MPI_Allreduce and bytes_per_second print as written.
TERMINAL = 'set terminal pngcairo noenhanced size 960,600 font "sans,11"'


def size_label(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def cell(value, scale=1.0):
    return MISSING if value is None else f"{value / scale:.6g}"


def quoted(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Plot:
    """One figure: `name`.dat and `name`.gp in plot_dir, `name`.png in png_dir."""

    def __init__(self, name, plot_dir, png_dir):
        self.name = name
        self.data_path = os.path.join(plot_dir, name + ".dat")
        self.script_path = os.path.join(plot_dir, name + ".gp")
        self.png_path = os.path.join(png_dir, name + ".png")

    def write(self, data_lines, script_lines):
        with open(self.data_path, "w") as f:
            f.write("\n".join(data_lines) + "\n")
        header = [TERMINAL, f"set output {quoted(self.png_path)}", f'set datafile missing "{MISSING}"',
                  "set grid", "set key box opaque"]
        with open(self.script_path, "w") as f:
            f.write("\n".join(header + script_lines) + "\n")


def busbw_plot(rows, np, plot_dir, png_dir):
    """Bus bandwidth (GB/s) against size, log-log, with the memcpy ceiling."""
    plot = Plot(f"allreduce-busbw-np{np}", plot_dir, png_dir)
    data = ["# bytes chorus_shm chorus_mpi_path mpi_allreduce gloo memcpy (GB/s; busbw, memcpy bytes/s)"]
    for r in rows:
        data.append(" ".join([str(r["bytes"])] + [cell(r[k], 1e9) for k in (
            "shm_busbw", "mpi_path_busbw", "mpi_busbw", "gloo_busbw", "memcpy_Bps")]))
    src = quoted(plot.data_path)
    series = [(2, "Chorus (shared memory)", "linespoints lw 2 pt 7"),
              (3, "Chorus (MPI path)", "linespoints lw 2 pt 5"),
              (4, "MPI_Allreduce (Open MPI)", "linespoints lw 2 pt 9"),
              (5, "torch.distributed gloo", "linespoints lw 2 pt 11"),
              (6, "memcpy, one rank (ceiling)", "lines lw 2 dt 2 lc rgb 'black'")]
    keys = {2: "shm_busbw", 3: "mpi_path_busbw", 4: "mpi_busbw", 5: "gloo_busbw", 6: "memcpy_Bps"}
    # gnuplot stops on a series with no defined point; leave such series out.
    clauses = [f"{src} using 1:{col} with {style} title {quoted(title)}"
               for col, title, style in series if any(r[keys[col]] is not None for r in rows)]
    tics = ", ".join(f"{quoted(size_label(r['bytes']))} {r['bytes']}" for r in rows)
    plot.write(data, [
        f'set title "Allreduce, float32 sum, np={np}: bus bandwidth (median of the rounds)"',
        "set logscale xy", f"set xtics ({tics}) rotate by -30", "set key bottom right",
        'set xlabel "message size"', 'set ylabel "busbw (GB/s), memcpy: bytes/s (GB/s)"',
        "plot " + ", \\\n     ".join(clauses)])
    return plot


SMALL_SERIES = (("chorus_shm", "Chorus (shared memory)"), ("chorus_mpi_path", "Chorus (MPI path)"),
                ("mpi_separate", "MPI: one call per tensor"), ("mpi_fused", "MPI: one fused call + copies"),
                ("gloo_async", "gloo: all async, then wait"), ("gloo_separate", "gloo: one call per tensor"))


def small_step_plot(steps, plot_dir, png_dir):
    """Clustered bars: time of the step (ms, log scale) per implementation and np."""
    plot = Plot("small-tensors-step", plot_dir, png_dir)
    data = ["implementation " + " ".join(f"np={s['np']}" for s in steps)]
    for key, title in SMALL_SERIES:
        data.append(quoted(title) + " " + " ".join(cell(s["times"][key], 1e-3) for s in steps))
    first = steps[0]
    plot.write(data, [
        f'set title "A step of {first["tensors"]} allreduces of {size_label(first["bytes_each"])} '
        f'(median time, lower is better)"',
        "set style data histograms", "set style histogram clustered gap 1",
        "set style fill solid 0.85 border -1", "set boxwidth 0.9", "set logscale y",
        'set ylabel "time per step (ms, log scale)"', "set xtics rotate by -25", "set key top left",
        "set bmargin 7", "set rmargin 12",
        f"plot for [i=2:{len(steps) + 1}] {quoted(plot.data_path)} using i:xtic(1) title columnheader(i)"])
    return plot


TRAINING_SERIES = (("ceiling", "no communication (ceiling)", "linespoints lw 2 dt 2 pt 6 lc rgb 'black'"),
                   ("sync", "barrier per step only (sync bound)", "linespoints lw 2 dt 3 pt 4 lc rgb 'gray40'"),
                   ("chorus", "Chorus", "linespoints lw 2 pt 7"),
                   ("ddp", "PyTorch DDP (gloo)", "linespoints lw 2 pt 9"))


def training_plot(rows, model, title, plot_dir, png_dir):
    """Global samples/s against np, one line per implementation."""
    plot = Plot(f"training-{model}", plot_dir, png_dir)
    data = ["# np " + " ".join(k for k, _, _ in TRAINING_SERIES) + " (median global samples/s)"]
    for r in rows:
        data.append(" ".join([str(r["np"])] + [cell(r["median"].get(k)) for k, _, _ in TRAINING_SERIES]))
    clauses = [f"{quoted(plot.data_path)} using 1:{i + 2} with {style} title {quoted(name)}"
               for i, (key, name, style) in enumerate(TRAINING_SERIES) if any(key in r["median"] for r in rows)]
    tics = ", ".join(f'"{r["np"]}" {r["np"]}' for r in rows)
    plot.write(data, [
        f"set title {quoted(title)}", f"set xtics ({tics})", "set key below",
        f"set xrange [0.5:{max(r['np'] for r in rows) + 0.5}]", "set yrange [0:*]",
        'set xlabel "ranks (np)"', 'set ylabel "global samples/s (median)"',
        "plot " + ", \\\n     ".join(clauses)])
    return plot


def autotune_plot(header, rows, score_index, plot_dir, png_dir):
    """The autotune log's score (its objective) against the sample number
    (the log's 'sample' column when it has one, else the row number)."""
    plot = Plot("autotune-score", plot_dir, png_dir)
    names = [h.strip().lower() for h in header]
    sample_index = names.index("sample") if "sample" in names else None
    # A rate in bytes/s reads better in GB/s.
    scale, unit = (1e9, " (GB/s)") if names[score_index] == "bytes_per_second" else (1.0, "")
    data = ["# sample score"]
    for i, row in enumerate(rows, 1):
        try:
            x = float(row[sample_index]) if sample_index is not None else i
            data.append(f"{x:.9g} {float(row[score_index]) / scale:.9g}")
        except (ValueError, IndexError):
            raise ReportError(f"autotune log row {i}: '{header[score_index]}' or the sample number is not a "
                              f"number: {row}") from None
    label = header[score_index] + unit
    plot.write(data, [
        'set title "Autotuning: score of each sample (from CHORUS_AUTOTUNE_LOG)"',
        'set xlabel "sample"', f"set ylabel {quoted(label)}", "set yrange [0:*]",
        f"plot {quoted(plot.data_path)} using 1:2 with linespoints lw 2 pt 7 title {quoted(label)}"])
    return plot


def draw(plots):
    """Runs gnuplot on every plot's script; a failure names the script."""
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        raise ReportError("gnuplot not found on PATH: install gnuplot-nox (scripts/bench_report.sh does) "
                          "or pass --no-plots")
    for plot in plots:
        done = subprocess.run([gnuplot, plot.script_path], capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(plot.png_path):
            raise ReportError(f"gnuplot failed on {plot.script_path} (exit {done.returncode}): "
                              f"{done.stderr.strip()[-500:]}")
