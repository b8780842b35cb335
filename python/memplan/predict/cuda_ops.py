"""cuda_ops.py — CUDA rules about operators, which a meta recording does not
show and which need torch (cuda_rules.py holds the rules the runner reads
before torch is imported). Each rule names its PyTorch source.
"""
import contextlib

import torch
from torch.overrides import TorchFunctionMode


# Rule: CUDA autocast (aten/src/ATen/autocast_mode.{h,cpp}, PyTorch 1.10 to
# 2.x). Meta tensors ignore autocast (its kernels run only for CUDA
# tensors), so the recording applies CUDA's rules itself, above autograd as
# autocast sits (the casts are differentiable copies that autograd may save):
# - lower-precision ops (the matmul and convolution families) cast each
#   floating input that is not float64 and not yet the region's dtype to it,
#   in argument order, before the op; einsum's matmul is one of them
#   (einsum lowers to bmm, whose inputs autocast casts);
# - fp32 ops (exp, log, pow, sum, norms, softmax, losses, ...) cast
#   lower-precision floating inputs to float32;
# - cached casts (cached_cast): a float32 leaf that requires grad and is not
#   a view, cast to the region's dtype, is cast once per outermost region
#   and kept until it exits (the weight casts of a module called twice are
#   made once).
# Other ops run in their inputs' dtypes, as on meta.

def _lower_precision_ops():
    F = torch.nn.functional
    return {torch.einsum, torch.matmul, torch.mm, torch.bmm, torch.baddbmm, torch.addmm, torch.addbmm, torch.mv,
            torch.addmv, torch.addr, torch.chain_matmul, torch.linalg.multi_dot, torch.prelu, F.linear, F.bilinear,
            F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d,
            torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.Tensor.mm,
            torch.Tensor.bmm, torch.Tensor.mv, torch.Tensor.addmm, torch.Tensor.baddbmm}


def _fp32_ops():
    F, T = torch.nn.functional, torch.Tensor
    return {torch.exp, T.exp, torch.expm1, T.expm1, torch.log, T.log, torch.log1p, T.log1p, torch.log2, T.log2,
            torch.log10, T.log10, torch.reciprocal, T.reciprocal, torch.rsqrt, T.rsqrt, torch.pow, T.pow,
            T.__pow__, torch.acos, torch.asin, torch.cosh, torch.sinh, torch.tan, torch.erfinv,
            torch.sum, T.sum, torch.prod, T.prod, torch.cumsum, T.cumsum, torch.cumprod, T.cumprod,
            torch.norm, T.norm, torch.linalg.vector_norm, torch.linalg.norm, torch.logsumexp, T.logsumexp,
            torch.dist, torch.cdist, torch.renorm, torch.softmax, T.softmax, torch.log_softmax, T.log_softmax,
            F.softmax, F.log_softmax, F.softmin, F.softplus, F.layer_norm, F.group_norm, F.cross_entropy,
            F.nll_loss, F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.kl_div, F.cosine_similarity,
            F.binary_cross_entropy_with_logits, F.poisson_nll_loss, F.margin_ranking_loss, F.soft_margin_loss,
            F.multilabel_margin_loss, F.hinge_embedding_loss, F.triplet_margin_loss, F.cosine_embedding_loss}


class Autocast(TorchFunctionMode):
    """torch.autocast("cuda") for a recording: enter with region(dtype,
    enabled) (fake_cuda's autocast calls it). `casts`: the casts made."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder
        self.regions = []           # (enabled, dtype), innermost last
        self.cache = {}             # id(leaf) -> (leaf, its cast)
        self.casts = 0
        self._lower, self._fp32 = _lower_precision_ops(), _fp32_ops()

    @contextlib.contextmanager
    def region(self, dtype=torch.float16, enabled=True):
        self.regions.append((enabled, dtype or torch.float16))
        try:
            with self:
                yield self
        finally:
            self.regions.pop()
            if not self.regions:
                self.cache.clear()  # the outermost region's exit clears the cast cache

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        enabled, dtype = self.regions[-1] if self.regions else (False, None)
        if enabled and func in self._lower:
            args, kwargs = self._cast((args, kwargs), dtype)
        elif enabled and func in self._fp32:
            args, kwargs = self._cast((args, kwargs), torch.float32, only=(torch.float16, torch.bfloat16))
        return func(*args, **kwargs)

    def _cast(self, value, dtype, only=None):
        if isinstance(value, torch.Tensor):
            return self._cast_tensor(value, dtype, only)
        if isinstance(value, (list, tuple)):
            return type(value)(self._cast(v, dtype, only) for v in value)
        if isinstance(value, dict):
            return {k: self._cast(v, dtype, only) for k, v in value.items()}
        return value

    def _cast_tensor(self, tensor, dtype, only):
        if (not tensor.is_floating_point() or tensor.dtype in (dtype, torch.float64)
                or (only is not None and tensor.dtype not in only)
                or tensor.device.type != "meta" or self.recorder.logical_device(tensor) != "cuda"):
            return tensor
        cacheable = (dtype != torch.float32 and tensor.dtype == torch.float32 and tensor.requires_grad
                     and tensor.is_leaf and not tensor._is_view())
        if cacheable and id(tensor) in self.cache:
            return self.cache[id(tensor)][1]
        self.casts += 1
        cast = tensor.to(dtype)
        if cacheable:
            self.cache[id(tensor)] = (tensor, cast)
        return cast


class IndexBackwardInPlace:
    """Rule: indexing's backward accumulates in place on CUDA
    (tools/autograd/derivatives.yaml, `index.Tensor`: the gradient is
    index_backward(grad.new_zeros(self's sizes), indices, grad);
    torch/csrc/autograd/FunctionsManual.cpp, index_backward: an in-place
    accumulating _index_put_impl_ on those zeros, unless a tensor is
    subclass-like, then the out-of-place index_put). Under a dispatch mode
    every tensor is subclass-like, so a recording would see a second
    gradient-sized storage (the out-of-place result) that CUDA never makes
    (102,400,000 bytes for the embedding of a 10,000 x 2,560 table). In the
    backward, an accumulating index_put whose `self` is the storage the
    previous operator allocated (the zeros) runs in place instead."""

    def kernel(self, recorder, name, args, kwargs):
        accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        if name != "index_put" or not recorder.in_backward or not accumulate:
            return None
        target = args[0]
        last = next((e for e in reversed(recorder.events) if e.action == "alloc"), None)
        if last is None or last.key != _storage_key(target):
            return None
        return _index_put_in_place

    def after_operator(self, recorder, name, device):
        pass


def _index_put_in_place(target, indices, values, accumulate=False):
    return target.index_put_(indices, values, accumulate)


def _storage_key(tensor):
    storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage().untyped()
    return storage._cdata
