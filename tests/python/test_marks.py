"""memplan.mark() / mark_key(): nothing without a memplan library loaded;
calls through to the serving drop-in (libmemplan_replay.so, LD_PRELOAD) and
to the tracer, whose counts prove the marks arrived."""
import os
import re
import subprocess
import sys

import pytest

import memplan

PROGRAM = os.path.join(os.path.dirname(__file__), "marking_program.py")


def test_marks_do_nothing_without_a_memplan_library():
    if "libmemplan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("this process runs with a memplan library preloaded")
    assert memplan.loaded() is None
    for key in range(3):
        memplan.mark()
        memplan.mark_key(key)
    with pytest.raises(TypeError):
        memplan.mark_key(-1)


def run_under_replay(iterations):
    env = memplan.preload_environment("replay", stats=1)
    # Planned at the boundary that agrees, so that a short run counts a plan
    # (in the background it may arrive after the last mark).
    env["MEMPLAN_PLAN_IN_BACKGROUND"] = "0"
    completed = subprocess.run([sys.executable, PROGRAM, str(iterations)], env=env, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "loaded replay"
    stats = re.search(r"memplan replay: threads (\d+), iterations (\d+), .*plans (\d+),", completed.stderr)
    assert stats, completed.stderr
    return int(stats.group(2)), int(stats.group(3))


def test_marks_reach_the_serving_drop_in():
    # N iterations are N + 1 marks (mark() and mark_key() alike) on one thread.
    assert run_under_replay(0) == (0, 0)
    iterations, plans = run_under_replay(6)
    assert iterations == 7
    assert plans >= 1  # the repeating iterations were learned and planned


def test_the_drop_in_can_be_named_by_environment(tmp_path):
    with pytest.raises(memplan.FileError, match="no such file"):
        memplan.preload_environment("replay", env={"MEMPLAN_REPLAY_LIBRARY": str(tmp_path / "nope.so")})
    env = memplan.preload_environment("trace", env={"LD_PRELOAD": "/x.so"}, trace_file="t.trace")
    assert env["LD_PRELOAD"].endswith(":/x.so") and env["LD_PRELOAD"].startswith(memplan.library_path("trace"))
    assert env["MEMPLAN_TRACE_FILE"] == "t.trace"
    with pytest.raises(memplan.InputError):
        memplan.library_path("tracer")


def test_marks_reach_the_tracer(tmp_path):
    trace = memplan.trace([sys.executable, PROGRAM, "4"], tmp_path / "run.trace", capture_output=True, text=True)
    assert trace.marks == 5 and trace.iteration_count == 6 and trace.complete
    with pytest.raises(subprocess.CalledProcessError):
        memplan.trace([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "fail.trace")
