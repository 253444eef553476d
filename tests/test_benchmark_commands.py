"""Every benchmark command starts: its module imports, so each name it takes from the package exists.
(``benchmarks.hot_path`` imported ``folder_of`` from a module that no longer held it, and failed at start.)"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted(path.stem for path in (Path(__file__).parent.parent / "benchmarks").glob("*.py")
                    if path.stem not in ("__init__", "__main__"))


@pytest.mark.parametrize("name", BENCHMARKS)
def test_the_benchmark_module_imports(name):
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__doc__, f"benchmarks/{name}.py says what it measures"
