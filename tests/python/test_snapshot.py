"""PyTorch memory snapshots from Python: read_snapshot on a file and
snapshot_problem on a live snapshot dict agree with `memplan snapshot
--json`; a pickle that would run code is refused with its offset."""
import json
import os
import pickle

import pytest

import memplan

MiB = 1 << 20
A = 0x7F0000000000


class NotPlainData:
    """Pickles as STACK_GLOBAL + NEWOBJ: code a snapshot reader must refuse."""


@pytest.fixture(scope="module")
def training(source_dir):
    return os.path.join(source_dir, "tests", "cli", "data", "snapshot_training.pickle")


def live_snapshot():
    """What torch.cuda.memory._snapshot() returns, by hand: a 4 MiB block from
    before the window, and a 2 MiB one allocated and freed in it."""
    frames = [{"name": "forward", "filename": "/home/me/train.py", "line": 12}]
    return {
        "segments": [{"device": 0, "address": A, "total_size": 20 * MiB, "stream": 0, "segment_type": "large",
                      "blocks": [{"address": A, "size": 4 * MiB, "requested_size": 4 * MiB,
                                  "state": "active_allocated", "frames": frames},
                                 {"address": A + 4 * MiB, "size": 16 * MiB, "requested_size": 0,
                                  "state": "inactive", "frames": []}]}],
        "device_traces": [[{"action": "alloc", "addr": A + 4 * MiB, "size": 2 * MiB, "stream": 0, "frames": frames},
                           {"action": "free_completed", "addr": A + 4 * MiB, "size": 2 * MiB, "stream": 0,
                            "frames": frames}]],
    }


def test_read_snapshot_matches_the_cli(training, cli):
    s = memplan.read_snapshot(training)
    assert s["format"] == "older" and [d["device"] for d in s["devices"]] == [0, 1]
    expected = json.loads(cli("snapshot", training, "--json", "--no-simulate", expect=0).stdout)
    for got, want in zip(s["devices"], expected["devices"]):
        assert got["recorded"]["peak_reserved_bytes"] == want["recorded"]["peak_reserved_bytes"]
        assert got["recorded"]["peak_allocated_bytes"] == want["recorded"]["peak_allocated_bytes"]
        assert got["load_bytes"] == want["load_bytes"]
        assert len(got["problem"].buffers) == want["planned"]["buffers"]
    d0 = s["devices"][0]
    assert d0["iterations"]["found_by"] == "repetition" and len(d0["iterations"]["spans"]) == 3
    assert len(d0["iteration_problems"]) == 3
    assert d0["live_at_peak"][0]["allocated_by"] == "me/train.py:7 forward"
    assert memplan.plan(d0["problem"]).arena == d0["load_bytes"]


def test_read_snapshot_one_device(training):
    assert [d["device"] for d in memplan.read_snapshot(training, device=1)["devices"]] == [1]
    with pytest.raises(memplan.InputError, match=r"no device 7 \(devices: 0, 1\)"):
        memplan.read_snapshot(training, device=7)


def test_snapshot_problem_of_a_live_snapshot():
    problem = memplan.snapshot_problem(live_snapshot())
    assert sorted(problem.size.tolist()) == [2 * MiB, 4 * MiB]
    # The block from before the window lives from tick 0 to the end (3).
    assert problem.lower.tolist() == [0, 1] and problem.upper.tolist() == [3, 2]
    assert memplan.snapshot_problem(pickle.dumps(live_snapshot())).size.tolist() == problem.size.tolist()


def test_code_is_refused(tmp_path):
    path = tmp_path / "evil.pickle"
    path.write_bytes(b"\x80\x02cos\nsystem\nX\x0a\x00\x00\x00echo pwned\x85R.")
    with pytest.raises(memplan.InputError, match="offset 2: GLOBAL: refused opcode GLOBAL"):
        memplan.read_snapshot(str(path))
    # A live object that is not plain data pickles to STACK_GLOBAL: refused too.
    with pytest.raises(memplan.InputError, match="refused opcode STACK_GLOBAL"):
        memplan.snapshot_problem({"segments": [], "device_traces": [[NotPlainData()]]})


def test_missing_file_is_a_file_error(tmp_path):
    with pytest.raises(memplan.FileError, match="cannot open"):
        memplan.read_snapshot(str(tmp_path / "none.pickle"))


def without_timings(document):
    """A report without what differs run to run or cannot be JSON: times, the
    problems, and the memplan models' numbers (their planner has a time limit,
    so a loaded machine may plan differently: allocator_model.h)."""
    document = {k: v for k, v in document.items() if k not in ("read_seconds", "seconds", "snapshot")}
    devices = []
    for d in document["devices"]:
        d = {k: v for k, v in d.items() if k not in ("problem", "iteration_problems")}
        if "simulated" in d:
            d["simulated"] = {k: (sorted(v) if k.startswith("memplan") else v) for k, v in d["simulated"].items()}
        diagnosis = dict(d["diagnosis"])
        diagnosis["recommendations"] = [r if not r["action"].startswith("memplan") else r["action"]
                                        for r in diagnosis["recommendations"]]
        d["diagnosis"] = diagnosis
        devices.append(d)
    document["devices"] = devices
    return document


