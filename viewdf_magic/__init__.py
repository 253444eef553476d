"""viewdf-magic: declarative incremental view maintenance (ViewDF) over time-partitioned streams on Spark."""

from .errors import ViewDFError
from .warehouse import MaintenanceWarning, Result, Warehouse
from .notebook.replay import NetworkStream, Replay, replay

__all__ = ["MaintenanceWarning", "ViewDFError", "Result", "Warehouse", "load_ipython_extension",
           "NetworkStream", "Replay", "replay"]
__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:  # type: ignore[no-untyped-def]
    """``%load_ext viewdf_magic``: register the %%viewdf magics."""
    from .notebook.magic import register

    register(ipython)
