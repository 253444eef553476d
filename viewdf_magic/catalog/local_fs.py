"""Metadata files in a local (or locally mounted) folder."""

from __future__ import annotations

import os
import shutil
import time

from pyarrow import fs as pafs

from .filesystem import FileSystem


class LocalFileSystem(FileSystem):
    """A ``file:`` warehouse, read and written with the operating system's calls."""

    def _local(self, relative: str) -> str:
        return self.uri(relative)[len("file:"):]

    def create_exclusive(self, relative: str, text: str) -> bool:
        """Written aside, then hard-linked into place: the link fails if the name exists, and the
        file never appears without its text."""
        target = self._local(relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        aside = self._local(self.aside(relative))
        with open(aside, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            os.link(aside, target)
        except FileExistsError:
            return False
        finally:
            os.unlink(aside)
        return True

    def exists(self, relative: str) -> bool:
        return os.path.exists(self._local(relative))

    def list(self, relative: str) -> list[str]:
        folder = self._local(relative)
        if not os.path.isdir(folder):
            return []
        return sorted(name for name in os.listdir(folder) if self.visible(name))

    def read_text(self, relative: str) -> str:
        with open(self._local(relative), encoding="utf-8") as source:
            return source.read()

    def age(self, relative: str) -> float:
        return time.time() - os.path.getmtime(self._local(relative))

    def copy_file(self, source: str, relative: str, link: bool = False) -> bool:
        """A ``link``ed local source on the warehouse's device, in a folder this process may remove it from, is
        hard-linked: no byte is copied, and once the source's name is removed the warehouse's is its only one."""
        target = self._local(relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if source.startswith("file:"):
            local = source[len("file:"):]
            if link and os.access(os.path.dirname(local) or ".", os.W_OK):
                try:
                    os.link(local, target)
                    return True
                except OSError:         # another device, or a file system without hard links: copied
                    pass
            shutil.copyfile(local, target)      # the kernel's copy, where it has one
        else:
            pafs.copy_files(source, target, destination_filesystem=pafs.LocalFileSystem())
        return True

    def delete(self, relative: str) -> None:
        path = self._local(relative)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
