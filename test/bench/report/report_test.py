#!/usr/bin/env python3
"""Tests of the benchmark report generator (generate_report.py) on the small
fixture run in fixtures/run/: the tables of BENCHMARKS.md and the plots' data
files against figures computed here from the fixture's raw medians (and a few
written out by hand), the provenance lines, section (d) with and without
autotuning, and clear errors for missing or corrupt input (section (h) and
--only: report_elastic_test.py; section (i): report_pipeline_memory_test.py). No benchmark runs and no gnuplot
(--no-plots: data and scripts only).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "run")
GENERATOR = os.path.join(HERE, "generate_report.py")
SIZES = ["4 KiB", "1 MiB"]


def load(name):
    with open(os.path.join(FIXTURE, name)) as f:
        return json.load(f)


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def expected_busbw_gbps(nbytes, seconds, ranks):
    """Independent of the generator: bytes/time x 2(n-1)/n, in GB/s."""
    return nbytes / seconds * 2 * (ranks - 1) / ranks / 1e9


def value(cell):
    """A table cell as a number: '12.3x' -> 12.3, '40.0 us' -> 4e-5 s, '–' -> None."""
    cell = cell.strip()
    if cell == "–":
        return None
    for unit, scale in ((" us", 1e-6), (" ms", 1e-3), (" s", 1.0), ("%", 1.0), ("x", 1.0)):
        if cell.endswith(unit):
            return float(cell[: -len(unit)]) * scale
    return float(cell.split(" (")[0])


def tables(markdown, heading):
    """The markdown tables after `heading` up to the next heading, each a list
    of rows (lists of cells), header row included, separator row left out."""
    lines = markdown.splitlines()
    start = lines.index(heading) + 1
    found, current = [], None
    for line in lines[start:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            if current is None:
                current = []
                found.append(current)
            if not set(line) <= set("|-"):
                current.append([c.strip() for c in line.strip("|").split("|")])
        else:
            current = None
    return found


class GeneratorRun(unittest.TestCase):
    """Copies the fixture into a scratch folder the test may change."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="report_test.")
        self.run_dir = os.path.join(self.tmp, "run")
        shutil.copytree(FIXTURE, self.run_dir)
        self.docs = os.path.join(self.tmp, "docs")
        os.makedirs(self.docs)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def generate(self):
        """(exit code, stderr, markdown or None)."""
        done = subprocess.run([sys.executable, GENERATOR, self.run_dir, "--docs-dir", self.docs, "--no-plots"],
                              capture_output=True, text=True, timeout=60)
        path = os.path.join(self.docs, "BENCHMARKS.md")
        text = read(path) if os.path.exists(path) else None
        return done.returncode, done.stderr, text

    def report(self):
        rc, err, text = self.generate()
        self.assertEqual(rc, 0, err)
        return text

    def assertClose(self, cell, expected, what):
        got = value(cell)
        if expected is None:
            self.assertIsNone(got, f"{what}: expected no figure, got '{cell}'")
            return
        self.assertIsNotNone(got, f"{what}: expected {expected}, got '{cell}'")
        # Cells carry 3 significant digits.
        self.assertAlmostEqual(got, expected, delta=abs(expected) * 6e-3, msg=f"{what}: cell '{cell}'")


