"""workloads.py — the programs scripts/gpu-check.sh measures, each at a full
size (the GPU run) and a tiny size (the dry run, a couple of steps on the CPU).

A workload is built from random weights with fixed seeds, so that every
allocator runs the same arithmetic on the same data and the losses (or
outputs) can be compared bit for bit. Each one is a list of steps; a step is
one iteration of the program (a training step, an inference request), the
unit memplan marks.

  lm_train_fixed     GPT-2 small (transformers), AdamW, batch 8 x 512 tokens
  lm_train_varlen    the same, sequence length drawn from 128..512 every step
  resnet50_train     torchvision ResNet-50, SGD with momentum, batch 64 x 224^2
  bert_infer         BERT-base, one request at a time, 16..512 tokens
  lm_train_compiled  lm_train_fixed under torch.compile

Where `transformers` is missing (the dry run's machine), the LM and BERT
workloads are built from torch.nn with the same shape of computation
(embeddings, causal or bidirectional self-attention blocks, an LM head), and
the row says which model ran ("model" in the results).

Runs on PyTorch 1.13 (Debian, CPU) and 2.x (the GPU machine): APIs newer
than 1.13 are looked up, never assumed.
"""

import hashlib
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

# name -> (kind, full steps, tiny steps)
WORKLOADS = {
    "lm_train_fixed": ("train", 30, 2),
    "lm_train_varlen": ("train", 30, 3),
    "resnet50_train": ("train", 30, 2),
    "bert_infer": ("infer", 200, 3),
    "lm_train_compiled": ("train", 30, 2),
}


def _transformers():
    try:
        import transformers  # noqa: F401
        return transformers
    except ImportError:
        return None


class TinyDecoderLM(nn.Module):
    """A GPT-shaped decoder from torch.nn: token and position embeddings,
    pre-norm causal self-attention blocks, a tied LM head."""

    def __init__(self, vocab, positions, width, layers, heads):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(positions, width)
        block = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.norm = nn.LayerNorm(width)

    def forward(self, ids):
        length = ids.shape[1]
        x = self.tokens(ids) + self.positions(torch.arange(length, device=ids.device))
        causal = torch.triu(torch.full((length, length), float("-inf"), device=ids.device), diagonal=1)
        x = self.norm(self.blocks(x, mask=causal))
        logits = x @ self.tokens.weight.t()
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


class TinyEncoder(nn.Module):
    """A BERT-shaped encoder from torch.nn: embeddings, post-norm
    bidirectional self-attention blocks; returns the last hidden state."""

    def __init__(self, vocab, positions, width, layers, heads):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(positions, width)
        block = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        return self.blocks(x)


def _eager_config(config_class, **size):
    """A transformers config asking for eager attention, which is
    deterministic (the fused kernels' backward is not); the model's name says
    which attention it got."""
    try:
        config = config_class(attn_implementation="eager", **size)
    except TypeError:
        config = config_class(**size)
    try:
        config._attn_implementation = "eager"
    except (AttributeError, TypeError, ValueError):
        pass
    return config


def _attention(model):
    return getattr(getattr(model, "config", None), "_attn_implementation", None) or "default"


