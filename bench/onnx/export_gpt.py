"""Exports a GPT-style decoder built from torch.nn layers to ONNX, with the
batch and the sequence length as dynamic axes, for `memplan extract
--predict` (docs/benchmarks-capture.md, "Memory before the run").

    /usr/bin/python3 bench/onnx/export_gpt.py --out gpt.onnx [--layers 12 --d-model 768 --heads 12]
    memplan extract gpt.onnx --input ids=1,4,16x128..1024 --predict --capacity 4GiB

Token and position embeddings, pre-norm causal self-attention blocks
(torch.nn.TransformerEncoderLayer, GELU, 4x feed-forward), a final norm and a
language-model head tied to no other weight; random weights (no download),
eval mode, float32. The defaults are GPT-2 small's sizes; with its own head
(GPT-2 ties it to the token embedding) the model has 163M parameters and
the file is about 340 MB."""
import argparse
import sys

import torch


class GPT(torch.nn.Module):
    def __init__(self, vocab, context, d_model, heads, layers):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d_model)
        self.pos = torch.nn.Embedding(context, d_model)
        layer = torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.norm = torch.nn.LayerNorm(d_model)
        self.head = torch.nn.Linear(d_model, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        i = torch.arange(n)
        causal = torch.zeros(n, n).masked_fill(i.unsqueeze(0) > i.unsqueeze(1), float("-inf"))
        x = self.tok(ids) + self.pos(i.unsqueeze(0).expand_as(ids))
        return self.head(self.norm(self.blocks(x, mask=causal)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--context", type=int, default=1024, help="positions the model has embeddings for")
    parser.add_argument("--opset", type=int, default=14)
    args = parser.parse_args()
    if args.d_model % args.heads:
        parser.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}")
    torch.manual_seed(0)
    model = GPT(args.vocab, args.context, args.d_model, args.heads, args.layers).eval()
    ids = torch.randint(0, args.vocab, (2, 16))
    # Not under no_grad: in eval mode with grad off, torch 1.13's attention
    # takes a fused fast path that has no ONNX export.
    torch.onnx.export(model, (ids,), args.out, input_names=["ids"], output_names=["logits"],
                      opset_version=args.opset,
                      dynamic_axes={"ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}})
    parameters = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, vocab {args.vocab}, "
          f"{parameters / 1e6:.1f}M parameters", file=sys.stderr)


if __name__ == "__main__":
    main()
