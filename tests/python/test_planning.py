"""Every registered planner through memplan.plan() (run_planner, the CLI's
path), validated; capacities and their verdicts, with the CLI's messages;
options (time limit, seed, alignment); planner errors."""
import os
import re

import numpy as np
import pytest

import memplan

# The exact search and the MIP are slow on large problems: they get small
# ones and a time limit, as their conformance tests do.
SLOW = {info["name"] for info in memplan.planner_info() if not info["fast"]}


def test_lists_the_registry_in_order(cli):
    names = memplan.planners()
    assert names[0] == memplan.DEFAULT_PLANNER == "portfolio"
    listed = cli("planners", expect=0).stdout
    for name in names:
        assert name in listed
    assert {info["form"] for info in memplan.planner_info()} <= {"offsets", "objects", "composite"}


@pytest.mark.parametrize("planner", memplan.planners())
@pytest.mark.parametrize("shape", ["dnn", "random", "heavy", "nested", "equal", "puzzle"])
def test_every_planner_makes_valid_plans_of_random_problems(planner, shape):
    sizes = (6, 12) if planner in SLOW else (10, 60, 200)
    for seed, n in enumerate(sizes, start=1):
        problem = memplan.generate(shape, n, seed=seed, max_alignment=64 if seed % 2 else 1)
        result = memplan.plan(problem, planner, time_limit=5 if planner in SLOW else 0)
        assert result.verdict == "planned", result.message
        assert result.planner == planner
        assert isinstance(result.offsets, np.ndarray) and result.offsets.dtype == np.int64
        assert len(result.offsets) == len(problem)
        check = memplan.validate(problem, result)
        assert check, f"{planner} on {shape}/{n}/seed {seed}: {check}"
        assert result.arena == result.plan.arena >= result.lower_bound >= problem.load() == result.load
        assert result.arena == max((o + s for o, s in zip(result.offsets, problem.size)), default=0)


def test_options_reach_the_planner():
    problem = memplan.generate("random", 300, seed=3)
    same = [memplan.plan(problem, "greedy_by_size", seed=9).offsets for _ in range(2)]
    assert np.array_equal(*same)
    aligned = memplan.plan(problem, "greedy_by_size", alignment=4096)
    assert all(offset % 4096 == 0 for offset in aligned.offsets)
    with pytest.raises(memplan.InputError, match="alignment: 48 is not a power of two"):
        memplan.plan(problem, alignment=48)
    with pytest.raises(memplan.InputError, match="time_limit"):
        memplan.plan(problem, time_limit=-1)
    # An explicit time limit lets the default planner improve its plan with the
    # exact solver; the plan is still valid and no worse than the heuristics'.
    heuristic = memplan.plan(problem, "greedy_best")
    improved = memplan.plan(problem, time_limit=0.5)
    assert improved and memplan.validate(problem, improved) and improved.arena <= heuristic.arena


def write_csv(tmp_path, problem, name="p.csv"):
    path = tmp_path / name
    memplan.write_problem(path, problem)
    return path


def cli_message(completed):
    """The CLI's error message without its 'memplan: ' prefix."""
    lines = [line for line in completed.stderr.splitlines() if line.startswith("memplan: ")]
    assert lines, completed.stderr
    return lines[-1][len("memplan: "):]


def test_the_default_searches_where_the_heuristics_leave_a_gap(cli):
    # The CLI's gap problem: no plan reaches its load (163 B needed). By
    # default the exact search proves that; time_limit=0 keeps the heuristics.
    path = os.path.join(os.path.dirname(__file__), "..", "cli", "data", "gap_above_load.csv")
    problem = memplan.read_problem(path)
    searched = memplan.plan(problem)
    assert searched.ending == "optimal" and searched.arena == 163
    heuristics = memplan.plan(problem, time_limit=0)
    assert heuristics.ending == "best found (heuristics)" and heuristics.arena >= 163
    assert re.search(r"^result\s+optimal$", cli("plan", path, expect=0).stdout, re.M)
    assert re.search(r"^result\s+best found \(heuristics\)$", cli("plan", path, "--time-limit", "0", expect=0).stdout,
                     re.M)


