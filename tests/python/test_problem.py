"""Problems from lists, dicts and NumPy arrays; their properties; bounds;
the validator's reasons; errors that name the buffer and field."""
import numpy as np
import pytest

import memplan


def test_builds_the_same_problem_from_tuples_dicts_and_arrays():
    tuples = memplan.Problem([(0, 2, 64), (1, 3, 32, 16), (2, 4, 64, 1, 128)])
    dicts = memplan.Problem([
        {"lower": 0, "upper": 2, "size": 64},
        {"lower": 1, "upper": 3, "size": 32, "alignment": 16},
        {"lower": 2, "upper": 4, "size": 64, "offset": 128},
    ])
    matrix = memplan.Problem(np.array([[0, 2, 64, 1, -1], [1, 3, 32, 16, -1], [2, 4, 64, 1, 128]], dtype=np.int32))
    columns = memplan.Problem.from_arrays(np.array([0, 1, 2]), [1 + 1, 3, 4], np.array([64, 32, 64], dtype=np.uint64),
                                          alignment=[1, 16, 1], offset=[-1, -1, 128])
    for problem in (dicts, matrix, columns):
        assert problem.buffers == tuples.buffers
    assert tuples.ids == ["0", "1", "2"]
    assert tuples.offsets.tolist() == [-1, -1, 128]
    assert tuples[2].offset == 128 and tuples[0].offset is None and tuples[-1].id == "2"
    assert tuples.lower.dtype == np.int64 and tuples.size.tolist() == [64, 32, 64]
    assert len(tuples) == 3


def test_buffers_keep_their_ids_and_round_trip_through_dicts():
    problem = memplan.Problem([{"id": "conv1", "lower": 0, "upper": 3, "size": 100}], capacity="1KiB", alignment=64)
    assert problem.ids == ["conv1"]
    assert problem.capacity == 1024 and problem.alignment == 64
    assert problem.alignments.tolist() == [64]
    assert memplan.Problem(problem.to_dicts()).buffers == problem.buffers
    problem.capacity = None
    assert problem.capacity is None


def test_an_empty_problem_has_no_load():
    assert len(memplan.Problem()) == 0
    assert memplan.Problem([]).load() == 0


def test_load_and_bounds():
    # a [0,2) 64, b [1,3) 32, c [2,4) 64: ticks 1 and 2 hold 96 bytes.
    problem = memplan.Problem([(0, 2, 64), (1, 3, 32), (2, 4, 64)])
    bounds = memplan.bounds(problem)
    assert problem.load() == bounds.load == 96
    assert bounds.total_size == 160 and bounds.max_live_count == 2
    assert bounds.positional_maximums >= bounds.load
    assert problem.bounds().load == 96 and problem.bounds(positional_maximums=False).positional_maximums == 0
    assert memplan.gap(120, 96) == pytest.approx(0.25)


@pytest.mark.parametrize("buffers, message", [
    ([(0, 0, 1)], "buffer '0' (#0): lifetime [0, 0) is empty"),
    ([(0, 2, -5)], "buffer '0' (#0)"),
    ([(0, 2, 8, 3)], "power of two"),
    ([(0, 2, 1.5)], "buffers[0]: field 'size': expected an integer, got float 1.5"),
    ([(0, 2, 2**70)], "buffers[0]: field 'size': 1180591620717411303424 is outside int64"),
    ([(0, 2)], "buffers[0]: 2 values; expected (lower, upper, size[, alignment[, offset]])"),
    ([{"lower": 0, "upper": 2}], "buffers[0]: missing field 'size'"),
    ([{"lower": 0, "upper": 2, "size": 1, "sise": 2}], "buffers[0]: unknown field 'sise'"),
    ([(0, 2, True)], "expected an integer, got bool"),
    ("0,2,3", "buffers: expected a list of dicts or tuples"),
])
def test_invalid_buffers_raise_input_errors_naming_the_buffer_and_field(buffers, message):
    with pytest.raises(memplan.InputError) as error:
        memplan.Problem(buffers)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError) and isinstance(error.value, memplan.Error)
    assert error.value.code == "invalid argument"


def test_numpy_arrays_must_hold_integers_in_three_to_five_columns():
    with pytest.raises(memplan.InputError, match="a NumPy array of integers, not of float64"):
        memplan.Problem(np.zeros((2, 3)))
    with pytest.raises(memplan.InputError, match=r"shape \(n, 3..5\)"):
        memplan.Problem(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(memplan.InputError, match="size: 2 values, but lower has 3"):
        memplan.Problem.from_arrays([0, 1, 2], [1, 2, 3], [5, 5])


def test_fixed_offsets_that_clash_are_refused():
    with pytest.raises(memplan.InputError, match="fixed"):
        memplan.Problem([(0, 2, 64, 1, 0), (1, 3, 64, 1, 32)])


def test_setters_keep_the_problem_valid():
    problem = memplan.Problem([(0, 2, 64)])
    with pytest.raises(memplan.InputError, match="alignment: 3 is not a power of two"):
        problem.alignment = 3
    assert problem.alignment == 1
    with pytest.raises(memplan.InputError, match="capacity"):
        problem.capacity = "12 parsecs"


def test_validate_says_ok_or_why_with_one_reason_each():
    problem = memplan.Problem([{"id": "a", "lower": 0, "upper": 2, "size": 64, "alignment": 16},
                               {"id": "b", "lower": 1, "upper": 3, "size": 32}], capacity=128)
    good = memplan.validate(problem, [0, 64])
    assert good and good.ok and str(good) == "ok" and good.violation == "valid"
    overlap = memplan.validate(problem, np.array([0, 32]))
    assert not overlap and overlap.first == 0 and overlap.second == 1 and overlap.tick == 1
    assert "'a'" in str(overlap) and "'b'" in str(overlap)
    assert overlap.violation == "overlap"
    assert memplan.validate(problem, [-16, 64]).violation == "negative offset"
    assert memplan.validate(problem, [8, 100]).violation == "misaligned"
    assert memplan.validate(problem, [0, 120]).violation == "exceeds capacity"
    fixed = memplan.Problem([(0, 2, 64, 1, 0)])
    assert memplan.validate(fixed, [64]).violation == "fixed offset moved"
    with pytest.raises(memplan.InputError, match="1 offsets for a problem of 2 buffers"):
        memplan.validate(problem, [0])


def test_plan_objects_compute_the_arena():
    problem = memplan.Problem([(0, 2, 64), (1, 3, 32)])
    plan = memplan.Plan(problem, [0, 64])
    assert plan.arena == 96 and plan.offsets.tolist() == [0, 64] and len(plan) == 2


def test_generate_is_seeded():
    a = memplan.generate("random", 50, seed=7)
    b = memplan.generate("random", 50, seed=7)
    c = memplan.generate("random", 50, seed=8)
    assert a.buffers == b.buffers and a.buffers != c.buffers and len(a) == 50
    with pytest.raises(memplan.InputError, match="shape 'blobs'"):
        memplan.generate("blobs")


def test_numpy_integer_scalars_are_integers_and_huge_unsigned_values_are_refused():
    problem = memplan.Problem([(np.int64(0), np.int32(2), np.uint16(64))], capacity=np.int64(128))
    assert problem.buffers == memplan.Problem([(0, 2, 64)]).buffers and problem.capacity == 128
    with pytest.raises(memplan.InputError, match=r"size\[0\]: 18446744073709551615 is outside int64"):
        memplan.Problem.from_arrays([0], [1], np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(memplan.InputError, match="expected an integer, got float64"):
        memplan.Problem([(0, 2, np.float64(8))])
