"""An in-process IPython shell with the %%viewdf magics loaded, for tests of the magics."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config


def magic_shell(spark) -> InteractiveShell:  # type: ignore[no-untyped-def]
    """The process's IPython shell on ``spark`` with the magics (re)loaded and progress bars off."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.user_ns["spark"] = spark
    ip.run_line_magic("load_ext", "viewdf_magic")
    ip.run_line_magic("config", "ViewDF.progress = False")
    return ip