def test_a_good_enough_greedy_plan_stops_planning_as_in_the_cli(cli):
    # The gap problem: load 157 B, greedy_by_size's plan at most 10% above it
    # is kept and the default planner's search (to 163 B) is not run.
    path = os.path.join(os.path.dirname(__file__), "..", "cli", "data", "gap_above_load.csv")
    problem = memplan.read_problem(path)
    greedy = memplan.plan(problem, "greedy_by_size")
    assert greedy.arena <= 1.1 * problem.load()
    kept = memplan.plan(problem, good_enough=0.1)
    assert kept.made_by == "greedy_by_size" and kept.planner == "portfolio" and kept.arena == greedy.arena
    assert memplan.validate(problem, kept)
    searched = memplan.plan(problem, good_enough=0)  # not at the load: the default planner runs, keeps the better plan
    assert searched.arena == 163 and searched.made_by != "greedy_by_size"
    pages = memplan.plan(problem, good_enough=0, good_enough_unit="4KiB")  # both in one page: good enough
    assert pages.made_by == "greedy_by_size"
    with pytest.raises(memplan.InputError, match="good_enough"):
        memplan.plan(problem, good_enough=-1)
    out = cli("plan", path, "--good-enough", "0.1", expect=0).stdout
    assert re.search(rf"^arena\s+{greedy.arena} B", out, re.M), out
    assert re.search(r"^made by\s+greedy_by_size", out, re.M), out


def test_capacity_verdicts_and_messages_are_the_clis(cli, tmp_path):
    # a [0,2) 64, b [1,3) 32, c [2,4) 64: load 96, fits in 96.
    problem = memplan.Problem([(0, 2, 64), (1, 3, 32), (2, 4, 64)])
    path = write_csv(tmp_path, problem)

    fits = memplan.plan(problem, capacity=96)
    assert fits.verdict == "fits" and fits.ok and fits.arena <= 96 and fits.message == ""
    assert "fits" in cli("plan", path, "--capacity", "96", expect=0).stdout

    below = memplan.plan(problem, capacity="64")
    assert below.verdict == "does not fit" and not below and below.plan is None and below.offsets is None
    completed = cli("plan", path, "--capacity", "64", expect=2)
    assert cli_message(completed) == below.message
    assert below.message.startswith("proven: no plan fits in capacity 64 B")

    no_capacity = memplan.plan(problem, "naive")
    assert no_capacity.verdict == "planned" and no_capacity.capacity is None
    # What each run ended in, as the CLI's result line says it.
    assert below.ending == "does not fit"
    assert fits.ending == "optimal"  # the capacity is the load: a plan that fits it is optimal
    exact = memplan.plan(problem, "exact")
    assert exact.ending == "optimal" and exact.arena == 96
    assert re.search(r"^result\s+optimal$", cli("plan", path, "--planner", "exact", expect=0).stdout, re.M)
    # A capacity in the problem itself is used too.
    problem.capacity = 96
    assert memplan.plan(problem).verdict == "fits"


def test_an_unknown_verdict_keeps_the_best_plan_and_the_clis_reason(cli, tmp_path):
    # A heuristic alone gives no proof: greedy_by_size's plan above a capacity
    # the problem cannot meet is 'does not fit' only when the bound proves it.
    problem = memplan.generate("puzzle", 40, seed=5)
    path = write_csv(tmp_path, problem)
    load = problem.load()
    tight = memplan.plan(problem, "naive", capacity=load)
    assert tight.verdict == "unknown" and not tight.ok
    assert tight.plan is not None and tight.arena > load and memplan.validate(problem, tight.plan)
    completed = cli("plan", path, "--planner", "naive", "--capacity", str(load), expect=4)
    # The reason starts with the time taken ("unknown after 0.0 s: ..."), which may differ.
    drop_time = lambda text: re.sub(r"after [0-9.]+ s", "after T s", text)  # noqa: E731
    assert drop_time(cli_message(completed)) == drop_time(tight.message) == drop_time(tight.reason)
    assert "the best plan found needs" in tight.message


