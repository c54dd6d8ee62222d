#!/usr/bin/env python3
"""Tests of section (i) of the benchmark report (report_pipeline_memory.py)
on the fixture run in fixtures/run/: every stage's peak in MiB and in
boundary tensors, each row's highest stage against the smallest M and the
smallest S, a run without the piece, a malformed figure named, and
generate_report.py --only pipeline-memory adding just that section to an
existing page.
"""
import json
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_test import GENERATOR, GeneratorRun, load, read, tables, write  # noqa: E402

MIB = 1 << 20


class PipelineMemorySection(GeneratorRun):
    HEADING = "## (i) Pipeline memory"

    def rows(self, text):
        [rows] = tables(text, self.HEADING)
        return rows

    def test_every_stage_in_mib_and_boundary_tensors(self):
        doc = load("pipeline_memory.json")
        rows = self.rows(self.report())
        self.assertEqual(rows[0], ["schedule", "S", "M", "stage 0", "stage 1", "stage 2", "stage 3",
                                   "highest stage", "vs smallest M", "vs smallest S"])
        self.assertEqual(len(rows) - 1, len(doc["results"]))
        for row, r in zip(rows[1:], doc["results"]):
            self.assertEqual(row[:3], [r["schedule"], str(r["stages"]), str(r["micro_batches"])])
            for s in range(4):
                cell = row[3 + s]
                if s >= r["stages"]:
                    self.assertEqual(cell, "–")
                    continue
                mib, tensors = cell.split(" MiB (")
                self.assertClose(mib, r["stage_peak_bytes"][s] / MIB, f"{row[:3]} stage {s} MiB")
                self.assertClose(tensors.rstrip("B)").strip(), r["stage_peak_bytes"][s] / doc["boundary_bytes"],
                                 f"{row[:3]} stage {s} in B")

    def test_growth_against_smallest_m_and_s(self):
        rows = {tuple(r[:3]): r[7:] for r in self.rows(self.report())[1:]}
        # By hand: GPipe S=2 holds 33 B at M=16 against 17 B at M=8; 1F1B S=4
        # holds 8 B at either M, against 5 B at S=2.
        self.assertEqual(rows[("gpipe", "2", "16")], ["33.0 MiB (33.0 B)", "1.94x (M=8)", "1.00x (S=2)"])
        self.assertEqual(rows[("1f1b", "4", "16")], ["8.00 MiB (8.00 B)", "1.00x (M=8)", "1.60x (S=2)"])
        self.assertEqual(rows[("gpipe", "4", "16")], ["33.0 MiB (33.0 B)", "1.94x (M=8)", "1.00x (S=2)"])

    def test_a_run_without_it_says_so(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        write(path, "\n".join(l for l in read(path).splitlines() if "pipeline_memory" not in l) + "\n")
        self.assertIn(self.HEADING + "\n\n**Not measured in this run**", self.report())

    def test_a_missing_stage_is_named(self):
        doc = load("pipeline_memory.json")
        doc["results"][1]["stage_peak_bytes"].pop()
        write(os.path.join(self.run_dir, "pipeline_memory.json"), json.dumps(doc))
        rc, err, _ = self.generate()
        self.assertEqual(rc, 1)
        self.assertIn("pipeline_memory.json: results[1]: 'stage_peak_bytes' should have one figure per stage (2), "
                      "got 1", err)

    def test_only_adds_that_section(self):
        full = self.report()
        page = os.path.join(self.docs, "BENCHMARKS.md")
        start = full.index(self.HEADING)
        end = full.find("\n## ", start)  # the next section's heading, if any
        write(page, full[:start] + (full[end + 1:] if end >= 0 else ""))
        done = subprocess.run([sys.executable, GENERATOR, self.run_dir, "--docs-dir", self.docs,
                               "--only", "pipeline-memory"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(read(page), full)


if __name__ == "__main__":
    unittest.main(verbosity=2)
