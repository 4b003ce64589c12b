#!/usr/bin/python3
"""bench/dist_trace.py (the all-reduce time hidden behind compute) on a hand-made trace in the
communication track's format, and dist_report.py's reading of kiln train's epoch lines.
ctest: dist_bench_trace."""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_report  # noqa: E402
import dist_trace  # noqa: E402

EXAMPLE = os.path.join(HERE, "dist_trace_example.json")


def write_trace(directory, name, events):
    path = os.path.join(directory, name)
    with open(path, "w") as out:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, out)
    return path


class HiddenFraction(unittest.TestCase):
    def test_example(self):
        # Bucket 0 [120, 220) us: kernels cover [120, 150) (a copy and another process's
        # kernel run beside it and hide nothing); bucket 1 [380, 480): kernels cover [380, 420)
        # (two that overlap, counted once) and a launch-graph replay [440, 460).
        overlap = dist_trace.comm_overlap(dist_trace.load_events(EXAMPLE))
        self.assertEqual(overlap.collectives, 2)
        self.assertAlmostEqual(overlap.comm_us, 200.0)
        self.assertAlmostEqual(overlap.hidden_us, 30.0 + 40.0 + 20.0)
        self.assertAlmostEqual(overlap.hidden_fraction, 0.45)
        self.assertEqual(overlap.bytes, 4096 + 1024)

    def test_per_bucket(self):
        # Bucket 0 is mostly exposed (30 of 100 us hidden), bucket 1 mostly hidden (60 of 100).
        buckets = dist_trace.summarize([EXAMPLE])["buckets"]
        self.assertEqual(sorted(buckets), ["all_reduce bucket 0", "all_reduce bucket 1"])
        self.assertAlmostEqual(buckets["all_reduce bucket 0"]["hidden"], 0.3)
        self.assertAlmostEqual(buckets["all_reduce bucket 1"]["hidden"], 0.6)
        self.assertEqual(buckets["all_reduce bucket 1"]["bytes"], 1024)

    def test_report_cell(self):
        cell = dist_report.hidden_text(dist_trace.summarize([EXAMPLE]))
        self.assertEqual(cell, "45% of 0.2 ms (2 all-reduces); least hidden: bucket 0 at 30%")
        self.assertEqual(dist_report.hidden_text({"hidden": None,
                                                  "reason": dist_trace.NO_COMM_TRACK}),
                         "n/a (no communication track in the trace)")

    def test_ranks_sum(self):
        summary = dist_trace.summarize([EXAMPLE, EXAMPLE])
        self.assertAlmostEqual(summary["hidden"], 0.45)
        self.assertEqual(summary["collectives"], 4)
        self.assertAlmostEqual(summary["comm_ms"], 0.4)
        self.assertEqual(summary["buckets"]["all_reduce bucket 0"]["collectives"], 2)

    def test_without_communication_track(self):
        # Today's traces: kernels and copies, no comm events. Not 0% hidden: no answer.
        events = [e for e in dist_trace.load_events(EXAMPLE) if e.get("cat") != "comm"]
        self.assertIsNone(dist_trace.comm_overlap(events))
        with tempfile.TemporaryDirectory() as directory:
            summary = dist_trace.summarize([write_trace(directory, "t.json", events)])
        self.assertIsNone(summary["hidden"])
        self.assertEqual(summary["reason"], "no communication track in the trace")
        self.assertEqual(dist_trace.summarize([])["reason"], "no trace was written")

    def test_all_exposed_and_all_hidden(self):
        kernel = {"cat": "kernel", "ph": "X", "pid": 1, "tid": 1, "name": "k"}
        comm = {"cat": "comm", "ph": "X", "pid": 1, "tid": 3, "name": "all_reduce bucket 0",
                "args": {"bytes": 8, "elements": 2}}
        exposed = dist_trace.comm_overlap([{**kernel, "ts": 0, "dur": 10},
                                           {**comm, "ts": 10, "dur": 5}])
        self.assertEqual(exposed.hidden_fraction, 0.0)
        hidden = dist_trace.comm_overlap([{**kernel, "ts": 0, "dur": 10},
                                          {**kernel, "ts": 10, "dur": 10},
                                          {**comm, "ts": 5, "dur": 10}])
        self.assertEqual(hidden.hidden_fraction, 1.0)

    def test_bad_trace_names_the_file(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "broken.json")
            with open(path, "w") as out:
                out.write('{"traceEvents": [')
            with self.assertRaisesRegex(dist_trace.TraceError, "broken.json"):
                dist_trace.summarize([path])
            no_ts = write_trace(directory, "no-ts.json",
                                [{"cat": "comm", "ph": "X", "name": "all_reduce bucket 0"}])
            with self.assertRaisesRegex(dist_trace.TraceError, "no-ts.json: event 'all_reduce"):
                dist_trace.summarize([no_ts])


class EpochLines(unittest.TestCase):
    LOG = ("recipe:    mlp\n"
           "epoch 1/3 [========================] 20/20 loss 1.2311 acc 56.80% 33878 samples/s"
           " | test loss 0.9725 acc 62.50%\n"
           "\repoch 2/3 [============            ] 10/20 loss 0.7 acc 70.00% 99999 samples/s"
           "\repoch 2/3 [========================] 20/20 loss 0.6620 acc 76.09% 60519 samples/s"
           " | test loss 0.8830 acc 70.31%\n"
           "epoch 3/3 [========================] 20/20 loss 0.5104 loss/word 5.123 51930.5"
           " samples/s | test loss 0.7942 acc 68.75%\n")

    def test_epoch_ends_only(self):
        self.assertEqual(dist_report.epoch_throughputs(self.LOG),
                         {1: 33878.0, 2: 60519.0, 3: 51930.5})

    def test_median_after_warmup(self):
        with tempfile.TemporaryDirectory() as directory:
            log = os.path.join(directory, "run.log")
            with open(log, "w") as out:
                out.write(self.LOG)
            measured = dist_report.measure({"log": log, "status": 0}, warmup=1)
            self.assertEqual(measured["windows"], [60519.0, 51930.5])
            self.assertAlmostEqual(measured["median"], (60519.0 + 51930.5) / 2)
            failed = dist_report.measure({"log": log, "status": 1}, warmup=1)
            self.assertIn("failed (exit 1)", failed["error"])


if __name__ == "__main__":
    unittest.main()
