"""The package's layers (docs/architecture.md): a module imports only its own layer and layers to its left."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "viewdf_magic"

# Left to right: language -> translation -> catalog and storage -> maintainer -> engine -> statement handlers
# -> API -> front ends.
# Base modules import nothing of the package, so every layer may use them.
LAYERS = {
    "errors": 0, "wording": 0, "timeparts": 0, "session": 0, "network_example": 0, "nexmark": 0,
    "language": 1, "translation": 2, "catalog": 3, "storage": 3, "maintainer": 4, "engine": 5, "handlers": 6,
    "warehouse": 7, "demo": 7, "deploy": 7, "notebook": 8, "cli": 8,
}
# Back-edges left in the tree, each named with its reason (none now); a new one fails the test.
KNOWN_BACK_EDGES: set[tuple[str, str]] = set()


def _imports(path: Path, root: Path = PACKAGE) -> list[str]:
    """The package modules ``path`` imports, as dotted names relative to the package at ``root``."""
    module = path.relative_to(root).with_suffix("").parts
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(module[:len(module) - node.level])
            target = base + (node.module.split(".") if node.module else [])
            names = [".".join(target + [alias.name]) for alias in node.names] if not node.module else [
                ".".join(target)]
            found += names
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("viewdf_magic."):
            found.append(node.module.removeprefix("viewdf_magic."))
    return found


def _layer(dotted: str) -> int | None:
    return LAYERS.get(dotted.split(".")[0])


def _back_edges(root: Path) -> set[tuple[str, str]]:
    """(module, imported module) pairs of the package at ``root`` where the import goes right."""
    edges = set()
    for path in root.rglob("*.py"):
        relative = path.relative_to(root).as_posix()
        own = _layer(relative.removesuffix(".py").replace("/", "."))
        if relative == "__init__.py":          # the package's front door names what users import
            continue
        assert own is not None, f"{relative} belongs to no layer; add it to LAYERS and docs/architecture.md"
        for target in _imports(path, root):
            layer = _layer(target)
            assert layer is not None, f"{relative} imports {target}, which belongs to no layer"
            if layer > own:
                edges.add((relative, target))
    return edges


def test_no_module_imports_a_layer_to_its_right():
    assert _back_edges(PACKAGE) == KNOWN_BACK_EDGES


def test_a_new_back_edge_fails_the_check(tmp_path):
    copy = tmp_path / "viewdf_magic"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "maintainer" / "shortcut.py").write_text("from ..handlers import dispatch\n")
    (copy / "engine" / "facade.py").write_text("from viewdf_magic.warehouse import Warehouse\n")
    assert _back_edges(copy) - KNOWN_BACK_EDGES == {("maintainer/shortcut.py", "handlers"),
                                                    ("engine/facade.py", "warehouse")}


def test_the_check_sees_relative_imports():
    # the test above would pass vacuously if it missed imports: here are some it must see
    assert "language.tokens" in _imports(PACKAGE / "storage" / "parts.py")
    assert "engine.results" in _imports(PACKAGE / "notebook" / "render.py")
    assert "handlers.data" in _imports(PACKAGE / "handlers" / "__init__.py")


def test_language_and_translation_need_no_spark():
    # they turn text into text; Spark is the engine's, so they can be tested and reused without a JVM
    for layer in ("language", "translation"):
        for path in (PACKAGE / layer).rglob("*.py"):
            modules = {alias.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                       for alias in node.names}
            modules |= {node.module or "" for node in ast.walk(ast.parse(path.read_text()))
                        if isinstance(node, ast.ImportFrom)}
            assert not {m for m in modules if m.split(".")[0] in ("pyspark", "py4j")}, path
