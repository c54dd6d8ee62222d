#!/usr/bin/python3
"""Compares a run's --summary-json of examples/python/train_mnist.py with
mnist_reference.py's: every rank's parameters bit-identical to each other and
to the single-process reference, the same test loss and accuracy, and the
accuracy at least the bound.
    check_mnist_run.py RUN_JSON REFERENCE_JSON NP MIN_ACCURACY
"""
import json
import sys

run = json.load(open(sys.argv[1]))
reference = json.load(open(sys.argv[2]))
np, min_accuracy = int(sys.argv[3]), float(sys.argv[4])
failures = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        failures.append(what)


digests = run["parameter_digests"]
check(run["world_size"] == np, "world size %s == %d" % (run["world_size"], np))
check(len(digests) == np and len(set(digests)) == 1, "all %d ranks hold identical parameters %s" % (np, digests))
check(digests == reference["parameter_digests"],
      "digests %s == the single-process reference's %s" % (digests, reference["parameter_digests"]))
for key in ("final_test_loss", "final_test_accuracy"):
    check(run[key] == reference[key], "%s %r == the reference's %r" % (key, run[key], reference[key]))
check(run["final_test_accuracy"] >= min_accuracy,
      "test accuracy %.4f >= %.2f" % (run["final_test_accuracy"], min_accuracy))
sys.exit(1 if failures else 0)
