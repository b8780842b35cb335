"""The GPU check's parts that decide what its table says (bench/gpu/): the
bit-for-bit comparison, the served fraction, the statistics line of
libmemplan_cuda_alloc.so, the nearest-rank percentile and the trimming of a
snapshot to the size a GPU machine gives back. The dry run
(scripts.gpu_check_dry_run) runs the rest end to end on the CPU."""

import os
import pickle
import sys

SOURCE = os.environ.get("MEMPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "bench", "gpu"))

import gpu_check  # noqa: E402
import report  # noqa: E402
import run_one  # noqa: E402


def row(workload, allocator, values, run="main", reserved=None):
    return {"workload": workload, "allocator": allocator, "run": run, "status": "ok", "values": values,
            "peak_reserved_bytes": reserved}


def test_identical_losses_compare_identical_and_a_difference_names_its_step():
    rows = report.derive([row("lm", "default", ["0x1p+0", "0x1p-1"], reserved=400),
                          row("lm", "async", ["0x1p+0", "0x1p-1"], reserved=300),
                          row("lm", "memplan_pluggable", ["0x1p+0", "0x1.0000000000001p-1"], reserved=200)])
    assert [r["compare"] for r in rows] == ["reference", "identical", "differs from step 1"]
    assert [r["reserved_vs_default"] for r in rows] == [1.0, 0.75, 0.5]


def test_inference_differences_are_counted_in_requests_and_a_missing_default_is_said():
    rows = report.derive([row("bert_infer", "default", ["aa", "bb"]), row("bert_infer", "async", ["aa", "bc"]),
                          row("resnet", "async", ["0x1p+0"])])
    assert rows[1]["compare"] == "differs from request 1"
    assert rows[2]["compare"] == "no default run to compare with"
    assert rows[2]["reserved_vs_default"] is None


def test_a_shorter_run_does_not_compare_identical():
    rows = report.derive([row("lm", "default", ["0x1p+0", "0x1p-1"]), row("lm", "async", ["0x1p+0"])])
    assert rows[1]["compare"] == "1 steps against the default's 2"


def test_served_fraction_prefers_the_memory_statistics():
    counters = {"profiled": 100, "served": 300, "unplanned": 50, "fallback": 50}
    assert report.served_fraction(counters) == 0.6
    assert report.served_fraction(counters, {"requests": 1000, "served": 300}) == 0.3
    assert report.served_fraction(None) is None
    assert report.served_fraction({"profiled": 0, "served": 0}) is None


def test_the_statistics_line_is_parsed_field_by_field():
    # The line as format_replay_stats prints it (tests/runtime/replay_stats_test.cc).
    text = ("noise\nmemplan cuda: streams 2, iterations 31, profiled 100, served 900, unplanned 3, fallback 5 (busy 2), "
            "small 0, pooled 0, pool bytes 0, deviations 1, background plans 0, plans 1, reprofiles 0, "
            "plan failures 0, invalid frees 7, slab bytes 4194304, planned buffers 12, operators 0, "
            "plan stall 1.500 ms (longest 0.900 ms), plans held 0, variants 1, growths 0, arena 4194304 B, "
            "shape loads 0..0 B, plan bytes 0, evictions 0, switches 0, predictions 0 right 0 wrong, "
            "served fraction 0.891, pooled fraction 0.000\n")
    stats = gpu_check.parse_memplan_stats(text)
    assert {k: stats[k] for k in ("streams", "iterations", "profiled", "served", "unplanned", "fallback", "busy",
                                  "plans", "growths", "slab_bytes", "invalid_frees")} == {
        "streams": 2, "iterations": 31, "profiled": 100, "served": 900, "unplanned": 3, "fallback": 5, "busy": 2,
        "plans": 1, "growths": 0, "slab_bytes": 4194304, "invalid_frees": 7}
    assert stats["plan_stall"] == 1.5 and stats["longest"] == 0.9 and stats["served_fraction"] == 0.891
    assert gpu_check.parse_memplan_stats("no statistics here\n") is None


def test_nearest_rank_percentile_and_the_first_step_left_out():
    assert run_one.percentile([5, 1, 3, 2, 4], 50) == 3
    assert run_one.percentile(list(range(1, 101)), 99) == 99
    assert run_one.percentile([7], 99) == 7
    summary = run_one.summarize_times([1000.0, 10.0, 30.0, 20.0])
    assert summary == {"step_ms_median": 20.0, "step_ms_p99": 30.0, "timed_steps": 3}


def timed(workload, allocator, reserved, median, values=("0x1p+0",), kind="train"):
    r = row(workload, allocator, list(values), reserved=reserved)
    r.update(kind=kind, step_ms_median=median)
    return r


def test_targets_hold_memplan_to_the_default_expandable_and_the_fastest():
    rows = report.derive([timed("lm_train_fixed", "default", 1000, 100.0),
                          timed("lm_train_fixed", "expandable", 900, 101.0),
                          timed("lm_train_fixed", "memplan_pluggable", 850, 101.5),
                          timed("lm_train_fixed", "memplan_mempool", 950, 103.0, values=("0x1p-1",)),
                          timed("bert_infer", "memplan_pluggable", 10, 1.0, kind="infer")])
    verdicts = {v["allocator"]: v for v in report.targets(rows)}
    assert set(verdicts) == {"memplan_pluggable", "memplan_mempool"}  # training rows of memplan only
    met = verdicts["memplan_pluggable"]
    assert met["reserved_vs_default"] == 0.85 and met["reserved_target_met"] and met["not_above_expandable"]
    assert met["step_target_met"] and met["losses_identical"]
    missed = verdicts["memplan_mempool"]
    assert not missed["reserved_target_met"] and not missed["not_above_expandable"]
    assert not missed["step_target_met"] and not missed["losses_identical"]
    assert "**no**" in report.targets_table(report.targets(rows))


def test_a_snapshot_over_the_limit_keeps_the_latest_half_of_its_window_until_it_fits(tmp_path):
    path = tmp_path / "snapshot.pickle"
    events = [{"action": "alloc", "addr": i, "size": 512, "frames": [{"filename": "x" * 200}]} for i in range(1000)]
    with open(path, "wb") as f:
        pickle.dump({"segments": [{"address": 0, "blocks": []}], "device_traces": [events]}, f)
    limit = os.path.getsize(path) // 3
    assert run_one.trim_snapshot(str(path), limit)
    assert os.path.getsize(path) <= limit
    with open(path, "rb") as f:
        trimmed = pickle.load(f)
    kept = trimmed["device_traces"][0]
    assert 0 < len(kept) < 1000
    assert kept[-1]["addr"] == 999  # the newest events stay
    assert trimmed["segments"] == [{"address": 0, "blocks": []}]


def test_a_snapshot_too_large_without_events_says_so(tmp_path):
    path = tmp_path / "snapshot.pickle"
    with open(path, "wb") as f:
        pickle.dump({"segments": [{"blob": "y" * 10000}], "device_traces": [[]]}, f)
    assert not run_one.trim_snapshot(str(path), 1000)


def test_the_warm_run_follows_the_saving_run_and_takes_its_file_for_any_program(tmp_path):
    class Args:
        dry_run = False
        workloads = ["lm_train_fixed", "bert_infer"]
        allocators = ["default", "memplan_pluggable"]
        run_timeout_s = 90
        compile_timeout_s = 150
    runs = [(a, w, r) for a, w, r, _, _ in gpu_check.plan(Args())]
    saving = runs.index(("memplan_pluggable", ["lm_train_fixed"], "main"))
    warm = runs.index(("memplan_pluggable", ["lm_train_fixed"], "warm"))
    assert saving < warm
    Args.allocators = ["default"]
    assert all(r != "warm" for _, _, r, _, _ in gpu_check.plan(Args()))
    plans = tmp_path / "lm_train_fixed.plans"
    plans.write_text("memplan-plans 2\nadapter device\nprogram python3 run_one.py --run main\nunit cuda:0/0 0\nend\n")
    assert gpu_check.any_program(str(plans)) is None
    assert plans.read_text().split("\n")[2] == "program -"
    assert "no plan file" in gpu_check.any_program(str(tmp_path / "missing.plans"))
    (tmp_path / "other").write_text("not a plan file\n")
    assert "no program line" in gpu_check.any_program(str(tmp_path / "other"))
