#!/usr/bin/env python3
"""Traces a torchvision model (weights=None, seeded) to a TorchScript file for
the libtorch allocator tests: make_torchscript.py MODEL SIZE OUTPUT.pt"""
import os
import sys

import torch
import torchvision


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    name, size, output = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, torch.randn(1, 3, size, size))
    # The test's output folder is not made by the build when nothing else is built there.
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    traced.save(output)


if __name__ == "__main__":
    main()
