# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks say of their goals (issue 23 item 6): bench/run names each goal by what it
measures, never by an issue number a clone cannot look up, and says first, in its report and at the
top of its text, that the goals are targets, not test results. bench/run's own goals() is run on
figures made up here (no benchmark runs); the scripts' text is read for references to documents a
clone does not carry."""

import glob
import importlib.machinery
import importlib.util
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
# What no goal or benchmark text may lean on: an issue's number, or the project's SPEC.md.
NOT_IN_A_CLONE = re.compile(r"\b[Ii]ssues? #?\d+|#\d{1,3}\b|\bSPEC\b|§")


def bench_run():
    """bench/run as a module (its main() is not run)."""
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(BENCH, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def figures(rate, mbps, **extra):
    """One target's row, as bench/run's summarize() makes it."""
    row = {"tunnels_per_s": rate, "p50_ms": 0.2, "p99_ms": 1.0, "http_req_per_s": rate, "kib_per_idle_tunnel": None,
           "idle_held_min": None, "start_ms": 1.0, "rss_after_start_kib": None, "rss_anon_after_start_kib": None,
           "stream": {k: {"mbps": mbps, "cpu_ms_per_gb": 100} for k in ("up-1", "up-4", "down-1", "down-4")}}
    row.update(extra)
    return row


class BenchWordsTest(unittest.TestCase):

    def test_every_goal_is_named_by_what_it_measures(self):
        bench = bench_run()
        targets = [{"name": "direct", "label": "direct", "peer": None, "reference": False},
                   {"name": "relay-rw", "label": "relay-rw", "peer": "relay-rw", "reference": True},
                   {"name": "microsocks-socks5", "label": "microsocks (socks5)", "peer": "microsocks",
                    "reference": False},
                   {"name": "boxproxy-socks5", "label": "boxproxy (socks5)", "peer": "boxproxy", "reference": False},
                   {"name": "boxproxy-unconfined-socks5", "label": "boxproxy --no-confine (socks5)",
                    "peer": "boxproxy-unconfined", "reference": False}]
        ours = dict(kib_per_idle_tunnel=3.0, idle_held_min=10000, rss_after_start_kib=1500,
                    rss_anon_after_start_kib=300)
        rows = {"direct": figures(1000, 2000), "relay-rw": figures(900, 1900), "microsocks-socks5": figures(500, 900),
                "boxproxy-socks5": figures(880, 1800, **ours), "boxproxy-unconfined-socks5": figures(890, 1810, **ours)}
        lines = bench.goals(targets, rows, 10000)
        self.assertEqual([line[:2] for line in lines], ["- "] * len(lines), lines)
        # Each goal's name is its words up to its bound, figures or verdict.
        self.assertEqual({re.split(r" [<>]=|,|:| \(", line[2:])[0] for line in lines},
                         {"throughput up", "throughput down", "tunnels/s", "setup p99", "plain HTTP req/s", "memory",
                          "start", "confinement", "capacity"}, lines)
        for line in lines:
            self.assertIsNone(NOT_IN_A_CLONE.search(line), line)

    def test_it_says_first_that_they_are_targets(self):
        bench = bench_run()
        self.assertIn("not test results", bench.TARGETS_NOTE)
        self.assertIn("targets, not test results", bench.__doc__.split("\n\n")[0], "the first paragraph says it")
        with open(os.path.join(BENCH, "run")) as f:
            source = f.read()
        # The report's first words, and the first line on standard error of a run that measures.
        self.assertIn('print(TARGETS_NOTE + "\\n\\n" + header', source)
        self.assertIn("if not args.calibrate:\n        log(TARGETS_NOTE)", source)

    def test_no_benchmark_leans_on_a_document_a_clone_lacks(self):
        scripts = [os.path.join(BENCH, "run"), os.path.join(BENCH, "inspect"), os.path.join(BENCH, "density"),
                   *glob.glob(os.path.join(BENCH, "*", "run")), *glob.glob(os.path.join(BENCH, "**", "*.cc"),
                                                                          recursive=True)]
        for path in scripts:
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    with self.subTest(path=os.path.relpath(path, ROOT), line=number):
                        self.assertIsNone(NOT_IN_A_CLONE.search(line), line)


if __name__ == "__main__":
    unittest.main()
