"""The package's layers (docs/architecture.md): a module imports only its own layer and layers to its left."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "viewdf_magic"

# Left to right: language -> translation -> catalog and storage -> maintainer -> engine -> API -> front ends.
# Base modules import nothing of the package, so every layer may use them.
LAYERS = {
    "errors": 0, "wording": 0, "timeparts": 0, "session": 0, "network_example": 0, "nexmark": 0,
    "language": 1, "translation": 2, "catalog": 3, "storage": 3, "maintainer": 4, "commands": 5,
    "warehouse": 6, "demo": 6, "deploy": 6, "notebook": 7, "cli": 7,
}
# Back-edges still in the tree, each to be removed (issue 18); a new one fails the test.
KNOWN_BACK_EDGES = {
    ("translation/window_sql.py", "catalog.model"),          # a window view's source definition
    ("storage/shared_storage.py", "maintainer.spark_errors"),  # the probe job's Spark errors
}


def _imports(path: Path) -> list[str]:
    """The package modules ``path`` imports, as dotted names relative to the package."""
    module = path.relative_to(PACKAGE).with_suffix("").parts
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


def test_no_module_imports_a_layer_to_its_right():
    edges = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        own = _layer(relative.removesuffix(".py").replace("/", "."))
        if relative == "__init__.py":          # the package's front door names what users import
            continue
        assert own is not None, f"{relative} belongs to no layer; add it to LAYERS and docs/architecture.md"
        for target in _imports(path):
            layer = _layer(target)
            assert layer is not None, f"{relative} imports {target}, which belongs to no layer"
            if layer > own:
                edges.add((relative, target))
    assert edges == KNOWN_BACK_EDGES


def test_the_check_sees_relative_imports():
    # the test above would pass vacuously if it missed imports: here are some it must see
    assert "language.tokens" in _imports(PACKAGE / "storage" / "parts.py")
    assert "warehouse" in _imports(PACKAGE / "notebook" / "render.py")
