"""Metadata files on HDFS or an object store through pyarrow, for sessions without a JVM here
(Spark Connect): the client writes the catalog, the server reads and writes the parts."""

from __future__ import annotations

import time

from pyarrow import fs as pafs

from .filesystem import FileSystem

# Hadoop's names for object stores, and the names pyarrow knows them by
ARROW_SCHEMES = {"s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs"}


class ArrowFileSystem(FileSystem):
    """pyarrow's filesystems (S3, GCS, HDFS through libhdfs, local)."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        scheme, rest = self.root.split(":", 1)
        self._fs, self._base = pafs.FileSystem.from_uri(f"{ARROW_SCHEMES.get(scheme.lower(), scheme)}:{rest}")

    def _path(self, relative: str) -> str:
        return f"{self._base.rstrip('/')}/{relative}" if relative else self._base

    def _info(self, relative: str) -> pafs.FileInfo:
        return self._fs.get_file_info(self._path(relative))

    def create_exclusive(self, relative: str, text: str) -> bool:
        """pyarrow has no create-if-absent: the name is checked, then the file is written in one
        upload (a single PUT on object stores). Two writers in the same instant could both
        succeed; docs/deployment.md says what that means for the writer lock."""
        if self.exists(relative):
            return False
        self._fs.create_dir(self._path(relative.rpartition("/")[0]), recursive=True)
        with self._fs.open_output_stream(self._path(relative)) as out:
            out.write(text.encode("utf-8"))
        return True

    def exists(self, relative: str) -> bool:
        return self._info(relative).type != pafs.FileType.NotFound

    def list(self, relative: str) -> list[str]:
        selector = pafs.FileSelector(self._path(relative), allow_not_found=True)
        return sorted(info.base_name for info in self._fs.get_file_info(selector) if self.visible(info.base_name))

    def read_text(self, relative: str) -> str:
        with self._fs.open_input_stream(self._path(relative)) as source:
            return source.read().decode("utf-8")

    def age(self, relative: str) -> float:
        """Seconds since modified; 0 (new) where the store keeps no time, e.g. an object store's folders."""
        modified = self._info(relative).mtime
        return 0.0 if modified is None else time.time() - modified.timestamp()

    def copy_file(self, source: str, relative: str, link: bool = False) -> bool:
        self._fs.create_dir(self._path(relative.rpartition("/")[0]), recursive=True)
        pafs.copy_files(source, self._path(relative), destination_filesystem=self._fs)
        return True

    def delete(self, relative: str) -> None:
        kind = self._info(relative).type
        if kind == pafs.FileType.Directory:
            self._fs.delete_dir(self._path(relative))
        elif kind != pafs.FileType.NotFound:
            self._fs.delete_file(self._path(relative))