class AllreduceSection(GeneratorRun):
    def test_busbw_and_ratios_match_the_raw_medians(self):
        text = self.report()
        for np in (2, 4):
            shm, path = load(f"chorus_bench-np{np}-shm.json"), load(f"chorus_bench-np{np}-mpi.json")
            gloo = {r["bytes"]: r["gloo"]["median_s"] for r in load(f"gloo-np{np}.json")["allreduce"]}
            (rows,) = tables(text, f"### np={np}")
            self.assertEqual(rows[0][:2], ["size", "Chorus shm busbw GB/s"])
            self.assertEqual([r[0] for r in rows[1:]], SIZES)
            for row, s, p in zip(rows[1:], shm["allreduce"], path["allreduce"]):
                n = s["bytes"]
                t = {"shm": s["chorus"]["median_s"], "path": p["chorus"]["median_s"], "mpi": s["mpi"]["median_s"],
                     "mpi2": p["mpi"]["median_s"], "gloo": gloo.get(n)}
                want = [expected_busbw_gbps(n, t["shm"], np), expected_busbw_gbps(n, t["path"], np),
                        expected_busbw_gbps(n, t["mpi"], np), expected_busbw_gbps(n, t["mpi2"], np),
                        expected_busbw_gbps(n, t["gloo"], np) if t["gloo"] else None,
                        s["memcpy_Bps"] / 1e9 if "memcpy_Bps" in s else None,
                        t["mpi"] / t["shm"], t["mpi2"] / t["path"], t["gloo"] / t["shm"] if t["gloo"] else None,
                        expected_busbw_gbps(n, t["shm"], np) * 1e9 / s["memcpy_Bps"] if "memcpy_Bps" in s else None]
                want.append(s["memcpy_warm_Bps"] / 1e9 if "memcpy_warm_Bps" in s else None)
                self.assertEqual(len(row), len(want) + 1)
                for i, (cell, w) in enumerate(zip(row[1:], want)):
                    self.assertClose(cell, w, f"np={np} {row[0]} column '{rows[0][i + 1]}'")

    def test_hand_checked_cells(self):
        text = self.report()
        np2 = tables(text, "### np=2")[0]
        # 4 KiB in 8.192 us at np=2: 0.5 GB/s; MPI 4.096 us: 1 GB/s, so Chorus is half as fast.
        self.assertEqual(np2[1][:2], ["4 KiB", "0.500"])
        self.assertEqual(np2[1][7], "0.500x")
        # 1 MiB at np=4 in 157.2864 us: 1 MiB / t x 1.5 = 10 GB/s; gloo has no 1 MiB figure there.
        np4 = tables(text, "### np=4")[0]
        self.assertEqual(np4[2][:2], ["1 MiB", "10.0"])
        self.assertEqual(np4[2][5], "–")

    def test_memcpy_ceiling_only_where_measured(self):
        text = self.report()
        np4 = text[text.index("### np=4"):text.index("## (b)")]
        self.assertIn("memcpy ceiling is not drawn", np4)
        self.assertNotIn("memcpy ceiling is not drawn", text[text.index("### np=2"):text.index("### np=4")])
        gp2 = read(os.path.join(self.run_dir, "plots", "allreduce-busbw-np2.gp"))
        gp4 = read(os.path.join(self.run_dir, "plots", "allreduce-busbw-np4.gp"))
        self.assertIn("memcpy, one rank (ceiling)", gp2)
        self.assertNotIn("memcpy", gp4.split("plot ", 1)[1])

    def test_plot_data_holds_the_table_figures(self):
        self.report()
        for np in (2, 4):
            shm = load(f"chorus_bench-np{np}-shm.json")
            with open(os.path.join(self.run_dir, "plots", f"allreduce-busbw-np{np}.dat")) as f:
                rows = [line.split() for line in f if not line.startswith("#")]
            self.assertEqual([int(r[0]) for r in rows], [r["bytes"] for r in shm["allreduce"]])
            for r, s in zip(rows, shm["allreduce"]):
                self.assertAlmostEqual(float(r[1]), expected_busbw_gbps(s["bytes"], s["chorus"]["median_s"], np),
                                       delta=1e-5)
        # gloo has no 1 MiB figure at np=4: gnuplot's missing marker.
        self.assertEqual(rows[1][4], "?")


class SmallStepAndLatency(GeneratorRun):
    def test_step_times_and_ratios(self):
        text = self.report()
        heading = next(line for line in text.splitlines() if line.startswith("## (b)"))
        self.assertEqual(heading, "## (b) A step of 200 allreduces of 4 KiB")
        step, latency = tables(text, heading)
        for row, np in zip(step[1:], (2, 4)):
            s = load(f"chorus_bench-np{np}-shm.json")["small_tensors"]
            p = load(f"chorus_bench-np{np}-mpi.json")["small_tensors"]
            g = load(f"gloo-np{np}.json")["small_tensors"]
            times = [s["chorus"], p["chorus"], s["mpi_separate"], s["mpi_fused_with_copies"], g["gloo_async"],
                     g["gloo_separate"]]
            want = [t["median_s"] for t in times] + [
                s["mpi_separate"]["median_s"] / s["chorus"]["median_s"],
                s["mpi_fused_with_copies"]["median_s"] / s["chorus"]["median_s"],
                p["mpi_separate"]["median_s"] / p["chorus"]["median_s"],
                g["gloo_async"]["median_s"] / s["chorus"]["median_s"]]
            self.assertEqual(row[0], str(np))
            for i, (cell, w) in enumerate(zip(row[1:], want)):
                self.assertClose(cell, w, f"np={np} column '{step[0][i + 1]}'")
        # By hand: np=4, MPI's 200 calls take 12 ms against Chorus's 1 ms.
        self.assertEqual(step[2][3], "12.0 ms")
        self.assertEqual(step[2][7], "12.0x")
        self.assertEqual(latency[1], ["2", "Chorus (shared memory)", "40.0 us", "4.00 us", "0.100x", "0.25%",
                                      "1.50%"])
        self.assertEqual(latency[4][:2], ["4", "Chorus (MPI path)"])
        self.assertEqual(latency[4][5:], ["0.50%", "1.20%"])
        # A run from before the background thread was measured alone: no figure, not 0.
        self.assertEqual(latency[2][:2], ["2", "Chorus (MPI path)"])
        self.assertEqual(latency[2][5], "–")


