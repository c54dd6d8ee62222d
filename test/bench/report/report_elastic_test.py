#!/usr/bin/env python3
"""Tests of section (h) of the benchmark report (report_elastic.py) on the
fixture run in fixtures/run/: the times and their ratios against start-up and
commit interval, a run without the piece, a bad time named, and
generate_report.py --only elastic replacing or inserting just that section of
an existing page.
"""
import json
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_test import GENERATOR, GeneratorRun, load, read, tables, write  # noqa: E402


class ElasticSection(GeneratorRun):
    HEADING = "## (h) Elastic recovery"

    def rows(self, text):
        return {row[0]: row[1:] for row in tables(text, self.HEADING)[0][1:]}

    def test_times_against_start_up_and_commit_interval(self):
        doc = load("elastic_recovery.json")
        rows = self.rows(self.report())
        startup, interval = doc["startup_seconds"], doc["commit_interval_seconds"]
        for label, key in (("start-up of the job", "startup_seconds"), ("commit interval", "commit_interval_seconds"),
                           ("host killed -> chorusrun names it", "failure_to_named_seconds"),
                           ("host killed -> training again on 2 hosts", "failure_to_training_seconds")):
            seconds = doc[key]
            self.assertClose(rows[label][0], seconds, label)
            self.assertClose(rows[label][1], seconds / startup, label + " vs start-up")
            self.assertClose(rows[label][2], seconds / interval, label + " vs commit interval")
        regrow = [cells for label, cells in rows.items() if label.startswith("host listed again")][0]
        self.assertEqual(regrow, ["7.00 s", "2.80x", "87.5x"])  # by hand: 7 / 2.5, 7 / 0.08
        self.assertEqual(rows["host killed -> training again on 2 hosts"], ["3.75 s", "1.50x", "46.9x"])

    def test_a_run_without_it_says_so(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        write(path, "\n".join(l for l in read(path).splitlines() if "elastic_recovery" not in l) + "\n")
        self.assertIn(self.HEADING + "\n\n**Not measured in this run**", self.report())

    def test_a_bad_time_is_named(self):
        doc = load("elastic_recovery.json")
        doc["failure_to_training_seconds"] = -1
        write(os.path.join(self.run_dir, "elastic_recovery.json"), json.dumps(doc))
        rc, err, text = self.generate()
        self.assertEqual(rc, 1)
        self.assertIn("elastic_recovery.json: 'failure_to_training_seconds' should be a positive number", err)

    def only(self):
        return subprocess.run([sys.executable, GENERATOR, self.run_dir, "--docs-dir", self.docs, "--only", "elastic"],
                              capture_output=True, text=True, timeout=60)

    def test_only_replaces_or_inserts_that_section(self):
        full = self.report()
        page = os.path.join(self.docs, "BENCHMARKS.md")
        # A page without (h), as generated before it existed: inserted before (i).
        write(page, full[:full.index(self.HEADING)] + full[full.index("## (i)"):])
        done = self.only()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(read(page), full)
        # An older (h): replaced, everything else kept byte for byte.
        write(page, full.replace("3.75 s", "9.99 s"))
        self.assertEqual(self.only().returncode, 0)
        self.assertEqual(read(page), full)
        # (h) in the middle of a page: the sections after it are kept.
        write(page, full + "\n## (h) Later\n\ntext\n")
        self.assertEqual(self.only().returncode, 0)
        self.assertEqual(read(page), full + "\n## (h) Later\n\ntext\n")

    def test_only_needs_an_existing_page(self):
        done = self.only()
        self.assertEqual(done.returncode, 1)
        self.assertIn("--only replaces one section of an existing report", done.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
