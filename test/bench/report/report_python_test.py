#!/usr/bin/env python3
"""Tests of section (j) of the benchmark report (report_python.py) on the
fixture run in fixtures/run/: medians and per-round ratios of the Python
binding against its sync bound, DDP and the C++ front end, the latency
ratio per round, a run without the piece, a malformed figure named, and
generate_report.py --only python adding just that section to a page.
"""
import json
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_test import GENERATOR, GeneratorRun, load, read, tables, write  # noqa: E402


class PythonSection(GeneratorRun):
    HEADING = "## (j) Python: chorus.torch"

    def test_medians_and_ratios_per_round(self):
        training, latency = tables(self.report(), self.HEADING)
        self.assertEqual(training[0], ["model", "np", "Python", "sync bound", "DDP (gloo)", "C++ front end",
                                       "Python vs sync bound (per round)", "Python vs DDP (per round)",
                                       "Python vs C++ (per round)", "CPU ms per step, Python / sync bound"])
        # By hand from fixtures/run/python.json: ref 60000/64000, 58000/64000,
        # 62000/62000; 60000/30000, 58000/29000, 62000/31000; /80000, /80000, /77500.
        self.assertEqual(training[1], ["ref (101,770 parameters)", "2", "60000", "64000", "30000", "80000",
                                       "0.938x / 0.906x / 1.00x", "2.00x / 2.00x / 2.00x",
                                       "0.750x / 0.725x / 0.800x", "1.50 / 1.20"])
        self.assertEqual(training[2][:6], ["25m (24,202,250 parameters)", "2", "800", "820", "560", "900"])
        self.assertEqual(training[2][9], "600 / 560")
        self.assertEqual(latency, [["round", "Python", "C++ API", "Python vs C++"],
                                   ["1", "12.0 us", "10.0 us", "1.20x"], ["2", "11.0 us", "10.0 us", "1.10x"],
                                   ["3", "13.0 us", "10.0 us", "1.30x"]])

    def test_a_run_without_it_says_so(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        write(path, "\n".join(l for l in read(path).splitlines() if '"kind": "python"' not in l) + "\n")
        self.assertIn(self.HEADING + "\n\n**Not measured in this run**", self.report())

    def test_a_missing_figure_is_named(self):
        doc = load("python.json")
        del doc["training"][0]["rounds"]["ddp"]
        write(os.path.join(self.run_dir, "python.json"), json.dumps(doc))
        rc, err, _ = self.generate()
        self.assertEqual(rc, 1)
        self.assertIn("python.json: training[0]: 'rounds' should hold positive samples/s per round for 'ddp', "
                      "got null", err)

    def test_only_adds_that_section(self):
        full = self.report()
        page = os.path.join(self.docs, "BENCHMARKS.md")
        write(page, full[:full.index(self.HEADING)])
        done = subprocess.run([sys.executable, GENERATOR, self.run_dir, "--docs-dir", self.docs,
                               "--only", "python"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(read(page), full)


if __name__ == "__main__":
    unittest.main(verbosity=2)
