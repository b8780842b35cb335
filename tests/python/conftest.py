"""Shared fixtures of the Python module's tests: the built CLI, to compare
results and messages with, and helpers to run it."""
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("MEMPLAN_CLI")
    if not path or not os.path.isfile(path):
        pytest.fail("MEMPLAN_CLI must name the built memplan binary (CTest sets it)")

    def run(*args, expect=None):
        completed = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if expect is not None:
            assert completed.returncode == expect, completed.stdout + completed.stderr
        return completed

    return run


@pytest.fixture(scope="session")
def source_dir():
    return os.environ.get("MEMPLAN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
