"""The package's layers (docs/architecture.md): a module imports only its own layer and layers to its left."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "viewdf_magic"

# Left to right: language -> translation -> catalog -> storage -> maintainer -> engine -> statement handlers
# -> API -> front ends.
# Base modules import nothing of the package, so every layer may use them.
LAYERS = {
    "errors": 0, "wording": 0, "timeparts": 0, "session": 0, "network_example": 0, "nexmark": 0,
    "language": 1, "translation": 2, "catalog": 3, "storage": 4, "maintainer": 5, "engine": 6, "handlers": 7,
    "warehouse": 8, "pipeline_sink": 8, "demo": 8, "deploy": 8, "notebook": 9, "cli": 9,
}
# Back-edges left in the tree, each named with its reason (none now); a new one fails the test.
KNOWN_BACK_EDGES: set[tuple[str, str]] = set()


def _imports(path: Path, root: Path = PACKAGE) -> list[str]:
    """The package modules ``path`` imports (``from`` and plain ``import`` statements, at any depth), as
    dotted names relative to the package at ``root``; ``from m import x`` names ``m.x`` only when ``m`` is
    the package or one of its packages (``x`` may be a module)."""
    module = path.relative_to(root).with_suffix("").parts
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name.removeprefix("viewdf_magic.") for alias in node.names
                      if alias.name.startswith("viewdf_magic.")]
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            target = list(module[:len(module) - node.level]) + (node.module.split(".") if node.module else [])
        elif node.module == "viewdf_magic" or (node.module or "").startswith("viewdf_magic."):
            target = node.module.split(".")[1:]
        else:
            continue
        if target and not (root.joinpath(*target) / "__init__.py").exists():
            found.append(".".join(target))
        else:
            found += [".".join(target + [alias.name]) for alias in node.names]
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


def _module(relative: Path) -> str:
    """A file's dotted module name (a package's ``__init__.py`` is the package)."""
    return ".".join(relative.with_suffix("").parts).removesuffix(".__init__").removesuffix("__init__")


def _loops(root: Path) -> list[list[str]]:
    """The package's import loops: each set of modules that import each other, directly or through others
    (the strongly connected components of the import graph with more than one module), sorted."""
    paths = {_module(path.relative_to(root)): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        for target in _imports(path, root):
            while target and target not in paths:      # a name imported from a module: that module
                target = target.rpartition(".")[0]
            targets.add(target)
        graph[name] = targets - {name}
    # Tarjan's algorithm
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for target in graph[name]:
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            component = []
            while not component or component[-1] != name:
                component.append(stack.pop())
            if len(component) > 1:
                loops.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(loops)


# The notebook's widgets and magics see a warehouse only through its facade (warehouse.py, with its reads),
# a statement's Result, and the statement classes; base modules are open to every layer.
NOTEBOOK_MAY_IMPORT = ("warehouse", "engine.results", "language.statements", "notebook")


def _notebook_reaches(root: Path) -> set[tuple[str, str]]:
    """(module, imported module) pairs where notebook/ imports past the facade."""
    reaches = set()
    for path in (root / "notebook").rglob("*.py"):
        for target in _imports(path, root):
            allowed = _layer(target) == 0 or any(target == m or target.startswith(m + ".")
                                                 for m in NOTEBOOK_MAY_IMPORT)
            if not allowed:
                reaches.add((path.relative_to(root).as_posix(), target))
    return reaches


def test_the_notebook_goes_through_the_facade():
    assert _notebook_reaches(PACKAGE) == set()


def test_a_notebook_import_past_the_facade_fails_the_check(tmp_path):
    copy = tmp_path / "viewdf_magic"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "notebook" / "peek.py").write_text("from ..catalog.catalog import Catalog\n"
                                               "import viewdf_magic.maintainer.reports\n"
                                               "from ..engine.results import Result\n")
    assert _notebook_reaches(copy) == {("notebook/peek.py", "catalog.catalog"),
                                       ("notebook/peek.py", "maintainer.reports")}


def _handler_translations(root: Path) -> set[tuple[str, str]]:
    """(module, imported module) pairs where handlers/ imports translation/: a query shape's EXPLAIN and
    planning live in engine/ (engine/explain.py), so a new translation needs no handler edit."""
    return {(path.relative_to(root).as_posix(), target) for path in (root / "handlers").rglob("*.py")
            for target in _imports(path, root) if target.split(".")[0] == "translation"}


def test_handlers_leave_translations_to_the_engine(tmp_path):
    assert _handler_translations(PACKAGE) == set()
    copy = tmp_path / "viewdf_magic"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "handlers" / "peek.py").write_text("from ..translation.fsm_diagram import fsm_svg\n")
    assert _handler_translations(copy) == {("handlers/peek.py", "translation.fsm_diagram")}


def test_no_module_imports_a_layer_to_its_right():
    assert _back_edges(PACKAGE) == KNOWN_BACK_EDGES


def test_no_import_loop():
    loops, edges = _loops(PACKAGE), _back_edges(PACKAGE)
    print(f"import loops: {len(loops)}, back-edges: {len(edges)}")
    assert loops == []


def test_an_import_loop_fails_the_check(tmp_path):
    # a loop through an import inside a function counts too (the old catalog/filesystem.py loop was one)
    package = tmp_path / "viewdf_magic"
    (package / "catalog").mkdir(parents=True)
    (package / "catalog" / "__init__.py").write_text("")
    (package / "catalog" / "first.py").write_text("import viewdf_magic.catalog.second\n")
    (package / "catalog" / "second.py").write_text("def later():\n    from .first import x\n")
    (package / "catalog" / "third.py").write_text("from .first import x\n")
    assert _loops(package) == [["catalog.first", "catalog.second"]]


def test_a_new_back_edge_fails_the_check(tmp_path):
    copy = tmp_path / "viewdf_magic"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "maintainer" / "shortcut.py").write_text("from ..handlers import dispatch\n")
    (copy / "engine" / "facade.py").write_text("from viewdf_magic.warehouse import Warehouse\n")
    assert _back_edges(copy) - KNOWN_BACK_EDGES == {("maintainer/shortcut.py", "handlers.dispatch"),
                                                    ("engine/facade.py", "warehouse")}


def test_the_check_sees_relative_imports():
    # the test above would pass vacuously if it missed imports: here are some it must see
    assert "language.tokens" in _imports(PACKAGE / "storage" / "parts.py")
    assert "engine.results" in _imports(PACKAGE / "notebook" / "render.py")
    assert "handlers.data" in _imports(PACKAGE / "handlers" / "__init__.py")


def test_the_check_sees_plain_imports(tmp_path):
    module = tmp_path / "viewdf_magic" / "storage" / "plain.py"
    module.parent.mkdir(parents=True)
    module.write_text("import os\nimport viewdf_magic.engine.engine as engine\nimport viewdf_magic.handlers\n"
                      "from viewdf_magic import warehouse\n")
    assert _imports(module, tmp_path / "viewdf_magic") == ["engine.engine", "handlers", "warehouse"]


def test_language_and_translation_need_no_spark():
    # they turn text into text; Spark is the engine's, so they can be tested and reused without a JVM
    for layer in ("language", "translation"):
        for path in (PACKAGE / layer).rglob("*.py"):
            modules = {alias.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                       for alias in node.names}
            modules |= {node.module or "" for node in ast.walk(ast.parse(path.read_text()))
                        if isinstance(node, ast.ImportFrom)}
            assert not {m for m in modules if m.split(".")[0] in ("pyspark", "py4j")}, path
