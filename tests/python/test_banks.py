"""memplan.plan_banks(): memory banks as `memplan plan --bank` plans them
(include/memplan/banks.h)."""
import json
import os

import pytest

import memplan

# a [0,2) 16 B, b [1,3) 8 B, c [2,3) 8 B (tests/unit/banks_test.cc's example).
THREE = [{"id": "a", "lower": 0, "upper": 2, "size": 16},
         {"id": "b", "lower": 1, "upper": 3, "size": 8},
         {"id": "c", "lower": 2, "upper": 3, "size": 8}]


def test_keeps_the_densest_buffers_in_the_fast_bank():
    r = memplan.plan_banks(memplan.Problem(THREE), [("sram", 16), ("dram", None)])
    assert list(r["bank_of"]) == [0, 1, 0]
    assert r["banks"][0]["priority"] == 40 and r["total_priority"] == 56
    assert r["banks"][0]["arena"] <= 16
    assert r["spills"] == [("b", "sram", "no room")]


def test_pins_and_priorities_from_arguments():
    r = memplan.plan_banks(memplan.Problem(THREE), [("sram", "16"), "dram"], priorities={"b": 1000})
    assert list(r["bank_of"]) == [1, 0, 0]
    r = memplan.plan_banks(memplan.Problem(THREE), [("sram", 16), "dram"], pins={"a": "dram"})
    assert r["spills"] == [("a", "sram", "pinned elsewhere")]


def test_reads_pins_from_the_csv():
    path = os.path.join(os.environ.get("MEMPLAN_SOURCE_DIR", "."), "tests/cli/data/banks.csv")
    r = memplan.plan_banks(memplan.read_problem(path), [("sram", 16), ("dram", None)])
    assert r["bank_of"][3] == 1  # d is pinned to dram


def test_errors_name_the_bank():
    with pytest.raises(memplan.InputError, match="pinned to bank 'hbm'"):
        memplan.plan_banks(memplan.Problem(THREE), [("sram", 16), "dram"], pins={"a": "hbm"})
    with pytest.raises(memplan.PlanningError, match="bank 'sram' need at least 24 B"):
        memplan.plan_banks(memplan.Problem(THREE), [("sram", 16), "dram"], pins={"a": "sram", "b": "sram"})
    with pytest.raises(memplan.InputError, match="strategy"):
        memplan.plan_banks(memplan.Problem(THREE), ["dram"], strategy="fast")


def test_problem_dicts_carry_bank_and_priority():
    buffers = [dict(THREE[0], bank="sram"), dict(THREE[1], priority=1000), THREE[2]]
    problem = memplan.Problem(buffers)
    assert problem.banks == ["sram", None, None]
    assert list(problem.priorities) == [-1, 1000, -1]
    assert problem[0].bank == "sram" and problem[0].priority is None
    assert problem[1].bank is None and problem[1].priority == 1000
    assert problem[0].to_dict()["bank"] == "sram" and "priority" not in problem[0].to_dict()
    assert "bank" not in problem[2].to_dict()  # dicts without them stay as they were
    assert memplan.Problem(problem.to_dicts()).buffers == problem.buffers
    assert "bank='sram'" in repr(problem[0]) and "priority=1000" in repr(problem[1])
    # The pin and the priority decide, as the CSV's columns do.
    r = memplan.plan_banks(memplan.Problem([dict(THREE[0], bank="dram"), THREE[1], THREE[2]]), [("sram", 16), "dram"])
    assert r["spills"][0] == ("a", "sram", "pinned elsewhere")
    r = memplan.plan_banks(problem, [("sram", 32), "dram"])
    assert r["bank_of"][0] == 0


def test_problem_from_arrays_carries_banks_and_priorities():
    problem = memplan.Problem.from_arrays([0, 1, 2], [2, 3, 3], [16, 8, 8], ids=["a", "b", "c"],
                                          banks=[None, "dram", ""], priorities=[-1, 5, 7])
    assert problem.banks == [None, "dram", None]
    assert list(problem.priorities) == [-1, 5, 7]
    with pytest.raises(memplan.InputError, match="priorities: 2 values"):
        memplan.Problem.from_arrays([0, 1, 2], [2, 3, 3], [16, 8, 8], priorities=[1, 2])


def test_problem_dicts_reject_bad_bank_fields():
    with pytest.raises(memplan.InputError, match=r"buffers\[0\]: field 'bank': expected a bank name"):
        memplan.Problem([dict(THREE[0], bank=3)])
    with pytest.raises(memplan.InputError, match=r"buffer .a. \(#0\): priority -1 is negative"):
        memplan.Problem([dict(THREE[0], priority=-1)])


