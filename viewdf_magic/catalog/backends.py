"""The choice of a warehouse's metadata backend (``filesystem.FileSystem``), apart from the backends it
chooses from, which import the contract they implement."""

from __future__ import annotations

from ..session import is_connect_session
from .arrow_fs import ArrowFileSystem
from .filesystem import FileSystem, qualify
from .hadoop_fs import HadoopFileSystem
from .local_fs import LocalFileSystem


def open_filesystem(spark: object, root: str) -> FileSystem:
    """The backend for a warehouse at ``root``: local folders directly; other storage through the
    session's JVM (Hadoop's FileSystem), or through pyarrow where there is no JVM (Spark Connect)."""
    root = qualify(root)
    if root.startswith("file:"):
        return LocalFileSystem(root)
    if is_connect_session(spark):
        return ArrowFileSystem(root)
    return HadoopFileSystem(spark, root)
