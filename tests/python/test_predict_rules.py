"""memplan.predict's CUDA rules (cuda_ops.py) on tiny programs, each against
bytes counted by hand from the tensors' shapes and dtypes; and the order of
the device's requests when a storage address is reused. Skipped without
torch."""
import pytest

import memplan
from memplan.predict import snapshot_writer
from memplan.predict.recorder import Event, Recorder

# memplan.predict.recording is the function (the package's lazy name); importing
# the submodule of the same name here would replace it for every later test.
recording, Recording = memplan.predict.recording, memplan.predict.Recording

torch = pytest.importorskip("torch")
F = torch.nn.functional

WORKSPACE = 32 << 20           # one cuBLAS workspace on sm90 (h100), CUBLAS_WORKSPACE_CONFIG unset
W_F32 = 256 * 128 * 4          # the weight, float32: 131,072
W_BF16 = 256 * 128 * 2         # its bfloat16 cast: 65,536
X_F32 = 64 * 128 * 4           # the input: 32,768
X_BF16 = 64 * 128 * 2          # its cast: 16,384
Y_BF16 = 64 * 256 * 2          # a linear's output in bfloat16: 32,768
Y_F32 = 64 * 256 * 4           # the same, float32: 65,536


def allocations(rec):
    return [e.nbytes for e in rec.recorder.events if e.action == "alloc" and e.device == "cuda"]


@pytest.fixture(autouse=True)
def no_workspace_config(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)


def test_autocast_casts_matmul_inputs_once_per_leaf_weight_and_fp32_ops_up():
    with recording(device="cuda", gpu="h100") as rec:
        w = torch.nn.Parameter(torch.zeros(256, 128, device="cuda"))
        x = torch.zeros(64, 128, device="cuda")
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            y1 = F.linear(x, w)      # casts x and w (w: a leaf that requires grad, cached), bf16 output
            y2 = F.linear(x, w)      # casts x again; w's cast comes from the cache
            s = torch.exp(y2)        # exp runs in float32: y2 cast up, a float32 output
        cached_during = len(rec.recorder.autocast.cache)
    assert (y1.dtype, y2.dtype, s.dtype) == (torch.bfloat16, torch.bfloat16, torch.float32)
    assert cached_during == 0  # cleared when the outermost region exits
    assert allocations(rec) == [W_F32, X_F32, X_BF16, W_BF16, Y_BF16, WORKSPACE, X_BF16, Y_BF16, Y_F32, Y_F32]
    # live at exp's output: w, x, w's cached cast, y1, y2, the workspace, y2's float32 cast and exp's output
    assert rec.peak_allocated_bytes == W_F32 + X_F32 + W_BF16 + 2 * Y_BF16 + WORKSPACE + 2 * Y_F32
    # after: the cache's cast and y2's float32 cast are gone; w, x, y1, y2, s and the workspace stay
    assert rec.recorder.current["cuda"] == W_F32 + X_F32 + 2 * Y_BF16 + Y_F32 + WORKSPACE


def test_autocast_casts_views_of_weights_each_time_and_leaves_disabled_regions_alone():
    with recording(device="cuda", gpu="h100") as rec:
        w = torch.nn.Parameter(torch.zeros(256, 128, device="cuda"))
        x = torch.zeros(64, 128, device="cuda")
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            a = torch.matmul(x, w.t())   # w.t() is a view: its cast is not cached
            b = x @ w.t()                # cast again
            with torch.autocast("cuda", enabled=False):
                c = torch.matmul(x, w.t())   # float32, no casts
    assert (a.dtype, b.dtype, c.dtype) == (torch.bfloat16, torch.bfloat16, torch.float32)
    assert allocations(rec) == [W_F32, X_F32, X_BF16, W_BF16, Y_BF16, WORKSPACE, X_BF16, W_BF16, Y_BF16, Y_F32]
    assert rec.recorder.autocast.casts == 4


def test_autocast_casts_are_saved_for_backward_as_autograd_saves_them():
    # With grad: linear saves its bfloat16 inputs (x's cast for w's gradient),
    # so x's cast outlives the operator; w's cached cast lives with the cache.
    with recording(device="cuda", gpu="h100") as rec:
        w = torch.nn.Parameter(torch.zeros(256, 128, device="cuda"))
        x = torch.zeros(64, 128, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = F.linear(x, w)
        live_with_graph = rec.recorder.current["cuda"]
        del y
    assert live_with_graph == W_F32 + X_F32 + X_BF16 + W_BF16 + Y_BF16 + WORKSPACE
    assert rec.recorder.current["cuda"] == W_F32 + X_F32 + WORKSPACE


def test_autocast_without_a_gpu_is_still_refused():
    with pytest.raises(memplan.predict.PredictionError, match="mixed precision"):
        with recording(device="cuda"):
            torch.autocast("cuda", dtype=torch.bfloat16)


def test_a_reused_storage_address_first_seen_as_an_input_keeps_its_frees_matched():
    # Storage key 7 is allocated and freed in the window; later a storage at
    # the same address appears first as an operator's input (it existed
    # before the recording). It is allocated before the window under a key
    # of its own, and its free matches it, not the earlier storage.
    recorder = Recorder()
    recorder.events = [Event("alloc", 7, 512, "cuda", 0), Event("free", 7, 512, "cuda", 0),
                       Event("alloc", 7, 1024, "cuda", 0, before_window=True), Event("free", 7, 1024, "cuda", 0)]
    events = Recording(recorder).device_events()
    assert [(action, nbytes) for action, _, nbytes, _ in events] == [("alloc", 1024), ("alloc", 512),
                                                                       ("free", 512), ("free", 1024)]
    assert events[0][1] == events[3][1] and events[1][1] == events[2][1] and events[0][1] != events[1][1]
    trace = snapshot_writer.snapshot_dict(events, [()])["device_traces"][0]
    freed = [e["size"] for e in trace if e["action"] == "free_completed"]
    assert freed == [512, 1024]


def index_step():
    """A 1,000 x 64 float32 table (256,000 bytes), 32 int64 indices (256),
    the gathered rows (8,192, freed once summed: the sum's backward does not
    need them), their sum (4) and its gradient (4); the backward's gradient
    of the table is zeros of the table's size into which the rows'
    gradients are accumulated."""
    w = torch.nn.Parameter(torch.zeros(1000, 64, device="cuda"))
    idx = torch.zeros(32, dtype=torch.long, device="cuda")
    w[idx].sum().backward()
    return w


def test_the_index_backward_accumulates_in_place_as_on_cuda():
    with recording(device="cuda", gpu="h100") as rec:
        w = index_step()
        assert w.grad.shape == (1000, 64)
    # the backward's peak: the table, the indices, the sum, its gradient and the table's gradient
    assert rec.peak_allocated_bytes == 256000 + 256 + 4 + 4 + 256000
    # without the rule (no gpu) the meta path's out-of-place index_put adds a second table-sized storage
    with recording(device="cuda") as plain:
        index_step()
    assert plain.peak_allocated_bytes == 256000 + 256 + 4 + 4 + 2 * 256000


def test_an_index_put_outside_the_backward_stays_out_of_place():
    with recording(device="cuda", gpu="h100") as rec:
        x = torch.zeros(1000, 64, device="cuda")
        idx = torch.zeros(32, dtype=torch.long, device="cuda")
        y = x.index_put((idx,), torch.ones(32, 64, device="cuda"), accumulate=True)
    # x, the indices, the values and y: a second table-sized storage, as on CUDA
    assert y.shape == x.shape
    assert rec.peak_allocated_bytes == 2 * 256000 + 256 + 8192
