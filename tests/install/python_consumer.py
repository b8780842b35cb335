"""Imports the memplan package installed under the prefix given as argv[1]
(PYTHONPATH=<prefix>/<MEMPLAN_PYTHON_INSTALL_DIR>, as docs/python.md says)
and checks it is that copy, with its preload libraries found beside it."""
import os
import sys

prefix = os.path.realpath(sys.argv[1])
import memplan  # noqa: E402

assert os.path.realpath(memplan.__file__).startswith(prefix + os.sep), memplan.__file__
problem = memplan.Problem([(0, 2, 64), (1, 3, 32), (2, 4, 64)])
result = memplan.plan(problem)
assert result.verdict == "planned" and memplan.validate(problem, result) and result.arena == 96, result
for kind in ("trace", "replay"):
    path = os.path.realpath(memplan.library_path(kind))
    assert path.startswith(prefix + os.sep), f"{kind}: {path} is not under {prefix}"
print(f"python: memplan {memplan.__version__} from {os.path.dirname(memplan.__file__)}, arena {result.arena} B")
