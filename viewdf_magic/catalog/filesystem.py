"""Small metadata files on any Hadoop filesystem (file:, hdfs:, s3a:) through the Spark JVM."""

from __future__ import annotations

import os
import re
import time
import uuid

from pyspark.sql import SparkSession

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def qualify(path: str) -> str:
    """A URI for ``path``: local paths become absolute ``file:`` URIs."""
    if _SCHEME.match(path) and not re.match(r"^[A-Za-z]:[\\/]", path):
        return path.rstrip("/")
    return "file:" + os.path.abspath(os.path.expanduser(path))


class HadoopFileSystem:
    """Reads and writes small text files below ``root`` with Hadoop's FileSystem API.

    Part data never goes through here; it is written and read by Spark itself.
    """

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.root = qualify(root)
        jvm = spark._jvm
        self._jvm = jvm
        self._fs = jvm.org.apache.hadoop.fs.Path(self.root).getFileSystem(spark._jsc.hadoopConfiguration())
        self._fs.setWriteChecksum(False)
        self._fs.setVerifyChecksum(False)

    def uri(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def _path(self, relative: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(relative))

    def exists(self, relative: str) -> bool:
        return bool(self._fs.exists(self._path(relative)))

    def mkdirs(self, relative: str) -> None:
        self._fs.mkdirs(self._path(relative))

    def list(self, relative: str) -> list[str]:
        """Names directly below a folder (hidden and checksum files left out)."""
        path = self._path(relative)
        if not self._fs.exists(path):
            return []
        return sorted(str(status.getPath().getName()) for status in self._fs.listStatus(path)
                      if not str(status.getPath().getName()).startswith((".", "_tmp")))

    def read_text(self, relative: str) -> str:
        stream = self._fs.open(self._path(relative))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    @property
    def renames_atomically(self) -> bool:
        """Local filesystems and HDFS rename a file atomically; object stores copy, then delete."""
        return self.root.split(":", 1)[0].lower() in ("file", "hdfs", "viewfs")

    def write_text(self, relative: str, text: str) -> None:
        """Publish a file whole. Where rename is atomic: write a temporary file, then rename it into
        place. On object stores a single PUT is what becomes visible whole, so the file is written
        directly (an object appears only when its upload completes).

        Raises FileExistsError if the destination already exists.
        """
        target = self._path(relative)
        if self._fs.exists(target):
            raise FileExistsError(self.uri(relative))
        if not self.renames_atomically:
            if not self.create_exclusive(relative, text):
                raise FileExistsError(self.uri(relative))
            return
        parent = relative.rsplit("/", 1)[0] if "/" in relative else ""
        temporary = self._path(f"{parent}/_tmp-{uuid.uuid4().hex}" if parent else f"_tmp-{uuid.uuid4().hex}")
        stream = self._fs.create(temporary, False)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if not self._fs.rename(temporary, target):
            self._fs.delete(temporary, False)
            raise FileExistsError(self.uri(relative))

    def create_exclusive(self, relative: str, text: str) -> bool:
        """Create a small file only if it does not exist, atomically; False if it exists.

        Local files use O_CREAT|O_EXCL; other filesystems use Hadoop's create without overwrite,
        which HDFS decides at the NameNode (object stores: see docs/architecture.md)."""
        uri = self.uri(relative)
        if uri.startswith("file:"):     # written aside, then hard-linked: the file appears with its text
            local = uri[len("file:"):]
            os.makedirs(os.path.dirname(local), exist_ok=True)
            aside = f"{local}.{uuid.uuid4().hex}.tmp"
            with open(aside, "w", encoding="utf-8") as out:
                out.write(text)
            try:
                os.link(aside, local)
            except FileExistsError:
                return False
            finally:
                os.unlink(aside)
            return True
        try:
            stream = self._fs.create(self._path(relative), False)
        except Exception as exc:   # py4j wraps the JVM's FileAlreadyExistsException
            if "AlreadyExists" in str(exc) or self.exists(relative):
                return False
            raise
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return True

    def age(self, relative: str) -> float:
        """Seconds since the file was last modified."""
        modified = self._fs.getFileStatus(self._path(relative)).getModificationTime() / 1000.0
        return time.time() - modified

    def delete(self, relative: str) -> None:
        self._fs.delete(self._path(relative), True)