def test_the_exact_solver_reports_its_statistics():
    problem = memplan.generate("puzzle", 10, seed=2)
    result = memplan.plan(problem, "exact", time_limit=5)
    assert result.exact is not None and result.exact["nodes"] >= 1
    assert result.exact["lower_bound"] <= result.arena
    # Every plan that lowered the arena, in order; the last is the result's.
    path = result.exact["improvements"]
    assert path and path[-1][1] == result.arena
    assert all(later[1] < earlier[1] and later[0] >= earlier[0] for earlier, later in zip(path, path[1:]))
    assert all(isinstance(source, str) and source for _, _, source in path)


def test_helper_threads_keep_the_optimum_and_are_counted(source_dir):
    d = memplan.read_problem(os.path.join(source_dir, "bench", "data", "dsa", "minimalloc", "challenging",
                                          "D.1048576.csv"))
    # The helpers start after the heuristics; on a busy machine that can take
    # the first seconds, so the limit doubles until they have decided (a slow
    # machine costs time, never a failure).
    limit = 3
    while True:
        result = memplan.plan(d, "exact", time_limit=limit, threads=2)
        assert memplan.validate(d, result) and result.exact["lower_bound"] == 986112
        if result.exact["helper_probes"] > 0 or limit >= 192:
            break
        limit *= 2
    assert result.exact["helper_probes"] > 0, f"no helper decision within {limit} s"
    # D's SAT encoding (24 million clauses) is over the SAT helper's limit: both helpers stay seeded.
    assert result.exact["sat_decisions"] == 0 and result.exact["sat_refutations"] == 0
    puzzle = memplan.generate("puzzle", 10, seed=2)
    three = memplan.plan(puzzle, "exact", time_limit=5, threads=3)
    assert three.exact["outcome"] == "optimal"
    # 0, the default, is one per hardware thread; the optimum is the same.
    every_core = memplan.plan(puzzle, "exact", time_limit=5)
    assert every_core.exact["outcome"] == "optimal" and every_core.plan.arena == three.plan.arena
    with pytest.raises(memplan.InputError, match="threads: 257 is not in 0 to 256"):
        memplan.plan(d, threads=257)


def test_unknown_planners_raise_lookup_errors_with_the_clis_message(cli, tmp_path):
    problem = memplan.Problem([(0, 1, 8)])
    with pytest.raises(memplan.UnknownPlannerError) as error:
        memplan.plan(problem, "gredy_by_size")
    assert isinstance(error.value, LookupError) and isinstance(error.value, memplan.Error)
    assert str(error.value).startswith("unknown planner 'gredy_by_size'; did you mean 'greedy_by_size'? "
                                       "(registered: portfolio, naive")
    cli_text = cli_message(cli("plan", write_csv(tmp_path, problem), "--planner", "gredy_by_size", expect=1))
    assert cli_text == str(error.value)


def test_planning_releases_the_gil():
    import threading

    problem = memplan.generate("random", 3000, seed=1)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    # A second of planning: the counting thread needs ten 1 ms waits of it.
    memplan.plan(problem, time_limit=1.0)
    stop.set()
    thread.join()
    assert len(ticks) > 10


def test_ctrl_c_cancels_planning_and_raises_keyboard_interrupt():
    import signal
    import subprocess
    import sys
    import time

    # exact on a 3000-buffer puzzle runs to its 120 s limit unless cancelled.
    program = ("import memplan, sys\n"
               "p = memplan.generate('puzzle', 3000, seed=1)\n"
               "print('planning', flush=True)\n"
               "try:\n"
               "    memplan.plan(p, 'exact', time_limit=120)\n"
               "except KeyboardInterrupt:\n"
               "    print('interrupted', flush=True)\n")
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "planning"
    time.sleep(1)
    child.send_signal(signal.SIGINT)
    # The 120 s limit is never reached: only the interrupt ends the plan. The
    # timeout is a watchdog against a hang, not a timing check.
    out, _ = child.communicate(timeout=600)
    assert out.strip() == "interrupted" and child.returncode == 0
