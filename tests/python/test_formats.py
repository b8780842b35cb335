"""The CLI's formats from Python: problem and plan CSV, plan JSON, the SVG
heap map and the HTML report, from and to files and strings, with the CLI's
error messages (file, line, field)."""
import json

import numpy as np
import pytest

import memplan


@pytest.fixture
def problem():
    return memplan.Problem([{"id": "x", "lower": 0, "upper": 2, "size": 64, "alignment": 16},
                            {"id": "y", "lower": 1, "upper": 3, "size": 32},
                            {"id": "z", "lower": 2, "upper": 4, "size": 64, "offset": 128}])


def test_problem_csv_round_trips_through_strings_and_files(problem, tmp_path):
    text = memplan.format_problem(problem)
    assert text.splitlines()[0] == "id,lower,upper,size,alignment,offset"
    assert memplan.parse_problem(text).buffers == problem.buffers
    path = tmp_path / "p.csv"
    memplan.write_problem(path, problem)
    assert path.read_text() == text
    assert memplan.read_problem(path).buffers == problem.buffers
    assert memplan.read_problem(str(path)).buffers == problem.buffers


def test_problem_csv_is_what_the_cli_reads(problem, tmp_path, cli):
    path = tmp_path / "p.csv"
    memplan.write_problem(path, problem)
    out = tmp_path / "plan.csv"
    cli("plan", path, "--planner", "greedy_by_size", "--output", out, expect=0)
    mine = memplan.plan(problem, "greedy_by_size")
    assert memplan.read_plan(problem, out).offsets.tolist() == mine.offsets.tolist()
    assert memplan.format_plan(problem, mine) == out.read_text()


def test_operator_column_is_written_and_ignored_by_the_reader(problem):
    text = memplan.format_problem(problem, operators=["conv", "relu,add", None])
    assert "operator" in text.splitlines()[0] and "relu;add" in text
    assert memplan.parse_problem(text).buffers == problem.buffers


def test_plan_csv_and_json_round_trip(problem, tmp_path):
    result = memplan.plan(problem)
    csv_text = memplan.format_plan(problem, result)
    json_text = memplan.format_plan(problem, result, format="json")
    document = json.loads(json_text)
    assert document["planner"] == "portfolio" and document["arena"] == result.arena
    assert document["load"] == problem.load() and [e["id"] for e in document["offsets"]] == ["x", "y", "z"]
    for text in (csv_text, json_text):
        assert memplan.parse_plan(problem, text).offsets.tolist() == result.offsets.tolist()
    for name in ("plan.csv", "plan.json"):
        path = tmp_path / name
        memplan.write_plan(path, problem, result)
        assert path.read_text().lstrip().startswith("{") == name.endswith(".json")
        assert memplan.read_plan(problem, path).offsets.tolist() == result.offsets.tolist()
    # Offsets alone are a plan too.
    assert json.loads(memplan.format_plan(problem, result.offsets, format="json", planner="mine"))["planner"] == "mine"
    with pytest.raises(memplan.InputError, match="format 'xml'"):
        memplan.format_plan(problem, result, format="xml")


def cli_error(completed):
    return [line for line in completed.stderr.splitlines() if line.startswith("memplan: ")][-1][len("memplan: "):]


@pytest.mark.parametrize("text, message", [
    ("id,lower,upper,size\na,0,2,12x\n", "bad.csv:2: field 'size': \"12x\" is not an integer"),
    ("id,lower,upper\na,0,2\n", "bad.csv"),
    ("id,lower,upper,size\na,0,2,8\na,1,3,8\n", "bad.csv:3"),
    ("", "bad.csv"),
])
def test_reader_errors_are_the_clis(text, message, tmp_path, cli):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(memplan.InputError) as from_file:
        memplan.read_problem(path)
    with pytest.raises(memplan.InputError) as from_text:
        memplan.parse_problem(text, str(path))
    assert message in str(from_file.value)
    assert str(from_file.value) == str(from_text.value) == cli_error(cli("plan", path, expect=1))


def test_plan_reader_errors_name_the_source_and_field(problem, tmp_path, cli):
    problem_path = tmp_path / "p.csv"
    memplan.write_problem(problem_path, problem)
    bad_plan = tmp_path / "plan.csv"
    bad_plan.write_text("id,lower,upper,size,offset\nx,0,2,64,0\ny,1,3,32,64\n")
    with pytest.raises(memplan.InputError) as error:
        memplan.read_plan(problem, bad_plan)
    assert str(error.value) == cli_error(cli("validate", problem_path, bad_plan))
    with pytest.raises(memplan.InputError, match=r"<input>: offsets\[0\]|<input>"):
        memplan.parse_plan(problem, '{"offsets": [{"id": "x"}]}')


def test_missing_files_and_folders_raise_os_errors(problem, tmp_path, cli):
    with pytest.raises(memplan.FileError) as error:
        memplan.read_problem(tmp_path / "nope.csv")
    assert isinstance(error.value, OSError) and "nope.csv" in str(error.value)
    assert str(error.value) == cli_error(cli("plan", tmp_path / "nope.csv", expect=1))
    with pytest.raises(memplan.FileError, match="is a directory, not a file"):
        memplan.read_problem(tmp_path)
    with pytest.raises(memplan.FileError, match="missing-folder"):
        memplan.write_problem(tmp_path / "missing-folder" / "p.csv", problem)


def test_svg_is_the_clis_picture(problem, tmp_path, cli):
    result = memplan.plan(problem, "greedy_by_size")
    svg = memplan.render_svg(problem, result, title="p", width=800, height=400)
    assert svg.startswith("<svg") or svg.startswith("<?xml")
    assert svg.count("<rect") >= len(problem) and "greedy_by_size" in svg
    path = tmp_path / "p.csv"
    memplan.write_problem(path, problem)
    cli("render", path, "--planner", "greedy_by_size", "--svg", tmp_path / "cli.svg", "--width", "800",
        "--height", "400", expect=0)
    assert (tmp_path / "cli.svg").read_text() == svg
    out = tmp_path / "mine.svg"
    memplan.render_svg(problem, result.plan, out, title="p", planner="greedy_by_size", width=800, height=400)
    assert out.read_text() == svg
    with pytest.raises(memplan.InputError, match="width: 10 px is below 200"):
        memplan.render_svg(problem, result, width=10)


def test_html_report_draws_plans_given_every_way(problem, tmp_path, cli):
    greedy = memplan.plan(problem, "greedy_by_size")
    page = memplan.report_html(problem, "naive,greedy_by_size", title="p")
    assert page.lstrip().lower().startswith("<!doctype html") and '"format":"memplan-report"' in page
    data = page[page.index('{"format":"memplan-report"'):]
    assert '"name":"naive"' in data and '"name":"greedy_by_size"' in data
    for plans in (greedy, greedy.plan, {"mine": greedy}, [("mine", greedy.offsets)], ["naive", greedy]):
        assert '"plans":[' in memplan.report_html(problem, plans)
    path = tmp_path / "p.csv"
    memplan.write_problem(path, problem)
    cli("report", path, "--planner", "naive,greedy_by_size", "--html", tmp_path / "cli.html", "--title", "p",
        expect=0)
    assert (tmp_path / "cli.html").read_text() == page
    out = tmp_path / "r.html"
    memplan.report_html(problem, path=out, operators=["conv", "relu", ""])
    assert '"operator_names":["conv","relu"]' in out.read_text().replace(" ", "")
    with pytest.raises(memplan.UnknownPlannerError):
        memplan.report_html(problem, "naive,nope")
