#!/usr/bin/env python3
"""Independent check of a tune_mnist ASHA search's JSON log and printed output.

Usage: check_tune_log.py <log.json> <output.txt> <trials> <R> <eta> <validation> <groups> <checkpoint-dir>

Re-derives from the log alone, without the library: ASHA's rung budgets; that
every trial's rungs chain (budgets, previous budgets, units when continuing
from a checkpoint); that each promotion was allowed by ASHA's rule at the
moment it was made (the trial's result in the top floor(n/eta) of its rung's
results recorded so far, replaying the events); that metrics are accuracies
on the validation images (multiples of 1/validation); that the events agree
with the trials; and that the printed table, compute figure and best trial
agree with the log. Prints the first problem and exits 1, or "ok".
"""
import json
import math
import os
import re
import sys


def fail(why):
    print("check_tune_log: FAILED: " + why)
    sys.exit(1)


def main():
    log_path, out_path = sys.argv[1], sys.argv[2]
    trials, R, eta, validation, groups = (int(a) for a in sys.argv[3:8])
    checkpoints = sys.argv[8]
    log = json.load(open(log_path))
    out = open(out_path).read()
    if log.get("format") != "chorus-tune-state" or log.get("version") != 1:
        fail("not a version 1 state file")
    search = log["search"]
    if search["scheduler"] != "asha" or search["max_budget"] != R or search["groups"] != groups:
        fail("header: %s" % search)

    # ASHA's rungs from r = 1: r eta^k below R, then R.
    budgets, b = [], 1
    while b < R:
        budgets.append(b)
        b *= eta
    budgets.append(R)

    space = {p["name"]: p for p in search["space"]}
    recs = log["trials"]
    if [t["id"] for t in recs] != list(range(trials)):
        fail("trial ids %s, expected 0..%d" % ([t["id"] for t in recs], trials - 1))
    total_units = 0
    for t in recs:
        name = "trial %d" % t["id"]
        c = t["config"]
        if not (space["lr"]["low"] <= c["lr"] <= space["lr"]["high"]):
            fail(name + ": lr out of range")
        for p in ("batch_size", "hidden"):
            if c[p] not in space[p]["choices"]:
                fail(name + ": %s %s not a choice" % (p, c[p]))
        rungs = t["rungs"]
        if not rungs:
            fail(name + " has no rung")
        prev = 0
        for k, r in enumerate(rungs):
            where = "%s rung %d" % (name, k)
            if r["rung"] != k or r["budget"] != budgets[k] or r["previous_budget"] != prev:
                fail(where + ": rung/budget/previous %s, expected %d/%d/%d" %
                     ((r["rung"], r["budget"], r["previous_budget"]), k, budgets[k], prev))
            if r["state"] != "done" or r["attempts"] != 1:
                fail(where + ": state %s attempts %s" % (r["state"], r["attempts"]))
            # Continued from its previous rung's checkpoint: only the new epochs.
            if r["resource_used"] != r["budget"] - prev:
                fail(where + ": used %d units, expected %d" % (r["resource_used"], r["budget"] - prev))
            if not (0 <= r["group"] < groups) or not (0 < r["start"] <= r["end"]):
                fail(where + ": group or times %s" % r)
            correct = r["metric"] * validation
            if not (0 <= r["metric"] <= 1) or abs(correct - round(correct)) > 1e-6:
                fail(where + ": metric %r is not an accuracy on %d images" % (r["metric"], validation))
            prev = r["budget"]
        last = len(rungs) - 1
        want_state = "completed" if budgets[last] == R else "stopped"
        if t["state"] != want_state:
            fail(name + ": state %s, expected %s" % (t["state"], want_state))
        used = sum(r["resource_used"] for r in rungs)
        if t["budget_used"] != used:
            fail(name + ": budget_used %d, rungs sum to %d" % (t["budget_used"], used))
        total_units += used
        ckpt = os.path.join(checkpoints, "trial-%d-epoch-%d.pt" % (t["id"], budgets[last]))
        if not os.path.exists(ckpt):
            fail(name + ": no checkpoint " + ckpt)

    # Replay the events: every job's rung matches a trial's rung, in order,
    # and every promotion is allowed by ASHA at that moment.
    results = {}  # rung -> {trial: metric}
    promoted = {}  # rung -> set of trials promoted out of it
    seen_jobs = set()
    for e in log["events"]:
        kind, trial, rung = e[0], e[1], e[2]
        if kind == "job":
            if (trial, rung) in seen_jobs or rung >= len(recs[trial]["rungs"]):
                fail("event %s: repeated or unknown job" % e)
            seen_jobs.add((trial, rung))
            if rung > 0:
                below = results.get(rung - 1, {})
                ranked = sorted(below, key=lambda t: (-below[t], t))
                top = ranked[: len(ranked) // eta]
                if trial not in top or trial in promoted.get(rung - 1, set()):
                    fail("event %s: trial %d was not in the top %d of rung %d (%s)" %
                         (e, trial, len(ranked) // eta, rung - 1, ranked))
                promoted.setdefault(rung - 1, set()).add(trial)
        elif kind == "result":
            if (trial, rung) not in seen_jobs or e[3] != recs[trial]["rungs"][rung]["metric"]:
                fail("event %s does not match the trial's rung" % e)
            results.setdefault(rung, {})[trial] = e[3]
        else:
            fail("event %s: no trial was to fail" % e)
    if len(seen_jobs) != sum(len(t["rungs"]) for t in recs):
        fail("%d job events for %d rungs" % (len(seen_jobs), sum(len(t["rungs"]) for t in recs)))

    # The printout: compute against the grid, the best trial, the table.
    m = re.search(r"compute: (\d+) epochs trained; a grid of these (\d+) configurations at the full budget "
                  r"\((\d+) epochs each\) is (\d+) epochs: ([\d.]+)%", out)
    if not m:
        fail("no compute line in the output")
    if [int(x) for x in m.groups()[:4]] != [total_units, trials, R, trials * R]:
        fail("compute line %s, expected %d units, %d x %d" % (m.group(0), total_units, trials, R))
    if abs(float(m.group(5)) - 100.0 * total_units / (trials * R)) > 0.051:
        fail("compute percentage " + m.group(5))
    best = sorted(recs, key=lambda t: (-t["rungs"][-1]["budget"], -t["rungs"][-1]["metric"], t["id"]))[0]
    m = re.search(r"best: trial (\d+) \(.*\) after (\d+) epochs: validation accuracy ([\d.]+), test accuracy ([\d.]+)", out)
    if not m:
        fail("no best line in the output")
    if int(m.group(1)) != best["id"] or int(m.group(2)) != best["rungs"][-1]["budget"]:
        fail("best line %s, expected trial %d" % (m.group(0), best["id"]))
    if not 0 < float(m.group(4)) <= 1:
        fail("test accuracy " + m.group(4))
    rows = re.findall(r"^(\d+)\s+(\d+)\s+[\d.e-]+\s+(\d+)\s+(\d+)\s+(completed|stopped)", out, re.M)
    if len(rows) != trials or int(rows[0][1]) != best["id"]:
        fail("summary table: %d rows, first %s; expected %d rows, trial %d first" %
             (len(rows), rows[0] if rows else None, trials, best["id"]))
    print("check_tune_log: ok: %d trials, %d jobs, %d units (%.1f%% of the grid), best trial %d" %
          (trials, len(seen_jobs), total_units, 100.0 * total_units / (trials * R), best["id"]))


main()
