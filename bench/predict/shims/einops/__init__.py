"""A stand-in for the parts of einops that the benchmarked public programs
use (einsum, rearrange), written for memplan's accuracy harness: einops is
not packaged by Debian. Each call lowers to the same torch operators einops
issues (einsum: one torch.einsum with one letter per axis name; rearrange:
reshape into elementary axes, permute, reshape into the output's groups), so
the storages a recording sees are the ones einops would make."""
import string

import torch

__all__ = ["einsum", "rearrange"]


def einsum(*args):
    """einops.einsum(t1, ..., tn, "a b, b c -> a c"): names become letters."""
    *tensors, pattern = args
    letters = {}

    def letter(name):
        if name not in letters:
            letters[name] = string.ascii_letters[len(letters)]
        return letters[name]

    def side(text):
        return ",".join("".join("..." if name == "..." else letter(name) for name in operand.split())
                        for operand in text.split(","))

    left, right = pattern.split("->")
    return torch.einsum(f"{side(left)}->{side(right)}", *tensors)


def _groups(text):
    """'b s (h d) ...' -> [['b'], ['s'], ['h', 'd'], ['...']]."""
    groups, current = [], None
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            current = []
        elif token == ")":
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    return groups


def rearrange(tensor, pattern, **sizes):
    """einops.rearrange for patterns of named axes, parenthesised groups and
    one '...': reshape to elementary axes, permute, reshape to the groups."""
    left_text, right_text = pattern.split("->")
    left, right = _groups(left_text), _groups(right_text)
    ellipsis_dims = tensor.dim() - (len(left) - (1 if ["..."] in left else 0))
    elementary, known = [], dict(sizes)
    dims = iter(tensor.shape)
    for group in left:
        if group == ["..."]:
            for i in range(ellipsis_dims):
                known[f"...{i}"] = next(dims)
                elementary.append(f"...{i}")
            continue
        size = next(dims)
        unknown = [name for name in group if name not in known]
        product = 1
        for name in group:
            product *= known.get(name, 1)
        if len(unknown) > 1:
            raise ValueError(f"rearrange {pattern!r}: cannot infer {unknown}")
        if unknown:
            known[unknown[0]] = size // product
        elementary.extend(group)
    out = tensor.reshape([known[name] for name in elementary])
    order = []
    shape = []
    for group in right:
        names = [f"...{i}" for i in range(ellipsis_dims)] if group == ["..."] else group
        order.extend(names)
        if group == ["..."]:
            shape.extend(known[name] for name in names)
        else:
            product = 1
            for name in names:
                product *= known[name]
            shape.append(product)
    out = out.permute([elementary.index(name) for name in order])
    return out.reshape(shape)
