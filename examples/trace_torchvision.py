#!/usr/bin/env python3
"""Runs a torchvision model's forward pass for a few iterations, marking each
one for memplan's tracer, so that the iterations can be extracted as
planning problems:

    memplan trace --output resnet18.trace -- python3 examples/trace_torchvision.py resnet18
    memplan trace-info resnet18.trace
    memplan extract resnet18.trace --iteration 3 --output resnet18.csv

The model is built with weights=None (nothing is downloaded; the weights do
not change what is allocated). Two untraced warm-up passes come first: the
first passes allocate caches that later ones reuse. Without the tracer
preloaded the script still runs (the marks do nothing) and only reports
times, which is how to measure the tracer's cost.
"""
import argparse
import ctypes
import time


def find_mark():
    try:
        return ctypes.CDLL(None).memplan_mark
    except AttributeError:  # not running under the tracer
        return lambda: None


def build_model(torchvision, name, size):
    """The constructor `name` from torchvision.models or its segmentation
    submodule, untrained (weights=None, and weights_backbone=None where the
    constructor has it, so nothing is downloaded)."""
    import inspect

    for module in (torchvision.models, torchvision.models.segmentation):
        constructor = getattr(module, name, None)
        if callable(constructor):
            break
    else:
        raise SystemExit(f"no torchvision model named {name!r}")
    kwargs = {"weights": None}
    parameters = inspect.signature(constructor).parameters
    if "weights_backbone" in parameters:
        kwargs["weights_backbone"] = None
    if name.startswith("vit_"):
        # Vision transformers fix their input size at construction (it sets
        # the number of patches); any multiple of the patch size works.
        kwargs["image_size"] = size
    return constructor(**kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a torchvision.models (or .segmentation) constructor name, e.g. resnet18")
    parser.add_argument("--iterations", type=int, default=6, help="marked forward passes (default 6)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (default 1: with one thread every iteration repeats exactly)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time passes by wall clock (default) or by this thread's CPU time, which a "
                             "shared machine's other processes do not inflate")
    args = parser.parse_args()

    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    model = build_model(torchvision, args.model, args.size).eval()
    x = torch.randn(args.batch, 3, args.size, args.size)
    mark = find_mark()
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    times = []
    with torch.inference_mode():
        for _ in range(2):
            model(x)
        for _ in range(args.iterations):
            mark()
            start = clock()
            model(x)
            times.append(clock() - start)
        mark()  # closes the last iteration
    times.sort()
    print(f"{args.model}: {args.iterations} forward passes, median {times[len(times) // 2] * 1e3:.2f} ms, "
          f"best {times[0] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
