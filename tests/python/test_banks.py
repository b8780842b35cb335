"""memplan.plan_banks(): memory banks as `memplan plan --bank` plans them
(include/memplan/banks.h)."""
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
