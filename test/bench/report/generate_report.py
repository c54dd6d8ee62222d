#!/usr/bin/env python3
"""Writes BENCHMARKS.md and its PNG plots from one results directory of
scripts/bench_report.sh (run.json, pieces.jsonl and the JSON files they name).
  generate_report.py RESULTS_DIR [--docs-dir DIR] [--no-plots] [--results-label TEXT]
  generate_report.py RESULTS_DIR --only SECTION [--docs-dir DIR]
The markdown goes to DIR/BENCHMARKS.md (default docs/ of this repository), the
plots to DIR/benchmarks/*.png (gnuplot; other PNGs there, from earlier runs,
are removed), their data and scripts to RESULTS_DIR/plots/. --no-plots writes
data and scripts but runs no gnuplot.
--only SECTION (elastic, pipeline-memory, python): RESULTS_DIR is a run of bench_report.sh --only
SECTION; only that section of DIR/BENCHMARKS.md is replaced (or inserted in
its place among the others), the rest of the page is left as it was.
Exits 1 with a message naming the file and what was expected when an input
is missing or malformed; nothing is written then.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report_figures as fig  # noqa: E402
import report_markdown  # noqa: E402
import report_plots  # noqa: E402
from report_inputs import ReportError, load_run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def make_plots(pieces, plot_dir, png_dir):
    """Every plot object (data and script written); the autotune plot only when
    its log has a score column. Returns (plots, autotune plotted?)."""
    plots = [report_plots.busbw_plot(fig.allreduce_rows(pieces, np), np, plot_dir, png_dir)
             for np in fig.allreduce_nps(pieces)]
    plots.append(report_plots.small_step_plot([fig.small_step(pieces, np) for np in fig.allreduce_nps(pieces)],
                                              plot_dir, png_dir))
    training = fig.find_piece(pieces, "training")["data"]
    for model in fig.training_models(training):
        title = f"Training throughput, {report_markdown.MODEL_TITLES.get(model, model)}"
        plots.append(report_plots.training_plot(fig.training_rows(training, model), model, title, plot_dir, png_dir))
    autotune = fig.find_piece(pieces, "autotune")
    plotted = False
    if autotune.get("available", True) and autotune["logs"]:
        _, header, rows = autotune["logs"][-1]
        score = fig.score_column(header)
        if score is not None and rows:
            plots.append(report_plots.autotune_plot(header, rows, score, plot_dir, png_dir))
            plotted = True
    return plots, plotted


def generate(results_dir, docs_dir, draw=True, results_label=None):
    """Checks every input, then writes the plots and BENCHMARKS.md; returns the markdown path."""
    loaded = load_run(results_dir)
    run, pieces = loaded["run"], loaded["pieces"]
    png_dir = os.path.join(docs_dir, "benchmarks")
    plot_dir = os.path.join(results_dir, "plots")
    # Render once before writing anything, so bad input leaves no half-written report.
    report_markdown.render(run, pieces, docs_dir, png_dir, results_label or results_dir, False)
    for d in (plot_dir, png_dir):
        os.makedirs(d, exist_ok=True)
    plots, autotune_plotted = make_plots(pieces, plot_dir, png_dir)
    if draw:
        report_plots.draw(plots)
        # The folder holds this report's figures only: drop those of earlier
        # runs that this one did not draw (e.g. an autotune plot).
        drawn = {os.path.basename(p.png_path) for p in plots}
        for name in os.listdir(png_dir):
            if name.endswith(".png") and name not in drawn:
                os.remove(os.path.join(png_dir, name))
    text = report_markdown.render(run, pieces, docs_dir, png_dir, results_label or results_dir, autotune_plotted)
    out = os.path.join(docs_dir, "BENCHMARKS.md")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return out


def generate_only(results_dir, docs_dir, name):
    """Replaces section `name` of docs_dir/BENCHMARKS.md with results_dir's."""
    loaded = load_run(results_dir)
    out = os.path.join(docs_dir, "BENCHMARKS.md")
    try:
        with open(out) as f:
            page = f.read()
    except OSError as e:
        raise ReportError(f"{out}: cannot read it ({e.strerror}); --only replaces one section of an "
                          "existing report (run scripts/bench_report.sh without --only first)") from None
    text = report_markdown.splice(page, name, loaded["run"], loaded["pieces"])
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results_dir")
    p.add_argument("--docs-dir", default=os.path.join(ROOT, "docs"))
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--results-label", default=None, help="how the report names RESULTS_DIR (default: as given)")
    p.add_argument("--only", choices=sorted(report_markdown.SECTION_HEADINGS),
                   help="replace only this section of the existing BENCHMARKS.md")
    args = p.parse_args(argv)
    try:
        if args.only:
            out = generate_only(args.results_dir, args.docs_dir, args.only)
            print(f"generate_report: replaced section '{args.only}' of {out}")
            return 0
        out = generate(args.results_dir, args.docs_dir, draw=not args.no_plots, results_label=args.results_label)
    except ReportError as e:
        print(f"generate_report: error: {e}", file=sys.stderr)
        return 1
    print(f"generate_report: wrote {out}" + ("" if args.no_plots else f" and its plots in {args.docs_dir}/benchmarks"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
