"""examples/python_trace_plan.py, run as a user would: traces a small
torchvision model (weights=None, 32x32 input) with the tracer, plans an
iteration with every fast planner and draws it. Skipped without Debian's
python3-torch and python3-torchvision."""
import json
import os
import subprocess
import sys

import pytest

import memplan


def test_traces_plans_and_draws_a_torchvision_model(source_dir, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    script = os.path.join(source_dir, "examples", "python_trace_plan.py")
    completed = subprocess.run([sys.executable, script, "resnet18", "--size", "32", "--iterations", "3", "--out",
                                str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    base = tmp_path / "resnet18"
    trace = memplan.read_trace(f"{base}.trace")
    assert trace.marks == 4
    problem = memplan.read_problem(f"{base}.csv")
    # resnet18's forward pass allocates dozens of activations of 4 KiB and more.
    assert len(problem) >= 20 and problem.load() > 0
    assert problem.buffers == trace.extract(2, min_size=4096).problem.buffers
    plan = memplan.read_plan(problem, f"{base}.plan.json")
    assert memplan.validate(problem, plan)
    document = json.loads((tmp_path / "resnet18.plan.json").read_text())
    assert document["arena"] == plan.arena >= problem.load() == document["load"]
    # The best fast planner's arena is printed and no worse than greedy_by_size's.
    assert plan.arena <= memplan.plan(problem, "greedy_by_size").arena
    assert "<svg" in (tmp_path / "resnet18.svg").read_text()
    assert '"format":"memplan-report"' in (tmp_path / "resnet18.html").read_text()
    assert "greedy_by_size" in completed.stdout and "wrote" in completed.stdout
