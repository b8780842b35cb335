"""Traces from Python: run a program under the tracer, read the trace,
summarise and extract iterations exactly as `memplan extract` does, plan
them; errors name the file."""
import os
import sys

import pytest

import memplan

PROGRAM = os.path.join(os.path.dirname(__file__), "marking_program.py")


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "run.trace"
    trace = memplan.trace([sys.executable, PROGRAM, "3"], path, capture_output=True, text=True)
    return path, trace


def test_iterations_hold_the_programs_buffers(traced):
    path, trace = traced
    assert trace.marks == 4 and trace.events > 0 and trace.threads >= 1
    x = trace.extract(2)
    assert x.iteration == 2 and x.escaped == 0
    # 1 MiB, 512 KiB and 768 KiB bytearrays (each one byte more for the terminating NUL).
    big = sorted(size for size in x.problem.size.tolist() if size >= 1 << 18)
    assert big == [(1 << 19) + 1, (3 << 18) + 1, (1 << 20) + 1]
    assert all(a >= 16 for a in x.problem.alignments)
    summaries = trace.iterations()
    assert len(summaries) == trace.iteration_count == 5
    assert summaries[2]["closed"] and summaries[2]["allocated_bytes"] >= sum(big)


def test_extraction_is_the_clis(traced, cli, tmp_path):
    path, trace = traced
    for iteration in (1, 2, 3):
        out = tmp_path / f"it{iteration}.csv"
        cli("extract", path, "--iteration", iteration, "--min-size", "4K", "--output", out, expect=0)
        mine = memplan.extract(path, iteration, min_size="4K")
        assert memplan.format_problem(mine.problem) == out.read_text()
        assert trace.extract(iteration, min_size=4096).problem.buffers == mine.problem.buffers
    assert memplan.extract(path).iteration == 1
    assert memplan.parse_trace(path.read_bytes()).events == trace.events


def test_extracted_iterations_plan_at_their_load(traced):
    path, trace = traced
    problem = trace.extract(2, min_size=4096).problem
    result = memplan.plan(problem)
    assert memplan.validate(problem, result) and result.arena >= problem.load()


def test_trace_errors_name_the_file(traced, tmp_path, cli):
    path, trace = traced
    with pytest.raises(memplan.InputError) as error:
        trace.extract(99)
    assert "99" in str(error.value)
    broken = tmp_path / "broken.trace"
    broken.write_bytes(path.read_bytes()[:100])
    with pytest.raises(memplan.Error) as error:
        memplan.read_trace(broken)
    assert "broken.trace" in str(error.value)
    cli_text = cli("extract", broken, "--output", tmp_path / "x.csv", expect=1).stderr
    assert str(error.value) in cli_text
    with pytest.raises(memplan.FileError):
        memplan.read_trace(tmp_path / "missing.trace")
    with pytest.raises(memplan.InputError, match="inputs apply to ONNX models, not to traces"):
        memplan.extract(path, inputs=["x=1x3"])
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\x08\x07")
    with pytest.raises(memplan.InputError, match="m.onnx"):
        memplan.extract(model)
    if not memplan.HAS_ONNX:
        with pytest.raises(memplan.InputError, match="an ONNX model, and this memplan module was built without"):
            memplan.extract(model)