class TrainingSection(GeneratorRun):
    def test_medians_best_and_ratios_per_model_and_np(self):
        text = self.report()
        doc = load("training.json")
        headings = {"ref": "### reference MNIST MLP (784-128-10, 101,770 parameters)",
                    "25m": "### 25M-parameter MLP (784-4096-4096-1024-10, 24,202,250 parameters)"}
        for model, heading in headings.items():
            (rows,) = tables(text, heading)
            results = sorted((r for r in doc["results"] if r["model"] == model), key=lambda r: r["np"])
            self.assertEqual([r[0] for r in rows[1:]], ["1", "2", "4"])
            for row, res in zip(rows[1:], results):
                med, best = res["median"], res["best"]
                for cell, impl in zip(row[1:5], ("ceiling", "sync", "chorus", "ddp")):
                    self.assertClose(cell, med[impl], f"{model} np={res['np']} {impl} median")
                    self.assertClose(cell.split("(")[1].rstrip(")"), best[impl], f"{model} np={res['np']} {impl} best")
                pairs = (("chorus", "ceiling"), ("chorus", "sync"), ("chorus", "ddp"), ("ddp", "ceiling"))
                for cell, (a, b) in zip(row[5:9], pairs):
                    self.assertClose(cell, med[a] / med[b], f"{model} np={res['np']} {a} vs {b}")
                self.assertEqual(row[9], "2")
        # By hand: reference MLP at np=2: 30000 / 40000, 30000 / 36000 and 30000 / 10000.
        ref = tables(text, headings["ref"])[0]
        self.assertEqual(ref[2][5:8], ["0.750x", "0.833x", "3.00x"])
        data = read(os.path.join(self.run_dir, "plots", "training-25m.dat")).split("\n")[1:4]
        self.assertEqual(data, ["1 300 270 290 280", "2 600 540 450 300", "4 600 540 400 240"])


class Provenance(GeneratorRun):
    def test_every_section_names_machine_date_load_and_command(self):
        text = self.report()
        machine = ("Machine: `fixturehost`, 2 cores (Fixture CPU 9000), 8.0 GiB memory, Linux 6.1.0, memcpy of "
                   "64 MiB 6.50 GB/s (one rank alone, at the start of the run).")
        pieces = [json.loads(line) for line in read(os.path.join(FIXTURE, "pieces.jsonl")).splitlines()]
        sections = text.split("\n## ")[1:]
        self.assertEqual([s[:3] for s in sections], ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)", "(g)", "(h)",
                                                        "(i)", "(j)"])
        for section in sections:
            self.assertIn(machine, section)
            self.assertIn("`scripts/bench_report.sh --quick` started 2026-12-01 10:00:00 UTC", section)
        for p in pieces:
            if p["kind"] == "autotune":
                continue
            where = {"chorus_bench": sections[0], "gloo": sections[1], "training": sections[2],
                     "chorus_bench_p2p": sections[4], "pipeline": sections[5], "heartbeat": sections[6],
                     "elastic_recovery": sections[7], "pipeline_memory": sections[8], "python": sections[9]}[p["kind"]]
            self.assertIn(f"{p['started']}, load average {p['load_average']}", where)
            self.assertIn(f"`{p['command']}`", where)
        self.assertIn("busbw** = bytes / time x 2(n-1)/n", text)


