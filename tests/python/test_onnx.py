"""ONNX models from Python (memplan built with the ONNX front end): a model
exported with Debian's torch becomes the same problem `memplan extract`
writes, with the CLI's errors. Skipped without the front end or torch."""
import pytest

import memplan

pytestmark = pytest.mark.skipif(not memplan.HAS_ONNX, reason="memplan was built without the ONNX front end")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    torch = pytest.importorskip("torch")

    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.b = torch.nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x):
            y = torch.relu(self.a(x))
            return torch.relu(self.b(y) + y)

    path = tmp_path_factory.mktemp("onnx") / "residual.onnx"
    torch.onnx.export(Residual().eval(), torch.randn(1, 3, 16, 16), str(path), input_names=["x"],
                      output_names=["out"], dynamic_axes={"x": {0: "batch"}})
    return path


def cli_error(completed):
    return [line for line in completed.stderr.splitlines() if line.startswith("memplan: ")][-1][len("memplan: "):]


def test_a_model_is_the_problem_the_cli_extracts(model, cli, tmp_path):
    out = tmp_path / "cli.csv"
    cli("extract", model, "--input", "x=2x3x16x16", "--output", out, expect=0)
    for inputs in ({"x": (2, 3, 16, 16)}, ["x=2x3x16x16"], "x=2x3x16x16"):
        x = memplan.extract(model, inputs=inputs)
        assert memplan.format_problem(x.problem, operators=x.operators) == out.read_text()
    assert x.nodes >= 5 and x.initializers == 4 and x.graph_inputs == 1
    # conv a's output, 2x8x16x16 float32, is one of the buffers; all are 64-byte aligned.
    assert 2 * 8 * 16 * 16 * 4 in x.problem.size.tolist()
    # Each buffer names the node that writes it: its operator, then its name.
    assert len(x.operators) == len(x.problem) and all(x.operators)
    assert any(name.startswith("Conv ") for name in x.operators), x.operators
    assert set(x.problem.alignments.tolist()) == {64}
    result = memplan.plan(x.problem)
    assert memplan.validate(x.problem, result) and result.arena >= x.problem.load()
    kept = memplan.extract(model, inputs={"x": (2, 3, 16, 16)}, keep_constants=True, alignment=128)
    assert set(kept.problem.alignments.tolist()) == {128} and len(kept.problem) >= len(x.problem)


def test_model_errors_are_the_clis(model, cli, tmp_path):
    with pytest.raises(memplan.InputError) as error:
        memplan.extract(model)
    assert str(error.value) == cli_error(cli("extract", model, "--output", tmp_path / "x.csv", expect=1))
    with pytest.raises(memplan.InputError) as error:
        memplan.extract(model, inputs=["x=2xAx16"])
    assert str(error.value) == cli_error(cli("extract", model, "--input", "x=2xAx16", "--output", tmp_path / "x.csv"))
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(model.read_bytes()[:200])
    with pytest.raises(memplan.InputError) as error:
        memplan.extract(truncated, inputs={"x": (1, 3, 16, 16)})
    assert str(error.value) == cli_error(cli("extract", truncated, "--input", "x=1x3x16x16", "--output",
                                             tmp_path / "x.csv"))
    with pytest.raises(memplan.InputError, match="min_size applies to traces"):
        memplan.extract(model, min_size=4096)


def test_works_beside_the_onnx_package(model):
    onnx = pytest.importorskip("onnx")  # python3-onnx shares Debian's libonnx with memplan
    loaded = onnx.load(str(model))
    onnx.checker.check_model(loaded)
    assert memplan.extract(model, inputs={"x": (1, 3, 16, 16)}).nodes == len(loaded.graph.node)


def test_a_range_of_shapes_and_its_upper_bound_are_the_clis(model, cli, tmp_path):
    shapes, bound = memplan.extract_shapes(model, inputs=["x=1..4x3x16x16"])
    assert [given["x"] for given, _ in shapes] == [(1, 3, 16, 16), (2, 3, 16, 16), (4, 3, 16, 16)]
    assert memplan.extract_shapes(model, inputs={"x": ("1..4", 3, 16, 16)})[1].size.tolist() == bound.size.tolist()
    for given, x in shapes:  # each shape is the problem of a plain extract at that shape
        one = memplan.extract(model, inputs=given)
        assert memplan.format_problem(x.problem) == memplan.format_problem(one.problem)
    # The upper bound: every buffer at its largest, the batch-4 shape's here; a plan of it serves every shape.
    assert bound.size.tolist() == shapes[-1][1].problem.size.tolist()
    out = tmp_path / "bound.csv"
    cli("extract", model, "--input", "x=1..4x3x16x16", "--output", out, expect=0)
    assert memplan.format_problem(bound, operators=shapes[0][1].operators) == out.read_text()
    with pytest.raises(memplan.InputError, match="range 4..1 is empty"):
        memplan.extract_shapes(model, inputs=["x=4..1x3x16x16"])


