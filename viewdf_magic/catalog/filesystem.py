"""Small metadata files (the catalog log, checkpoints, the writer lock) below a warehouse's root, and
the copy of a loaded file into the warehouse.

Part data is otherwise never written here; Spark writes and reads it. Which backend serves a warehouse
depends on where it is and on the session (see ``backends.open_filesystem``)."""

from __future__ import annotations

import os
import re
import uuid
from abc import ABC, abstractmethod


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def qualify(path: str) -> str:
    """A URI for ``path``: local paths become absolute ``file:`` URIs."""
    if _SCHEME.match(path) and not re.match(r"^[A-Za-z]:[\\/]", path):
        return path.rstrip("/")
    return "file:" + os.path.abspath(os.path.expanduser(path))


class FileSystem(ABC):
    """Small text files below ``root``, published whole and never overwritten."""

    def __init__(self, root: str) -> None:
        self.root = qualify(root)

    @property
    def scheme(self) -> str:
        return self.root.split(":", 1)[0].lower()

    def uri(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def write_text(self, relative: str, text: str) -> None:
        """Publish a file whole; FileExistsError if it already exists."""
        if not self.create_exclusive(relative, text):
            raise FileExistsError(self.uri(relative))

    def aside(self, relative: str) -> str:
        """A temporary name next to ``relative`` (left out of ``list``)."""
        parent, _, _ = relative.rpartition("/")
        return f"{parent}/_tmp-{uuid.uuid4().hex}" if parent else f"_tmp-{uuid.uuid4().hex}"

    @staticmethod
    def visible(name: str) -> bool:
        return not name.startswith((".", "_tmp"))

    @abstractmethod
    def create_exclusive(self, relative: str, text: str) -> bool:
        """Create a small file with ``text`` only if the name is free; False if it exists.

        Where the storage allows it, the decision is atomic and the file never appears without
        its text (docs/deployment.md lists what each backend guarantees)."""

    @abstractmethod
    def exists(self, relative: str) -> bool: ...

    @abstractmethod
    def list(self, relative: str) -> list[str]:
        """Names directly below a folder, sorted (hidden and temporary files left out)."""

    @abstractmethod
    def read_text(self, relative: str) -> str: ...

    @abstractmethod
    def age(self, relative: str) -> float:
        """Seconds since the file was last modified."""

    @abstractmethod
    def copy_file(self, source: str, relative: str, link: bool = False) -> bool:
        """Copy the file at ``source`` (a URI this process reads through pyarrow, as LOAD's fingerprints do) to
        ``relative``, byte for byte; False where this backend cannot (Spark then writes the rows instead).
        ``link``: the source is removed once the copy is committed (LOAD .. MOVE), so a backend may hard-link
        it instead, where it can."""

    @abstractmethod
    def delete(self, relative: str) -> None:
        """Delete a file or a folder with everything below it (nothing if absent)."""