def test_fixed_offsets_are_checked_per_bank():
    # a and b share bytes [4, 8) while both live: two banks hold them, one arena does not.
    pair = [{"id": "a", "lower": 0, "upper": 2, "size": 8, "offset": 0, "bank": "sram"},
            {"id": "b", "lower": 1, "upper": 3, "size": 8, "offset": 4, "bank": "dram"}]
    problem = memplan.Problem(pair)
    r = memplan.plan_banks(problem, [("sram", 16), "dram"])
    assert list(r["bank_of"]) == [0, 1] and list(r["offsets"]) == [0, 4]
    with pytest.raises(memplan.InputError, match="fixed offsets that overlap"):
        memplan.plan(problem)
    with pytest.raises(memplan.InputError, match="fixed offsets that overlap"):
        memplan.Problem([pair[0], dict(pair[1], bank="sram")])


def test_exact_mode_is_never_behind_the_heuristics():
    problem = memplan.generate("dnn", buffers=40, seed=3, max_size=4096)
    load = problem.load()
    for share in (8, 4, 2):
        banks = [("fast", load // share), "slow"]
        best = memplan.plan_banks(problem, banks)
        exact = memplan.plan_banks(problem, banks, strategy="exact", node_limit=2000)
        assert exact["heuristic_priority"] == best["banks"][0]["priority"]
        assert exact["banks"][0]["priority"] >= best["banks"][0]["priority"]
        assert exact["banks"][0]["arena"] <= load // share
        check = memplan.validate_banked(problem, banks, exact["bank_of"], exact["offsets"])
        assert check["valid"], check["reason"]


def test_validate_banked_names_the_rule():
    banks = [("sram", 16), "dram"]
    problem = memplan.Problem(THREE)
    assert memplan.validate_banked(problem, banks, [0, 1, 0], [0, 0, 0])["valid"]
    cases = [
        ([0, 0, 1], [0, 0, 0], "overlap"),            # a and b share sram bytes at tick 1
        ([0, 1, 0], [8, 0, 0], "exceeds capacity"),   # a ends at 24 in a 16-byte sram
        ([0, 1, 0], [-8, 0, 0], "negative offset"),
        ([0, 1, 5], [0, 0, 0], "no such bank"),
    ]
    for bank_of, offsets, rule in cases:
        r = memplan.validate_banked(problem, banks, bank_of, offsets)
        assert not r["valid"] and r["rule"] == rule, (rule, r)
    pinned = memplan.Problem([dict(THREE[0], bank="dram"), THREE[1], THREE[2]])
    r = memplan.validate_banked(pinned, banks, [0, 1, 0], [0, 0, 0])
    assert r["rule"] == "pin ignored" and "pinned to bank 'dram'" in r["reason"]
    r = memplan.validate_banked(problem, [("sram", 16, 16), "dram"], [0, 1, 0], [0, 0, 8])
    assert r["rule"] == "misaligned"


def test_time_limit_zero_means_what_the_cli_means(cli, tmp_path):
    # The library decides exact mode's budget for both front ends: at time
    # limit 0 no search to speak of (one node per decision), so Python and
    # `memplan plan --time-limit 0` give the same plan and priorities. On
    # this problem a second of search (what Python's 0 once meant) keeps
    # more priority in the fast bank at a quarter of the load.
    problem = memplan.generate("dnn", buffers=60, seed=4, max_size=4096)
    path = tmp_path / "problem.csv"
    memplan.write_problem(str(path), problem)
    load = problem.load()
    for share in (8, 4, 2):
        banks = [("fast", load // share), "slow"]
        mine = memplan.plan_banks(problem, banks, strategy="exact", time_limit=0)
        theirs = json.loads(cli("plan", path, "--bank", f"fast={load // share}", "--bank", "slow",
                                "--bank-strategy", "exact", "--time-limit", "0", "--json", expect=0).stdout)
        assert mine["strategy"] == theirs["strategy"]
        assert mine["exact_decisions"] == theirs["exact_decisions"]
        assert [b["priority"] for b in mine["banks"]] == [b["priority"] for b in theirs["banks"]]
        names = [b["name"] for b in theirs["banks"]]
        assert [names[k] for k in mine["bank_of"]] == [b["bank"] for b in theirs["buffers"]]
        assert list(mine["offsets"]) == [b["offset"] for b in theirs["buffers"]]
