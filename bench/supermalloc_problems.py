#!/usr/bin/env python3
"""Write OmniMalloc's two adversarial benchmark problems as MiniMalloc CSV.

Usage: supermalloc_problems.py OMNIMALLOC_CHECKOUT OUT_DIR

Runs the problem generators of an OmniMalloc checkout (its pinwheel source
with 101 buffers and its guillotine tiling source with 100, the variants its
published thirteen-problem benchmark uses) without building or installing the
package: the generator files are loaded as they are, and the few names they
import from the rest of the package are given minimal stand-ins here. Each
problem is written as id,lower,upper,size with half-open lifetimes, the same
convention as OmniMalloc's.
"""

import dataclasses
import importlib
import sys
import types
from pathlib import Path


def _stub_package(name: str, path: Path | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [str(path)] if path else []
    sys.modules[name] = module
    return module


@dataclasses.dataclass(frozen=True)
class _Allocation:
    id: int
    size: int
    start: int
    end: int
    offset: int | None = None


class _BaseSource:
    def __init__(self, num_allocations: int | None = None) -> None:
        self.num_allocations = num_allocations
        self.num_pools = 1


def load_generators(checkout: Path) -> dict[str, type]:
    package = checkout / "src" / "python" / "omnimalloc"
    _stub_package("omnimalloc", package)
    _stub_package("omnimalloc.common", package / "common")
    primitives = _stub_package("omnimalloc.primitives")
    primitives.Allocation = _Allocation
    primitives.Pool = object
    primitives.IdType = int
    primitives.TimePoint = int
    _stub_package("omnimalloc.benchmark")
    _stub_package("omnimalloc.benchmark.sources", package / "benchmark" / "sources")
    base = types.ModuleType("omnimalloc.benchmark.sources.base")
    base.BaseSource = _BaseSource
    sys.modules[base.__name__] = base
    pinwheel = importlib.import_module("omnimalloc.benchmark.sources.pinwheel")
    tiling = importlib.import_module("omnimalloc.benchmark.sources.tiling")
    return {"pinwheel": pinwheel.PinwheelSource, "tiling": tiling.TilingSource}


def main() -> None:
    checkout, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = load_generators(checkout)
    for name, count in (("pinwheel", 101), ("tiling", 100)):
        allocations = sources[name]().get_allocations(num_allocations=count)
        lines = ["id,lower,upper,size"]
        lines += [f"{a.id},{a.start},{a.end},{a.size}" for a in allocations]
        (out_dir / f"{name}.{count}.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
