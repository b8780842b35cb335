#!/usr/bin/env python3
"""Trains a small model for a few optimizer steps, one marked iteration per
step, so that allocators can be compared on step time and on the weights
they end with:

    memplan run --stats -- /usr/bin/python3 examples/train_loop.py resnet18
    memplan run --stats -- /usr/bin/python3 examples/train_loop.py mobilenet_v2 --optimizer adam --threads 2
    memplan run --stats -- /usr/bin/python3 examples/train_loop.py transformer --accumulate 2
    memplan run --stats -- /usr/bin/python3 examples/train_loop.py resnet18 --eval-every 3 --keyed
    memplan run --stats -- /usr/bin/python3 examples/train_loop.py resnet18 --loader-workers 2

MODEL is a torchvision.models constructor (resnet18, mobilenet_v2,
squeezenet1_1, ...; weights=None, 10 classes) trained on --batch images of
--size px, or `transformer`: a token embedding, a torch.nn.TransformerEncoder
(d_model 64, 4 heads, 2 layers) and a linear head over the mean token,
trained on --batch sequences of --tokens tokens (a fixed length).

Everything that decides the weights is fixed: the model from
torch.manual_seed(--seed), the data from a seed per sample (a synthetic
dataset read through a torch DataLoader in a fixed order; with
--loader-workers N, N worker processes started by fork), the number of torch
threads. Two runs with the same arguments must end with the same weights
bytes under any allocator.

A step is: zero the gradients (kept, set_to_none=False, as optimizer state
is: memory that lives from the first step to the end), --accumulate
micro-batches each run forward and backward, one optimizer step (SGD with
momentum 0.9, or Adam). memplan_mark() is called before every step and once
after the last, so each optimizer step is one iteration; the first --warmup
steps are untimed. With --eval-every N an evaluation pass (eval mode,
no_grad, a fixed batch) follows every N-th step as an iteration of its own;
--keyed marks steps with memplan_mark_key(1) and evaluation passes with
memplan_mark_key(2).

The last line is a JSON summary (examples/marks.py): step time (median, p99;
data loading included), minor faults per timed step, peak RSS, the requests
memplan served during the timed steps, and the SHA-256 of the final weights
(every parameter and buffer, in state_dict order) and of the evaluation
outputs. --save-output writes the final weights' bytes in that order.
"""
import argparse
import json
import sys

from marks import Meter, bytes_hash, mark

NUM_CLASSES = 10
VOCABULARY = 1000


def build_model(torch, torchvision, name):
    if name == "transformer":
        d_model = 64

        class Classifier(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embedding = torch.nn.Embedding(VOCABULARY, d_model)
                layer = torch.nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=4 * d_model,
                                                         batch_first=True)
                self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2)
                self.head = torch.nn.Linear(d_model, NUM_CLASSES)

            def forward(self, ids):
                return self.head(self.encoder(self.embedding(ids)).mean(dim=1))

        return Classifier()
    constructor = getattr(torchvision.models, name, None)
    if not callable(constructor):
        raise SystemExit(f"train_loop.py: no torchvision model named {name!r} (or use 'transformer')")
    return constructor(weights=None, num_classes=NUM_CLASSES)


