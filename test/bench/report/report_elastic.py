"""Section (h) of BENCHMARKS.md: elastic recovery, from the timings of
test/launcher/elastic_netns_test.sh (chorusrun --elastic running train_mnist
--elastic on 3 network-namespace hosts; one host killed mid-epoch, listed
again later). Every time is shown against the same run's own start-up time
and commit interval, the two costs a user weighs a restart against.
"""
import json

from report_inputs import ReportError, require

DASH = "–"


def check_elastic_recovery(doc, where):
    if doc.get("benchmark") != "elastic_recovery":
        raise ReportError(f"{where}: 'benchmark' should be \"elastic_recovery\", "
                          f"got {json.dumps(doc.get('benchmark'))}")
    for key in ("hosts", "ranks_per_host", "commit_every"):
        if require(doc, key, int, where) <= 0:
            raise ReportError(f"{where}: '{key}' should be a positive integer, got {doc[key]}")
    for key in ("startup_seconds", "commit_interval_seconds", "failure_to_named_seconds",
                "failure_to_training_seconds", "mean_step_seconds"):
        value = require(doc, key, (int, float), where)
        if isinstance(value, bool) or value <= 0:
            raise ReportError(f"{where}: '{key}' should be a positive number of seconds, got {json.dumps(value)}")
    regrow = doc.get("regrow_seconds")
    if regrow is not None and (not isinstance(regrow, (int, float)) or isinstance(regrow, bool) or regrow <= 0):
        raise ReportError(f"{where}: 'regrow_seconds' should be a positive number of seconds or null, "
                          f"got {json.dumps(regrow)}")


def elastic_section(run, pieces, num, duration, table, provenance):
    """The markdown lines of section (h); the formatting helpers come from
    report_markdown (passed in: that module imports this one)."""
    lines = ["## (h) Elastic recovery", ""]
    found = [p for p in pieces if p["kind"] == "elastic_recovery"]
    if not found:
        return lines + ["**Not measured in this run** (its results directory has no elastic_recovery piece; "
                        "`scripts/bench_report.sh --only elastic` measures it).", ""]
    piece = found[0]
    if not piece.get("available", True):
        return lines + [f"**Not available in this run:** {piece['reason']}", ""]
    d = piece["data"]
    startup, interval = d["startup_seconds"], d["commit_interval_seconds"]

    def row(what, seconds):
        if seconds is None:
            return [what, DASH, DASH, DASH]
        return [what, duration(seconds), num(seconds / startup) + "x", num(seconds / interval) + "x"]

    lines += [f"`chorusrun --elastic` running `train_mnist --elastic` (the reference {d.get('model', 'mlp').upper()}, "
              f"`--commit-every {d['commit_every']}`) on {d['hosts']} network-namespace hosts x "
              f"{d['ranks_per_host']} rank of this machine (`test/launcher/elastic_netns_test.sh`): every "
              "process of one host is killed mid-epoch and the discovery script stops listing it; later it "
              "lists it again. Times come from the arrival time of each output line in that one run. "
              "**Start-up** = chorusrun started -> first training step of a fresh job; **commit interval** = "
              f"{d['commit_every']} steps x the mean step ({duration(d['mean_step_seconds'])}), the work a "
              "failure can repeat. Each time is also shown as a multiple of both. The restart mechanism "
              "(a new `mpirun` attempt on the surviving hosts, resuming from the newest commit) is in "
              "docs/DESIGN.md, \"Elastic training\".", ""]
    lines += table(["", "time", "vs start-up", "vs commit interval"], [
        row("start-up of the job", startup),
        row("commit interval", interval),
        row("host killed -> chorusrun names it", d["failure_to_named_seconds"]),
        row(f"host killed -> training again on {d['hosts'] - 1} hosts", d["failure_to_training_seconds"]),
        row(f"host listed again -> training on {d['hosts']} hosts (incl. {d.get('host_cooldown_seconds', DASH)} s "
            f"cooldown, {d.get('discovery_interval_seconds', DASH)} s polling, the next commit)",
            d.get("regrow_seconds")),
    ])
    if "final_test_accuracy" in d:
        lines += ["", f"The job finished on {d.get('final_world_size', DASH)} ranks with test accuracy "
                      f"{d['final_test_accuracy']:.4f}."]
    if run.get("sections"):
        lines += ["", "This section was measured in its own run (`" + run["command"] + "`), not beside the "
                  "other sections of this page: compare its times with its own start-up and commit interval "
                  "(the ratios), not with figures elsewhere on the page."]
    return lines + provenance(run, [piece], ["elastic recovery, 3 hosts"])