class PointToPointSection(GeneratorRun):
    HEADING = "## (e) Point-to-point: one send/recv against raw MPI"

    def test_times_and_ratios_per_size(self):
        [rows] = tables(self.report(), self.HEADING)
        self.assertEqual(rows[0][0], "size")
        data = load("chorus_bench_p2p-np2.json")["pingpong"]
        self.assertEqual([r[0] for r in rows[1:]], ["4 KiB", "4 MiB"])
        for row, d in zip(rows[1:], data):
            c, m, n = (d[k]["median_s"] for k in ("chorus", "mpi_send_recv", "mpi_isend_irecv"))
            for cell, want, what in ((row[1], c, "chorus"), (row[2], m, "mpi"), (row[3], n, "isend"),
                                     (row[4], c / m, "ratio send"), (row[5], c / n, "ratio isend")):
                self.assertClose(cell, want, f"{row[0]} {what}")
        self.assertEqual(rows[1][4].strip(), "1.33x")  # by hand: 4.0 us / 3.0 us

    def test_a_run_without_it_says_so(self):
        lines = read(os.path.join(self.run_dir, "pieces.jsonl")).splitlines()
        write(os.path.join(self.run_dir, "pieces.jsonl"),
              "\n".join(l for l in lines if "chorus_bench_p2p" not in l) + "\n")
        text = self.report()
        self.assertIn("Not measured in this run", text.split(self.HEADING)[1])


class PipelineSection(GeneratorRun):
    def test_rows_name_theory_and_measurement(self):
        text = self.report()
        section = text[text.index("## (f)"):]
        self.assertIn("| gpipe | 2 | 1 | 0.500 | 0.520 | 0.530 | +0.020 | 100 ms |", section)
        self.assertIn("| 1f1b | 4 | 8 | 0.273 | 0.300 | 0.310 | +0.027 | 70.0 ms |", section)
        self.assertIn("S = 4 ran **oversubscribed** on 2 cores.", section)

    def test_a_run_without_it_says_so(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        lines = [l for l in read(path).splitlines() if '"pipeline"' not in l]
        write(path, "\n".join(lines) + "\n")
        text = self.report()
        self.assertIn("## (f) Pipeline bubble\n\n**Not measured in this run**", text)


class HeartbeatSection(GeneratorRun):
    HEADING = "## (g) Heartbeat: what it costs when all is well"

    def test_medians_over_rounds_off_and_on(self):
        [rows] = tables(self.report(), self.HEADING)
        self.assertEqual(rows[0], ["heartbeat", "idle process CPU", "heartbeat thread CPU", "its wake-ups per s",
                                   "4 KiB allreduce latency", "raw MPI_Allreduce"])
        # By hand: medians of [0.001, 0.003] and [8, 10] us; the heartbeat's 2 wake-ups in 10 s.
        self.assertEqual(rows[1], ["off", "0.002% (0.003%)", "–", "–", "9.00 us (6.00 us)", "3.00 us"])
        self.assertEqual(rows[2], ["timeout 30.0 s", "0.002% (0.002%)", "0.0010%", "0.200", "9.00 us (5.00 us)",
                                   "3.00 us"])

    def test_a_run_without_it_says_so(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        write(path, "\n".join(l for l in read(path).splitlines() if '"heartbeat"' not in l) + "\n")
        self.assertIn(self.HEADING + "\n\n**Not measured in this run**", self.report())


class AutotuneSection(GeneratorRun):
    def test_not_available_says_why(self):
        text = self.report()
        section = text[text.index("## (d)"):]
        self.assertIn("**Not available in this run:** fixture: this build has no autotuning.", section)
        self.assertIn("`grep -F CHORUS_AUTOTUNE chorus_train_bench`", section)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "plots", "autotune-score.dat")))

    def add_autotune(self, csv_text):
        results = [{"model": "25m", "layers": "784-4096-4096-1024-10", "np": 2, "steps": 150, "warmup_steps": 3,
                    "median": {"chorus": 400.0, "chorus_autotune": 500.0},
                    "best": {"chorus": 410.0, "chorus_autotune": 520.0},
                    "rounds": {"chorus": [400.0, 410.0, 390.0], "chorus_autotune": [500.0, 520.0, 480.0]}}]
        write(os.path.join(self.run_dir, "autotune.json"),
              json.dumps({"benchmark": "run_training_bench", "rounds": 3, "results": results}))
        os.makedirs(os.path.join(self.run_dir, "autotune-logs"))
        write(os.path.join(self.run_dir, "autotune-logs", "a.csv"), csv_text)
        path = os.path.join(self.run_dir, "pieces.jsonl")
        lines = read(path).splitlines()[:-1]
        lines.append(json.dumps({"kind": "autotune", "np": 2, "file": "autotune.json", "available": True,
                                 "command": "run_training_bench.sh --impls chorus,chorus_autotune",
                                 "started": "2026-12-01 10:09:00 UTC", "load_average": "0.90 0.20 0.30",
                                 "seconds": 60.0, "logs": ["autotune-logs/a.csv"]}))
        write(path, "\n".join(lines) + "\n")

    def test_defaults_against_autotune_with_its_log(self):
        self.add_autotune("sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best\n"
                          "1,sample,67108864,0,shm,1.5e9,1\n2,sample,8388608,1,mpi,1.2e9,0\n")
        text = self.report()
        heading = "## (d) Autotuning"
        result, log = tables(text, heading)
        self.assertEqual(result[1], ["25M-parameter MLP", "2", "400 (410)", "500 (520)", "1.25x", "3"])
        self.assertEqual(log[0][5], "bytes_per_second")
        self.assertEqual(log[2], ["2", "sample", "8388608", "1", "mpi", "1.2e9", "0"])
        self.assertIn("times 150 steps after 3 warm-up steps", " ".join(text.split()))
        self.assertIn("![autotune score](benchmarks/autotune-score.png)", text)
        data = read(os.path.join(self.run_dir, "plots", "autotune-score.dat")).split("\n")[1:3]
        # The log's sample numbers, its bytes/s in GB/s.
        self.assertEqual([[float(x) for x in line.split()] for line in data], [[1, 1.5], [2, 1.2]])

    def test_log_without_samples_is_said_so(self):
        self.add_autotune("sample,kind,bytes_per_second\n")
        text = self.report()
        self.assertIn("a header and no samples", text)
        self.assertNotIn("autotune-score.png", text)