def make_dataset(torch, args):
    """Sample i comes from its own generator, seeded from --seed and i, so
    that worker processes produce exactly what the main process would."""

    class Synthetic(torch.utils.data.Dataset):
        def __init__(self, length):
            self.length = length

        def __len__(self):
            return self.length

        def __getitem__(self, i):
            generator = torch.Generator().manual_seed(args.seed * 1_000_003 + i)
            if args.model == "transformer":
                x = torch.randint(0, VOCABULARY, (args.tokens,), generator=generator)
            else:
                x = torch.randn(3, args.size, args.size, generator=generator)
            return x, i % NUM_CLASSES

    steps = args.warmup + args.steps
    return Synthetic(steps * args.accumulate * args.batch)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a torchvision.models constructor name (e.g. resnet18) or 'transformer'")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                        help="SGD with momentum 0.9 and lr 0.01 (default), or Adam with lr 0.001")
    parser.add_argument("--batch", type=int, default=8, help="samples per micro-batch (default 8)")
    parser.add_argument("--size", type=int, default=64, help="image height and width in px (default 64)")
    parser.add_argument("--tokens", type=int, default=64, help="transformer: tokens per sequence (default 64)")
    parser.add_argument("--accumulate", type=int, default=1,
                        help="micro-batches per optimizer step, gradients accumulated (default 1)")
    parser.add_argument("--eval-every", type=int, default=0,
                        help="an evaluation pass after every N-th step (default 0: none)")
    parser.add_argument("--loader-workers", type=int, default=0,
                        help="DataLoader worker processes, started by fork (default 0: load in the main process)")
    parser.add_argument("--steps", type=int, default=10, help="timed optimizer steps (default 10)")
    parser.add_argument("--warmup", type=int, default=4,
                        help="untimed steps first (default 4: memplan profiles 2 and plans)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the data (default 0)")
    parser.add_argument("--keyed", action="store_true",
                        help="mark steps with memplan_mark_key(1) and evaluation passes with memplan_mark_key(2)")
    parser.add_argument("--save-output", metavar="PATH", help="write the final weights' bytes to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args()
    if (args.batch < 1 or args.size < 8 or args.tokens < 1 or args.accumulate < 1 or args.eval_every < 0
            or args.loader_workers < 0 or args.steps < 1 or args.warmup < 0 or args.threads < 1):
        parser.error("--batch, --tokens, --accumulate, --steps and --threads must be positive, --size at least 8, "
                     "--eval-every, --loader-workers and --warmup not negative")

    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = build_model(torch, torchvision, args.model).train()
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()
    dataset = make_dataset(torch, args)
    eval_x = torch.stack([dataset[i][0] for i in range(args.batch)])  # the first batch, seen again in eval mode
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=False, num_workers=args.loader_workers,
        multiprocessing_context="fork" if args.loader_workers else None)
    batches = iter(loader)

    meter = Meter(warmup=args.warmup)
    eval_outputs = []
    for step in range(args.warmup + args.steps):
        meter.begin_pass(1 if args.keyed else None)
        optimizer.zero_grad(set_to_none=False)
        for _ in range(args.accumulate):
            x, y = next(batches)
            loss = loss_fn(model(x), y) / args.accumulate
            loss.backward()
        optimizer.step()
        elapsed_ms = meter.end_pass()
        if not args.quiet:
            print(f"step {step + 1}{' (warm-up)' if step < args.warmup else ''}: {elapsed_ms:.1f} ms, "
                  f"loss {loss.item() * args.accumulate:.4f}", flush=True)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            mark(2 if args.keyed else None)  # the evaluation pass is an iteration of its own
            model.eval()
            with torch.no_grad():
                eval_outputs.append(model(eval_x).contiguous().numpy().tobytes())
            model.train()
    del batches  # stops the loader's workers before the closing mark
    summary = meter.finish()

    weights = [t.detach().contiguous().numpy().tobytes() for t in model.state_dict().values()]
    digest = bytes_hash(weights)
    if args.save_output:
        with open(args.save_output, "wb") as f:
            for chunk in weights:
                f.write(chunk)
    print(f"{args.model} {args.optimizer} batch {args.batch} x {args.accumulate} threads {args.threads}: "
          f"median {summary['median_ms']:.1f} ms, p99 {summary['p99_ms']:.1f} ms per step over {args.steps} steps; "
          f"weights sha256 {digest}")
    print(json.dumps({"model": args.model, "optimizer": args.optimizer, "threads": args.threads,
                      "output_sha256": digest, "eval_sha256": bytes_hash(eval_outputs), **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
