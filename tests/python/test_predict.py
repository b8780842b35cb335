"""memplan.predict: a PyTorch step recorded on the meta device, checked
against live bytes counted by hand from the tensors' shapes; unchanged GPU
scripts through `python3 -m memplan.predict` and `memplan predict`; the
written snapshot read back by `memplan snapshot`. Skipped without torch."""
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import memplan

torch = pytest.importorskip("torch")
nn = torch.nn

F32 = 4

# The hand-counted MLP: batch B, Linear(IN, H), ReLU, Linear(H, OUT); the
# activations dominate so that the order of the step's peaks is plain.
B, IN, H, OUT = 1024, 16, 64, 16
PARAMS = F32 * (IN * H + H + H * OUT + OUT)  # 8,512
X = F32 * B * IN                             # the input
HIDDEN = F32 * B * H                         # h1 (Linear1's output), r (ReLU's), and their grads
OUTPUT = F32 * B * OUT                       # o (Linear2's output) and the gradient g given to backward
GRAD2 = F32 * (H * OUT + OUT)                # Linear2's weight and bias gradients


def mlp_step(marks):
    """The step, in code written for a GPU; `marks(name)` is called at the
    points the test checks."""
    model = nn.Sequential(nn.Linear(IN, H), nn.ReLU(), nn.Linear(H, OUT)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(B, IN, device="cuda")
    marks("before forward")
    torch.cuda.reset_peak_memory_stats()
    o = model(x)
    marks("after forward")
    g = torch.ones_like(o)
    o.backward(g)
    marks("after backward")
    optimizer.step()
    marks("after step")
    return model, x, o, g


def record_mlp():
    seen = {}

    def marks(name):
        seen[name] = (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated())
    with memplan.predict.recording(device="cuda") as rec:
        kept = mlp_step(marks)
    del kept
    return rec, seen


@pytest.fixture(scope="module")
def mlp():
    return record_mlp()


def test_forward_peak_is_the_input_and_two_hidden_activations(mlp):
    # At ReLU, h1 and its output r are both live; h1 is freed right after (nothing saves it).
    _, seen = mlp
    assert seen["before forward"][0] == PARAMS + X
    assert seen["after forward"][1] == PARAMS + X + 2 * HIDDEN


def test_saved_activations_live_until_backward_frees_them(mlp):
    # After the forward only autograd holds r (ReLU's saved output); the
    # backward frees it and leaves one gradient per parameter.
    _, seen = mlp
    assert seen["after forward"][0] == PARAMS + X + HIDDEN + OUTPUT
    assert seen["after backward"][0] == 2 * PARAMS + X + 2 * OUTPUT
    assert seen["after step"][0] == 2 * PARAMS + X + 2 * OUTPUT  # SGD without momentum updates in place


def test_step_peak_is_the_relu_backward(mlp):
    # ReLU's backward holds r, its incoming gradient and its result at once,
    # after Linear2's gradients are accumulated; nothing else in the step is larger.
    rec, _ = mlp
    expected = PARAMS + X + 2 * OUTPUT + 3 * HIDDEN + GRAD2
    assert rec.peak_allocated_bytes == expected
    assert rec.host_peak_bytes == PARAMS  # the model was built on the host, then moved


def test_backward_operators_are_recorded_with_the_backward_line(mlp):
    rec, _ = mlp
    lines = {(os.path.basename(f), line) for stack in rec.recorder.stacks for f, line, _ in stack[:1]}
    backward_line = mlp_step.__code__.co_firstlineno + 11  # `o.backward(g)`
    assert ("test_predict.py", backward_line) in lines
    # On meta the autograd engine runs the backward on the calling thread, so
    # the thread-local dispatch mode sees it; the recorder checks which ran.
    assert rec.recorder.threads == {threading.get_ident()}


def test_everything_is_restored_after_the_recording(mlp):
    assert not torch.cuda.is_available()
    assert torch.zeros(3).device.type == "cpu"
    with pytest.raises((AssertionError, RuntimeError)):
        torch.zeros(2).cuda()


def test_the_snapshot_opens_in_memplan_snapshot_with_the_same_peak(mlp, cli, tmp_path):
    rec, _ = mlp
    path = rec.snapshot(tmp_path / "p.pickle")
    report = json.loads(cli("snapshot", path, "--json", expect=0).stdout)
    assert report["warnings"] == []
    (device,) = report["devices"]
    assert device["warnings"] == []
    assert device["recorded"]["peak_allocated_bytes"] == rec.peak_allocated_bytes
    assert device["recorded"]["start_reserved_bytes"] == 0
    caching = device["simulated"]["caching"]["peak_reserved_bytes"]
    assert caching >= rec.peak_allocated_bytes
    summary = rec.summary(capacity=caching)
    (row,) = summary["devices"]
    assert row["peak_reserved_bytes"] == caching and row["fits"] and row["headroom_bytes"] == 0
    assert rec.summary(capacity=caching - 1)["devices"][0]["fits"] is False


def test_zero_byte_storages_allocate_nothing():
    with memplan.predict.recording(device="cuda") as rec:
        empty = torch.empty(0, 5, device="cuda")
        full = torch.empty(10, device="cuda")
    del empty, full
    assert [e.nbytes for e in rec.recorder.events if e.action == "alloc"] == [40]


def test_host_model_moved_with_to_counts_only_device_bytes():
    with memplan.predict.recording(device="cuda") as rec:
        model = nn.Linear(1000, 1000)           # 4,004,000 bytes on the host
        model.to("cuda")                          # the same on the device; the host copy freed
        torch.cuda.synchronize()
        device_now = torch.cuda.memory_allocated()
    del model
    assert device_now == 4_004_000
    assert rec.peak_allocated_bytes == 4_004_000
    assert rec.host_peak_bytes == 4_004_000


def test_old_onnx_predict_call_still_works(tmp_path):
    if not memplan.HAS_ONNX:
        pytest.skip("memplan was built without the ONNX front end")
    path = tmp_path / "linear.onnx"
    torch.onnx.export(nn.Linear(8, 4).eval(), torch.randn(1, 8), str(path), input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    assert callable(memplan.predict)
    assert memplan.predict(path, inputs="x=1..4x8") == memplan._memplan.predict(path, inputs="x=1..4x8")


def test_import_memplan_does_not_import_torch():
    code = "import sys, memplan; print('torch' in sys.modules, memplan.predict.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "memplan.predict"]


# ---- unchanged scripts -------------------------------------------------------------------------

GPU_SCRIPT = textwrap.dedent("""\
    import sys
    import torch
    import torch.nn as nn
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    torch.cuda.set_device(0)
    print("on", torch.cuda.get_device_name(torch.cuda.current_device()))
    steps = int(sys.argv[1])
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16)).cuda()
    optimizer = torch.optim.Adam(model.parameters())
    stream = torch.cuda.Stream()
    for step in range(steps):
        with torch.cuda.stream(stream):
            x = torch.randn(1024, 16).to("cuda", non_blocking=True)
            loss = model(x).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if loss.item() > 1e9 or bool(torch.isnan(loss)):
            raise SystemExit("diverged")
        print(step, float(loss), torch.cuda.max_memory_allocated())
    """)


def run_module(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "memplan.predict", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


@pytest.fixture(scope="module")
def gpu_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("scripts") / "train.py"
    path.write_text(GPU_SCRIPT)
    return path


def test_an_unchanged_gpu_script_runs_and_reads_placeholders(gpu_script):
    completed = run_module("--json", gpu_script, 3)
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["iterations"] == 3
    assert result["placeholder_reads"] == 3 * 3  # .item(), bool(), float() per step
    (device,) = result["devices"]
    # Adam: params, grads and two moments (4 x 8,512) plus the step's activations.
    assert device["peak_allocated_bytes"] > 4 * 8512
    assert device["peak_reserved_bytes"] >= device["peak_allocated_bytes"]
    assert device["expandable_segments_peak_reserved_bytes"] >= device["peak_allocated_bytes"]
    assert device["arena_bytes"] >= device["peak_allocated_bytes"]
    assert result["host_peak_bytes"] >= 8512
    assert "on memplan predicted GPU" in completed.stderr  # the script's prints, out of the JSON


def test_steps_stops_after_n_optimizer_steps_and_capacity_says_it_does_not_fit(gpu_script):
    completed = run_module("--steps", 2, "--capacity", "1KiB", gpu_script, 50)
    assert completed.returncode == 2, completed.stderr
    assert "operators, 2 iterations marked" in completed.stdout
    assert "capacity 1.00 KiB (1,024 bytes): does NOT fit" in completed.stdout


def test_the_module_and_the_cli_agree(gpu_script, cli, tmp_path):
    module = run_module("--json", "--capacity", "1MiB", gpu_script, 2)
    completed = cli("predict", "--json", "--capacity", "1MiB", "--output", tmp_path / "p.pickle", "--",
                    sys.executable, gpu_script, 2)
    assert module.returncode == completed.returncode == 2, module.stderr + completed.stderr
    assert "memplan: the prediction does not fit the capacity" in completed.stderr
    module, command = json.loads(module.stdout), json.loads(completed.stdout)
    for result in (module, command):
        result.pop("snapshot")
        result.pop("script")
    assert command == module
    assert module["devices"][0]["fits"] is False
    assert module["devices"][0]["headroom_bytes"] == (1 << 20) - module["devices"][0]["peak_reserved_bytes"]
    report = json.loads(cli("snapshot", tmp_path / "p.pickle", "--json", expect=0).stdout)
    assert report["devices"][0]["recorded"]["peak_allocated_bytes"] == module["devices"][0]["peak_allocated_bytes"]


def test_bad_options_are_refused_before_the_script_runs(gpu_script):
    for args, message in ((("--gpu", "v100"), "gpu 'v100': expected one of a100, h100"),
                          (("--capacity", "lots"), "capacity 'lots': expected bytes such as 24GiB"),
                          (("--sweep", "batch"), "--sweep batch: expected NAME=V1,V2,...")):
        completed = run_module(*args, gpu_script, 1)
        assert completed.returncode == 1
        assert message in completed.stderr
        assert "on memplan" not in completed.stdout + completed.stderr


def test_a_data_dependent_operator_fails_with_the_scripts_line(tmp_path):
    script = tmp_path / "mask.py"
    script.write_text("import torch\nx = torch.randn(100, device='cuda')\ny = x[x > 0]\n")
    completed = run_module(script)
    assert completed.returncode == 1
    assert "aten.index.Tensor with a boolean mask" in completed.stderr
    assert f"{script}:3" in completed.stderr
    assert "depends on the input's values" in completed.stderr


def test_data_dependent_and_unsupported_operators_name_the_line():
    x = torch.randn(8, 8, device="meta")
    for call, words in ((lambda: torch.nonzero(x), "aten.nonzero"), (lambda: torch.unique(x), "unique"),
                        (lambda: torch.mode(x), "no meta kernel")):
        with pytest.raises(memplan.predict.PredictionError) as error:
            with memplan.predict.recording(device="cuda"):
                call()
        assert words in str(error.value)
        assert f"test_predict.py:{call.__code__.co_firstlineno} in <lambda>" in str(error.value)
    assert not torch.cuda.is_available()  # restored after the error too


def test_tolist_and_numpy_return_placeholders_and_are_counted():
    with pytest.warns(UserWarning, match="values are not computed: 2 reads"):
        with memplan.predict.recording(device="cuda") as rec:
            x = torch.randn(2, 3, device="cuda")
            assert x.tolist() == [[0.0] * 3] * 2
            assert x.numpy().shape == (2, 3)
    assert rec.placeholder_reads == 2


def test_allocator_settings_follow_pytorch_cuda_alloc_conf(mlp, cli, tmp_path):
    rec, _ = mlp
    settings = memplan.predict.allocator_settings("expandable_segments:True,max_split_size_mb:64,"
                                                  "roundup_power2_divisions:[256:1,>:4]")
    assert settings["expandable_segments"] is True and settings["max_split_size"] == 64 << 20
    assert settings["roundup_power2_divisions"]["256"] == 1 and settings["roundup_power2_divisions"]["512"] == 4
    path = rec.snapshot(tmp_path / "e.pickle", alloc_conf="expandable_segments:True")
    report = json.loads(cli("snapshot", path, "--json", expect=0).stdout)
    assert report["format"] == "newer" and report["devices"][0]["warnings"] == []


def test_a_convolution_step_has_gradients_of_the_parameters_shapes():
    # torch 1.13 has no meta convolution_backward; the recorder supplies one.
    with memplan.predict.recording(device="cuda") as rec:
        conv = nn.Conv2d(3, 8, 3).cuda()            # weight 8x3x3x3, bias 8: 896 bytes
        x = torch.randn(4, 3, 16, 16, device="cuda")  # 12,288 bytes
        loss = conv(x).sum()                          # the 4x8x14x14 output (25,088 bytes) is not saved
        loss.backward()
        after = torch.cuda.memory_allocated()
    # Parameters, their gradients, x and the loss: backward()'s gradient of the
    # loss died when it returned, and memory_allocated() sees that at once.
    assert after == 2 * 896 + 12288 + 4
    assert [tuple(p.grad.shape) for p in conv.parameters()] == [(8, 3, 3, 3), (8,)]
    # The peak is the sum's moment: the output is live until its sum exists;
    # the backward adds only the sum's gradient and the parameters' (4 + 896).
    assert rec.peak_allocated_bytes == 896 + 12288 + 25088 + 4


# ---- CUDA rules ------------------------------------------------------------------------------

def test_cublas_workspace_sizes_follow_the_gpu_and_cublas_workspace_config():
    size = memplan.predict.cuda_rules.cublas_workspace_bytes
    assert size((9, 0)) == 32 << 20                     # sm90: 4096 KiB x 8
    assert size((8, 0)) == 4096 * 1024 * 2 + 16 * 1024 * 8
    assert size((9, 0), ":4096:2:16:8") == 8_519_680    # SIZE KiB x COUNT, summed
    assert size((8, 0), ":16:8") == 131_072
    assert size((8, 0), "nonsense") == 8_519_680         # unparseable: the default
    with pytest.raises(ValueError, match="expected one of a100, h100"):
        memplan.predict.cuda_rules.gpu_spec("v100")


def test_a_training_step_holds_two_cublas_workspaces(monkeypatch):
    # One per (handle, stream): the program's thread at the forward's first
    # matmul and the autograd engine's at the backward's; both before the
    # ReLU backward's peak, both kept.
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    expected = PARAMS + X + 2 * OUTPUT + 3 * HIDDEN + GRAD2
    for gpu, workspace in (("h100", 32 << 20), ("a100", 8_519_680)):
        with memplan.predict.recording(device="cuda", gpu=gpu) as rec:
            kept = mlp_step(lambda name: None)
            assert torch.cuda.get_device_capability() == memplan.predict.cuda_rules.GPUS[gpu]["capability"]
        del kept
        assert rec.peak_allocated_bytes == expected + 2 * workspace
        assert rec.summary()["cuda_rules"] == {"cublas_workspace_bytes": workspace, "cublas_workspaces": 2}
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    with memplan.predict.recording(device="cuda", gpu="h100") as rec:
        kept = mlp_step(lambda name: None)
    del kept
    assert rec.peak_allocated_bytes == expected + 2 * 131_072


SWEEP_SCRIPT = "import sys, torch\nblock = torch.empty(int(sys.argv[1]), 262144, device='cuda')\n"


def test_a_sweep_predicts_each_value_and_names_the_largest_that_fits(tmp_path, cli):
    script = tmp_path / "sweep.py"
    script.write_text(SWEEP_SCRIPT)
    completed = run_module("--json", "--capacity", "24MiB", "--sweep", "mib=1,4,32", script, "{mib}")
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    rows = result["results"]
    assert [r["value"] for r in rows] == ["1", "4", "32"]
    assert [r["devices"][0]["peak_allocated_bytes"] for r in rows] == [1 << 20, 4 << 20, 32 << 20]
    fitting = [r["value"] for r in rows if r["devices"][0]["peak_reserved_bytes"] <= 24 << 20]
    assert fitting and result["largest_fitting"] == max(fitting, key=int)
    # The CLI hands --sweep over (the runner refuses this one before importing torch).
    missing = cli("predict", "--sweep", "batch=1,2", "--", sys.executable, script, "{mib}")
    assert missing.returncode == 1 and "the command has no {batch} to substitute" in missing.stderr


def test_meta_tensors_from_before_the_recording_are_allocated_before_the_window(cli, tmp_path):
    x = torch.randn(1000, device="meta")                 # 4,000 bytes, made outside
    with memplan.predict.recording(device="cuda") as rec:
        y = x * 2                                         # 4,000 bytes more
    del y
    assert rec.peak_allocated_bytes == 8000
    events = rec.device_events()
    assert [(e[0], e[2], e[3]) for e in events[:2]] == [("alloc", 4000, 0), ("alloc", 4000, events[1][3])]
    report = json.loads(cli("snapshot", rec.snapshot(tmp_path / "b.pickle"), "--json", expect=0).stdout)
    assert report["devices"][0]["warnings"] == []
    assert report["devices"][0]["recorded"]["peak_allocated_bytes"] == 8000


def test_mixed_precision_is_refused_with_the_line_and_allowed_disabled():
    linear = nn.Linear(8, 8)
    for enter in (lambda: torch.autocast("cuda", dtype=torch.bfloat16), lambda: torch.cuda.amp.autocast(),
                  lambda: torch.cuda.amp.GradScaler()):
        with pytest.raises(memplan.predict.PredictionError, match="mixed precision is not predicted yet") as error:
            with memplan.predict.recording(device="cuda"):
                enter()
        assert f"test_predict.py:{enter.__code__.co_firstlineno}" in str(error.value)
    with memplan.predict.recording(device="cuda") as rec:
        model = linear.cuda()
        scaler = torch.cuda.amp.GradScaler(enabled=False)
        with torch.autocast("cuda", enabled=False):
            loss = model(torch.randn(4, 8, device="cuda")).sum()
        scaler.scale(loss).backward()
    assert rec.peak_allocated_bytes > 0
    assert torch.autocast.__module__ == "torch.amp.autocast_mode"  # the real one again


def test_host_scalars_stay_real_and_mix_with_device_tensors():
    with memplan.predict.recording(device="cuda") as rec:
        scale = torch.tensor(2.0)                      # one element on the host: real
        x = torch.randn(3, device="cuda")
        y = x * scale
        text = repr(torch.tensor([1.0]))               # printing a real tensor reads its values
        linear = nn.Linear(3, 3).cuda()
        optimizer = torch.optim.Adam(linear.parameters())
        linear(y).sum().backward()
        optimizer.step()
        step = optimizer.state[linear.weight]["step"]
        allocated = torch.cuda.memory_allocated()
    assert scale.item() == 2.0 and text == "tensor([1.])" and step.item() == 1.0
    assert y.device.type == "meta"
    assert allocated == 12 + 12 + 4 * 48  # x, y; weight and bias with their grads and Adam's two moments
    assert rec.placeholder_reads == 0


def test_a_storage_resized_in_place_is_a_new_block_then_the_old_freed(cli, tmp_path):
    with memplan.predict.recording(device="cuda") as rec:
        a = torch.randn(10, device="cuda")                # 40 bytes
        c = torch.empty(0, device="cuda")                 # nothing
        torch.add(a, a, out=c)                            # c grows to 40
        c.resize_(100)                                    # 400: 40 + 40 + 400 live at once, then the 40 freed
        after = torch.cuda.memory_allocated()
    del a, c
    assert after == 40 + 400
    assert rec.peak_allocated_bytes == 40 + 40 + 400
    assert [(e.action, e.nbytes) for e in rec.recorder.events if e.device == "cuda"] == [
        ("alloc", 40), ("alloc", 40), ("alloc", 400), ("free", 40)]
    report = json.loads(cli("snapshot", rec.snapshot(tmp_path / "r.pickle"), "--json", expect=0).stdout)
    assert report["devices"][0]["warnings"] == []
    assert report["devices"][0]["recorded"]["peak_allocated_bytes"] == 480


def test_a_data_loader_with_workers_loads_in_the_process():
    from torch.utils.data import DataLoader, TensorDataset
    real_init = DataLoader.__init__
    with memplan.predict.recording(device="cuda") as rec:
        dataset = TensorDataset(torch.randn(64, 8), torch.zeros(64, 2))
        loader = DataLoader(dataset, batch_size=16, num_workers=2, persistent_workers=True, pin_memory=True)
        batches = [(x.cuda(), y.cuda()) for x, y in loader]
        on_device = torch.cuda.memory_allocated()
    del batches
    assert len(loader) == 4 and loader.num_workers == 0
    assert on_device == 4 * (16 * 8 * 4 + 16 * 2 * 4)
    assert rec.host_peak_bytes >= 64 * 8 * 4 + 64 * 2 * 4
    assert DataLoader.__init__ is real_init