class BadInput(GeneratorRun):
    def assertFails(self, *fragments):
        rc, err, text = self.generate()
        self.assertEqual(rc, 1, err)
        self.assertTrue(err.startswith("generate_report: error: "), err)
        for fragment in fragments:
            self.assertIn(fragment, err)
        self.assertIsNone(text, "no report may be written from bad input")

    def test_missing_run_description(self):
        os.remove(os.path.join(self.run_dir, "run.json"))
        self.assertFails("run.json: no such file", "expected the run description")

    def test_corrupt_result_file(self):
        path = os.path.join(self.run_dir, "chorus_bench-np4-mpi.json")
        text = read(path)
        write(path, text[: len(text) // 2])
        self.assertFails("chorus_bench-np4-mpi.json: not valid JSON (line", "expected chorus_bench --json output")

    def test_missing_result_file(self):
        os.remove(os.path.join(self.run_dir, "gloo-np2.json"))
        self.assertFails("gloo-np2.json: no such file", "gloo_allreduce_bench.py --json output")

    def test_missing_figure_in_a_result(self):
        path = os.path.join(self.run_dir, "chorus_bench-np2-shm.json")
        doc = json.loads(read(path))
        del doc["allreduce"][1]["mpi"]
        write(path, json.dumps(doc))
        self.assertFails("chorus_bench-np2-shm.json: allreduce[1]: missing 'mpi'")

    def test_non_positive_time(self):
        path = os.path.join(self.run_dir, "gloo-np4.json")
        doc = json.loads(read(path))
        doc["small_tensors"]["gloo_async"]["median_s"] = 0
        write(path, json.dumps(doc))
        self.assertFails("gloo-np4.json: small_tensors.gloo_async: 'median_s' should be a positive number")

    def test_incomplete_run(self):
        path = os.path.join(self.run_dir, "pieces.jsonl")
        lines = [line for line in read(path).splitlines(True) if "chorus_bench-np4-mpi" not in line]
        write(path, "".join(lines))
        self.assertFails("lists no chorus_bench result at np=4 with config 'mpi'; the run is incomplete")

    def test_corrupt_pieces_line(self):
        with open(os.path.join(self.run_dir, "pieces.jsonl"), "a") as f:
            f.write("{not json\n")
        with open(os.path.join(self.run_dir, "pieces.jsonl")) as f:
            number = len(f.read().splitlines())
        self.assertFails(f"pieces.jsonl: line {number} is not valid JSON")

    def test_not_a_directory(self):
        self.run_dir = os.path.join(self.tmp, "nowhere")
        self.assertFails("nowhere: not a directory")


if __name__ == "__main__":
    unittest.main(verbosity=2)
