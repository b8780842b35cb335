#!/usr/bin/env python3
"""Tests of bench/e2e_common.py, the shared part of the end-to-end benchmarks:
how runs are launched, how the drop-in's statistics line is read, and how
rounds are summarised (medians, p99, bit-identity, served fraction). No
torch needed: the summaries are made up here.

Usage: e2e_common_test.py BENCH_DIR
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench"))
import e2e_common as c  # noqa: E402

LINE = ("memplan replay: threads {t}, iterations 9, profiled 100, served {served}, unplanned 3, fallback 4, "
        "deviations 0, plans 1, reprofiles 0, plan failures 0, invalid frees 0, slab bytes 4096, "
        "plan stall 12.500 ms (longest {stall} ms), plans held 2, variants 5, growths 0, arena 4096 B, "
        "shape loads 1..2 B, plan bytes 4096, evictions 1, switches 0, served fraction 0.250\n")


def summary(sha, latencies, served=None, requests=None, faults=0.0, rss_kib=1024, stats=None, pooled=None):
    s = {"output_sha256": sha, "latencies_ms": latencies, "cpu_ms": latencies, "minor_faults_per_pass": faults,
         "peak_rss_kib": rss_kib, "memplan_served_after_warmup": served, "memplan_requests_after_warmup": requests,
         "memplan_pooled_after_warmup": pooled}
    if stats:
        s["stats"] = stats
    return s


class StatsLine(unittest.TestCase):
    def test_reads_every_field_of_the_last_line(self):
        stderr = LINE.format(t=1, served=7, stall="1.000") + "other output\n" + LINE.format(t=3, served=42,
                                                                                             stall="33.250")
        stats = c.parse_stats(stderr)
        self.assertEqual(stats["served"], 42)
        self.assertEqual(stats["profiled"], 100)
        self.assertEqual(stats["fallback"], 4)
        self.assertEqual(stats["longest_stall_ms"], 33.25)
        self.assertEqual(stats["plans_held"], 2)
        self.assertEqual(stats["variants"], 5)
        self.assertEqual(stats["evictions"], 1)
        self.assertEqual(stats["served_fraction"], 0.25)

    def test_no_line_is_none(self):
        self.assertIsNone(c.parse_stats("Traceback ...\n"))

    def test_an_older_line_gives_the_counters_it_has(self):
        stats = c.parse_stats("memplan replay: threads 1, iterations 2, profiled 3, served 4, unplanned 5, "
                              "fallback 6\n")
        self.assertEqual(stats, {"profiled": 3, "served": 4, "unplanned": 5, "fallback": 6})


class Commands(unittest.TestCase):
    def test_each_allocator_runs_its_way(self):
        argv = ["python3", "x.py"]
        preloads = {"tcmalloc": "/lib/libtcmalloc.so.4"}
        self.assertEqual(c.command_for("glibc", "memplan", preloads, argv), (argv, {}))
        self.assertEqual(c.command_for("tcmalloc", "memplan", preloads, argv),
                         (argv, {"LD_PRELOAD": "/lib/libtcmalloc.so.4"}))
        self.assertEqual(c.command_for("memplan", "/b/memplan", preloads, argv),
                         (["/b/memplan", "run", "--", *argv], {"MEMPLAN_STATS": "1"}))
        self.assertEqual(c.command_for(c.KEYED, "/b/memplan", preloads, argv),
                         (["/b/memplan", "run", "--", *argv, "--keyed"], {"MEMPLAN_STATS": "1"}))
        self.assertEqual(c.command_for("memplan+MIN_PLANNED_SIZE=4096", "/b/memplan", preloads, argv)[1],
                         {"MEMPLAN_STATS": "1", "MEMPLAN_MIN_PLANNED_SIZE": "4096"})

    def test_unknown_allocator_is_refused_and_glibc_comes_first(self):
        with self.assertRaises(SystemExit):
            c.resolve_allocators("glibc,hoard", "/bin/true")
        allocators, _ = c.resolve_allocators("memplan,glibc", "/bin/true")
        self.assertEqual(allocators, ["glibc", "memplan"])


class Rounds(unittest.TestCase):
    def test_order_rotates_each_round_and_skipped_pairs_are_left_out(self):
        calls = []

        def run(config, allocator):
            calls.append((config, allocator))
            return None if allocator == "c" and config == "y" else {"median_ms": 1.0}

        runs, _ = c.run_interleaved(["x", "y"], ["a", "b", "c"], run, rounds=2)
        self.assertEqual(calls[:3], [("x", "a"), ("x", "b"), ("x", "c")])
        self.assertEqual(calls[6:9], [("x", "b"), ("x", "c"), ("x", "a")])
        self.assertEqual(len(runs[("x", "a")]), 2)
        self.assertNotIn(("y", "c"), runs)


class Summaries(unittest.TestCase):
    def test_nearest_rank_percentile_is_a_measured_value(self):
        self.assertEqual(c.percentile(list(range(1, 101)), 99), 99)
        self.assertEqual(c.percentile([5, 1, 3], 99), 5)
        self.assertEqual(c.percentile([2, 1], 50), 1)
        self.assertIsNone(c.percentile([], 99))

    def test_median_p99_faults_rss_over_rounds(self):
        config = ("w", 1)
        runs = {(config, "glibc"): [summary("a", [1.0, 2.0, 9.0], faults=4, rss_kib=2048),
                                    summary("a", [3.0, 4.0, 5.0], faults=2, rss_kib=4096)]}
        s = c.summarize(runs, config, ["glibc"])["glibc"]
        self.assertEqual(s["median"], 3.5)
        self.assertEqual(s["p99"], 9.0)
        self.assertEqual(s["faults"], 3)
        self.assertEqual(s["rss_mib"], 4.0)
        self.assertTrue(s["identical"])

    def test_one_differing_round_breaks_bit_identity(self):
        config = ("w", 1)
        runs = {(config, "glibc"): [summary("a", [1.0]), summary("a", [1.0])],
                (config, "memplan"): [summary("a", [1.0]), summary("b", [1.0])],
                (config, "jemalloc"): [summary("a", [1.0]), {"error": "exit 1"}]}
        s = c.summarize(runs, config, ["glibc", "memplan", "jemalloc"])
        self.assertFalse(s["memplan"]["identical"])
        self.assertFalse(s["jemalloc"]["identical"])  # a failed round is not identical

    def test_served_after_warmup_adds_the_rounds_up(self):
        config = ("w", 1)
        stats_a = c.parse_stats(LINE.format(t=1, served=1, stall="5.000"))
        stats_b = c.parse_stats(LINE.format(t=1, served=1, stall="40.000"))
        runs = {(config, "glibc"): [summary("a", [1.0])],
                (config, "memplan"): [summary("a", [1.0], served=90, requests=100, stats=stats_a),
                                      summary("a", [1.0], served=0, requests=100, stats=stats_b)]}
        s = c.summarize(runs, config, ["glibc", "memplan"])["memplan"]
        self.assertAlmostEqual(s["served_after_warmup"], 0.45)
        self.assertNotIn("pooled_after_warmup", s)  # a drop-in without pools reports none
        self.assertEqual(s["longest_stall_ms"], 40.0)  # the largest over rounds, not a median

    def test_pooled_after_warmup_is_a_share_of_all_requests(self):
        config = ("w", 1)
        runs = {(config, "glibc"): [summary("a", [1.0])],
                (config, "memplan"): [summary("a", [1.0], served=10, requests=100, pooled=80),
                                      summary("a", [1.0], served=30, requests=300, pooled=210)]}
        s = c.summarize(runs, config, ["glibc", "memplan"])["memplan"]
        self.assertAlmostEqual(s["served_after_warmup"], 0.1)
        self.assertAlmostEqual(s["pooled_after_warmup"], 0.725)

    def test_saved_runs_load_back_in_order(self):
        runs = {(("cnn:resnet18", 1), "memplan"): [summary("a", [1.0])],
                (("cnn:resnet18", 1), "glibc"): [summary("a", [2.0])],
                (("transformer", 2), "glibc"): [summary("b", [3.0])]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "runs.json")
            c.save_runs(path, runs)
            configs, loaded, allocators = c.load_runs(path)
        self.assertEqual(configs, [("cnn:resnet18", 1), ("transformer", 2)])
        self.assertEqual(allocators, ["glibc", "memplan"])
        self.assertEqual(loaded, runs)


if __name__ == "__main__":
    unittest.main(verbosity=2)