def test_analyze_snapshot_is_the_cli_report(training, cli):
    """One library call behind both: every field the CLI prints, the module returns."""
    got = memplan.analyze_snapshot(training)
    want = json.loads(cli("snapshot", training, "--json", "--top", "25", expect=0).stdout)
    assert without_timings(got) == without_timings(want)
    assert got["devices"][0]["simulated"]["caching"]["peak_reserved_bytes"] == 22 * MiB


def test_analyze_snapshot_takes_a_path_object(training):
    import pathlib

    report = memplan.analyze_snapshot(pathlib.Path(training), device=0, simulate=False)
    assert [d["device"] for d in report["devices"]] == [0] and "simulated" not in report["devices"][0]


def test_a_directory_is_named_as_one(tmp_path):
    with pytest.raises(memplan.InputError, match="is a directory, not a snapshot"):
        memplan.analyze_snapshot(tmp_path)


def test_unknown_planner_is_named(training):
    with pytest.raises(memplan.UnknownPlannerError, match="unknown planner 'nope'"):
        memplan.analyze_snapshot(training, planner="nope")


def two_segments_snapshot():
    """12 MiB in a segment of its own, freed, then 14 MiB that does not fit
    the cached 12: a second segment, 26 MiB reserved for at most 14 MiB live.
    Expandable segments map 20 MiB pages (the large pool's) and reuse the
    first: 20 MiB."""
    frames = [{"name": "forward", "filename": "/home/me/train.py", "line": 5}]
    s1, s2 = A, A + 64 * MiB

    def event(action, addr, size):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": frames}

    return {
        "segments": [{"device": 0, "address": s, "total_size": size, "stream": 0, "segment_type": "large",
                      "blocks": [{"address": s, "size": size, "requested_size": 0, "state": "inactive",
                                  "frames": []}]}
                     for s, size in ((s1, 12 * MiB), (s2, 14 * MiB))],
        "device_traces": [[event("segment_alloc", s1, 12 * MiB), event("alloc", s1, 12 * MiB),
                           event("free_requested", s1, 12 * MiB), event("free_completed", s1, 12 * MiB),
                           event("segment_alloc", s2, 14 * MiB), event("alloc", s2, 14 * MiB),
                           event("free_requested", s2, 14 * MiB), event("free_completed", s2, 14 * MiB)]],
    }


def test_diagnosis_recommends_what_the_models_measure():
    report = memplan._snapshot_from_pickle_bytes(pickle.dumps(two_segments_snapshot()), simulate=True)
    d = report["devices"][0]
    g, models = d["diagnosis"], d["simulated"]
    assert d["recorded"]["peak_reserved_bytes"] == 26 * MiB
    assert g["caching_reserved_bytes"] == models["caching"]["peak_reserved_bytes"] == 26 * MiB
    assert g["live_by_line"] == [{"where": "me/train.py:5 forward", "bytes": 14 * MiB, "blocks": 1}]
    by_action = {r["action"]: r for r in g["recommendations"]}
    expandable = by_action["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]
    assert expandable["peak_reserved_bytes"] == models["expandable_segments"]["peak_reserved_bytes"] == 20 * MiB
    assert expandable["saving_bytes"] == 6 * MiB
    steady = by_action["memplan's CUDA allocator (CUDAPluggableAllocator)"]
    assert steady["peak_reserved_bytes"] == models["memplan"]["peak_reserved_bytes"]
    assert "first window reserves 26.00 MiB" in steady["note"]
    # Every recommendation reserves less than the caching model as recorded, most saving first.
    savings = [r["saving_bytes"] for r in g["recommendations"]]
    assert all(s > 0 for s in savings) and savings == sorted(savings, reverse=True)
    assert report["devices"][0]["cautions"] == []


def test_diagnosis_says_what_predates_the_window():
    """The live snapshot's 4 MiB block predates the window: two thirds of its 6 MiB peak.
    The dump kept its frames, so its line is the 2 MiB block's."""
    report = memplan._snapshot_from_pickle_bytes(pickle.dumps(live_snapshot()), simulate=True)
    d = report["devices"][0]
    assert d["diagnosis"]["before_window_bytes"] == 4 * MiB
    assert d["diagnosis"]["live_by_line"] == [{"where": "me/train.py:12 forward", "bytes": 6 * MiB, "blocks": 2}]
    assert len(d["cautions"]) == 1 and "_record_memory_history" in d["cautions"][0]
