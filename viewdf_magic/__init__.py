"""viewdf-magic: declarative incremental view maintenance (ViewDF) over time-partitioned streams on Spark.

Importing the package loads nothing heavy: Spark comes with ``Warehouse``, and the widget and plotting
libraries with ``Replay``, when they are first used.
"""

from __future__ import annotations

from importlib import import_module

from .errors import ViewDFError

_LAZY = {"MaintenanceWarning": ".engine.results", "Result": ".engine.results", "Warehouse": ".warehouse",
         "NetworkStream": ".notebook.replay", "Replay": ".notebook.replay", "replay": ".notebook.replay"}

__all__ = ["MaintenanceWarning", "NetworkStream", "Replay", "Result", "ViewDFError", "Warehouse",
           "load_ipython_extension", "replay"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """The public names that need Spark or widgets, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'viewdf_magic' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython) -> None:
    """``%load_ext viewdf_magic``: register the %%viewdf magics."""
    from .notebook.magic import register

    register(ipython)
