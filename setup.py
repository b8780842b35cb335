"""Builds the memplan Python package with CMake for `pip install .`
(pyproject.toml). The CMake build is the one the repository documents; this
file only drives it and copies what it built into the wheel:

  memplan/__init__.py          the pure-Python part (python/memplan/)
  memplan/_memplan*.so         the pybind11 module (target memplan_python)
  memplan/libmemplan_trace.so  the tracer (target memplan_trace_preload)
  memplan/libmemplan_replay.so the serving drop-in (target memplan_replay_preload)

Environment:
  MEMPLAN_CMAKE_BUILD_DIR  a CMake build folder to use (configured with the
                           Python module on, for this interpreter) instead of
                           a fresh one under build-pip/; it is built, not
                           reconfigured, so an existing build is reused.
  MEMPLAN_CMAKE_ARGS       extra arguments for a fresh configure (split on spaces).
  MEMPLAN_BUILD_JOBS       parallel build jobs (default: the number of CPUs).
  MEMPLAN_PIP_BUILD_BASE   setuptools' own build folder (default: build-pip/).
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(memplan VERSION ([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("CMakeLists.txt: no 'project(memplan VERSION x.y.z)' line")
    return match.group(1)


def run(command, cwd=None):
    print("memplan setup.py:", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def cache_value(build_dir, name):
    path = os.path.join(build_dir, "CMakeCache.txt")
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


class CMakeBuild(build_ext):
    """Configures (unless MEMPLAN_CMAKE_BUILD_DIR names a configured build),
    builds the module and the preload libraries, and copies them into the
    package folder of the wheel being built."""

    def build_extension(self, ext):
        build_dir = os.environ.get("MEMPLAN_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError(f"MEMPLAN_CMAKE_BUILD_DIR={build_dir}: not a configured CMake build")
            if cache_value(build_dir, "MEMPLAN_WITH_PYTHON") != "ON":
                raise RuntimeError(f"MEMPLAN_CMAKE_BUILD_DIR={build_dir}: configured with MEMPLAN_WITH_PYTHON off")
        else:
            build_dir = os.path.join(ROOT, "build-pip", "cmake")
            command = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                       "-DMEMPLAN_WITH_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
                       "-DMEMPLAN_BUILD_TESTS=OFF", "-DMEMPLAN_BUILD_BENCH=OFF",
                       "-DMEMPLAN_WITH_MLIR=OFF", "-DMEMPLAN_WITH_TORCH=OFF"]
            command += os.environ.get("MEMPLAN_CMAKE_ARGS", "").split()
            run(command)
        jobs = os.environ.get("MEMPLAN_BUILD_JOBS", str(os.cpu_count() or 1))
        run(["cmake", "--build", build_dir, "-j", jobs, "--target",
             "memplan_python", "memplan_trace_preload", "memplan_replay_preload"])

        module_dir = os.path.join(build_dir, "python", "memplan")
        modules = [name for name in os.listdir(module_dir)
                   if name.startswith("_memplan") and name.endswith(".so")]
        if len(modules) != 1:
            raise RuntimeError(f"{module_dir}: expected one _memplan*.so, found {modules}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(module_dir, modules[0]), target)
        package_dir = os.path.dirname(target)
        for library in ("src/trace/preload/libmemplan_trace.so",
                        "src/runtime/preload/libmemplan_replay.so"):
            source = os.path.join(build_dir, library)
            if not os.path.isfile(source):
                raise RuntimeError(f"{source}: not built")
            shutil.copyfile(source, os.path.join(package_dir, os.path.basename(library)))


setup(
    name="memplan",
    version=project_version(),
    description="Plan and serve the memory of deep-learning tensors",
    packages=["memplan", "memplan.predict"],
    package_dir={"memplan": "python/memplan"},
    ext_modules=[Extension("memplan._memplan", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.environ.get("MEMPLAN_PIP_BUILD_BASE", "build-pip")}},
    python_requires=">=3.9",
    zip_safe=False,
)