def _lm(tiny):
    t = _transformers()
    if t is None:
        if tiny:
            return TinyDecoderLM(vocab=512, positions=64, width=64, layers=2, heads=2), "torch.nn decoder (tiny)"
        return TinyDecoderLM(vocab=50257, positions=1024, width=768, layers=12, heads=12), "torch.nn decoder"
    size = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64) if tiny else {}
    model = t.GPT2LMHeadModel(_eager_config(t.GPT2Config, **size))
    name = f"transformers GPT2LMHeadModel ({'tiny' if tiny else 'gpt2-small'}, {_attention(model)} attention)"

    class Loss(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            return self.inner(input_ids=ids, labels=ids).loss

    return Loss(model), name


def _encoder(tiny):
    t = _transformers()
    if t is None:
        if tiny:
            return TinyEncoder(vocab=512, positions=64, width=64, layers=2, heads=2), "torch.nn encoder (tiny)"
        return TinyEncoder(vocab=30522, positions=512, width=768, layers=12, heads=12), "torch.nn encoder"
    size = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=256, vocab_size=512,
                max_position_embeddings=64) if tiny else {}
    model = t.BertModel(_eager_config(t.BertConfig, **size))
    name = f"transformers BertModel ({'tiny' if tiny else 'bert-base'}, {_attention(model)} attention)"

    class Hidden(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            return self.inner(input_ids=ids).last_hidden_state

    return Hidden(model), name


class MeanPool(nn.Module):
    """ResNet's global average pool as a mean: the same arithmetic, and its
    backward (an expand) is deterministic, which adaptive_avg_pool2d's is not."""

    def forward(self, x):
        return x.mean(dim=(2, 3), keepdim=True)


class Workload:
    """One workload, built on `device`: call step(i) for i in range(steps).

    step(i) runs iteration i and returns what the allocators' runs are
    compared on: the loss (a float) for training, a digest of the output's
    bytes for inference. `probe(phase)` is called inside each step at the
    points where the memory in use is highest (after the forward pass, after
    the backward pass, after the optimizer step)."""

    def __init__(self, name, device, tiny, seed=0, probe=None):
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
        self.name = name
        self.kind, full_steps, tiny_steps = WORKLOADS[name]
        self.steps = tiny_steps if tiny else full_steps
        self.device = torch.device(device)
        self.tiny = tiny
        self.probe = probe or (lambda phase: None)
        self.lengths = random.Random(seed)
        torch.manual_seed(seed)
        if self.device.type == "cuda":
            self.generator = torch.Generator(device=self.device)
        else:
            self.generator = torch.Generator()
        self.generator.manual_seed(seed + 1)
        if name.startswith("lm_train"):
            self.model, self.model_name = _lm(tiny)
            self.batch, self.length = (2, 16) if tiny else (8, 512)
            self.vocab = 512 if tiny else 50257
        elif name == "resnet50_train":
            import torchvision
            self.model = torchvision.models.resnet50(num_classes=1000)
            self.model.avgpool = MeanPool()
            self.model_name = "torchvision resnet50" + (" (tiny input)" if tiny else "")
            self.batch, self.side = (2, 32) if tiny else (64, 224)
        else:
            self.model, self.model_name = _encoder(tiny)
            self.vocab = 512 if tiny else 30522
            self.min_length, self.max_length = (4, 16) if tiny else (16, 512)
        self.model.to(self.device)
        if self.kind == "train":
            self.model.train()
            if name == "resnet50_train":
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
            else:
                self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        else:
            self.model.eval()
            self.optimizer = None
        self.forward = self.model
        if name == "lm_train_compiled":
            if not hasattr(torch, "compile"):
                raise Unsupported(f"torch.compile needs PyTorch >= 2.0 (this is {torch.__version__})")
            # The dry run checks the compile path with the eager backend; a
            # CPU inductor compile would take minutes.
            backend = "inductor" if self.device.type == "cuda" else "eager"
            self.forward = torch.compile(self.model, backend=backend)

    def _tokens(self, length, batch):
        return torch.randint(0, self.vocab, (batch, length), device=self.device, generator=self.generator)

    def step(self, i):
        if self.kind == "infer":
            length = self.lengths.randint(self.min_length, self.max_length)
            with torch.no_grad():
                out = self.forward(self._tokens(length, 1))
                self.probe("forward")
            return out
        if self.name == "resnet50_train":
            images = torch.randn(self.batch, 3, self.side, self.side, device=self.device, generator=self.generator)
            labels = torch.randint(0, 1000, (self.batch,), device=self.device, generator=self.generator)
            loss = F.cross_entropy(self.model(images), labels)
        else:
            length = self.length
            if self.name == "lm_train_varlen":
                low = 8 if self.tiny else 128
                length = self.lengths.randint(low, self.length)
            loss = self.forward(self._tokens(length, self.batch))
        self.probe("forward")
        loss.backward()
        self.probe("backward")
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.probe("optimizer")
        return loss.detach()

    def release(self):
        """Drops the model, its optimizer state and gradients."""
        self.forward = self.model = self.optimizer = None


class Unsupported(Exception):
    """The workload cannot run with this PyTorch (the row says why)."""


def digest(tensor):
    """The first 16 hex digits of the SHA-256 of a tensor's bytes."""
    data = tensor.detach().to("cpu").contiguous()
    return hashlib.sha256(data.numpy().tobytes()).hexdigest()[:16]