def test_predict_is_the_clis_table(model, cli):
    import json

    result = memplan.predict(model, inputs=["x=1..4x3x16x16"], capacity="200KiB")
    table = json.loads(cli("extract", model, "--input", "x=1..4x3x16x16", "--predict", "--capacity", "200KiB",
                           "--json", expect=0).stdout)
    assert result["capacity"] == table["capacity"] == 200 * 1024
    assert result["upper_bound_activation_bytes"] == table["upper_bound_activation_bytes"]
    assert len(result["shapes"]) == len(table["shapes"]) == 3
    for ours, theirs in zip(result["shapes"], table["shapes"]):
        assert "x=" + "x".join(map(str, ours["inputs"]["x"])) == theirs["inputs"]
        for key in ("weights_bytes", "input_bytes", "activation_bytes", "activation_load_bytes", "total_bytes",
                    "fits"):
            assert ours[key] == theirs[key], key
    # An independent account of one shape: weights are the four conv parameters
    # (float32), the input is the batch's image, activations are a plan of the
    # extracted problem; the total fits exactly when it is within the capacity.
    first = result["shapes"][0]
    assert first["weights_bytes"] == 4 * (8 * 3 * 3 * 3 + 8 + 8 * 8 * 3 * 3 + 8)
    assert first["input_bytes"] == 4 * 1 * 3 * 16 * 16
    x = memplan.extract(model, inputs={"x": (1, 3, 16, 16)})
    assert first["activation_load_bytes"] == x.problem.load() <= first["activation_bytes"]
    assert first["total_bytes"] == first["weights_bytes"] + first["input_bytes"] + first["activation_bytes"]
    fitting = [s for s in result["shapes"] if s["total_bytes"] <= 200 * 1024]
    assert [s["fits"] for s in result["shapes"]] == [s["total_bytes"] <= 200 * 1024 for s in result["shapes"]]
    assert result["largest_fitting"] == (max(fitting, key=lambda s: s["total_bytes"])["inputs"] if fitting else None)
    assert "fits" not in memplan.predict(model, inputs="x=2x3x16x16")["shapes"][0]
    with pytest.raises(memplan.InputError, match="capacity"):
        memplan.predict(model, inputs="x=2x3x16x16", capacity="lots")


def test_a_string_in_a_dict_is_one_spec_as_the_clis_input(model, cli):
    # {'x': '1,4x3x16x16'} is --input x=1,4x3x16x16: two shapes, not one
    # dimension per character.
    from_dict = memplan.predict(model, inputs={"x": "1,4x3x16x16"})
    assert [shape["inputs"] for shape in from_dict["shapes"]] == [{"x": (1, 3, 16, 16)}, {"x": (4, 3, 16, 16)}]
    assert from_dict == memplan.predict(model, inputs=["x=1,4x3x16x16"])
    shapes, bound = memplan.extract_shapes(model, inputs={"x": "1..2x3x16x16"})
    assert [given["x"] for given, _ in shapes] == [(1, 3, 16, 16), (2, 3, 16, 16)]
    assert bound.size.tolist() == shapes[-1][1].problem.size.tolist()
    one = memplan.extract(model, inputs={"x": "2x3x16x16"})
    assert memplan.format_problem(one.problem) == memplan.format_problem(
        memplan.extract(model, inputs={"x": (2, 3, 16, 16)}).problem)
    with pytest.raises(memplan.InputError, match="range 4..1 is empty"):
        memplan.predict(model, inputs={"x": "4..1x3x16x16"})


def test_predict_says_when_no_shape_fits_as_the_cli_exits_2(model, cli):
    import json

    result = memplan.predict(model, inputs="x=1,2x3x16x16", capacity=1024)
    assert result["largest_fitting"] is None and not any(shape["fits"] for shape in result["shapes"])
    completed = cli("extract", model, "--input", "x=1,2x3x16x16", "--predict", "--capacity", "1024", "--json",
                    expect=2)
    assert json.loads(completed.stdout)["shapes"] == [
        {"inputs": "x=" + "x".join(map(str, shape["inputs"]["x"])), **{k: v for k, v in shape.items() if k != "inputs"}}
        for shape in result["shapes"]]
    assert "no shape fits" in completed.stderr
