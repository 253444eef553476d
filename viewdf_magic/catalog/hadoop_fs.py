"""Metadata files on HDFS or an object store through the Spark JVM's Hadoop FileSystem."""

from __future__ import annotations

import time

from .filesystem import FileSystem


class HadoopFileSystem(FileSystem):
    """Hadoop's FileSystem API over py4j; needs a classic (JVM-backed) SparkSession."""

    def __init__(self, spark, root: str) -> None:
        super().__init__(root)
        self._jvm = spark._jvm
        self._fs = self._jvm.org.apache.hadoop.fs.Path(self.root).getFileSystem(spark._jsc.hadoopConfiguration())
        self._fs.setWriteChecksum(False)
        self._fs.setVerifyChecksum(False)

    def _path(self, relative: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(relative))

    def _write(self, relative: str, text: str) -> bool:
        """Create without overwrite (decided at the NameNode on HDFS); False if it exists."""
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

    def create_exclusive(self, relative: str, text: str) -> bool:
        """On HDFS, written aside and renamed into place (the rename fails if the name exists);
        elsewhere, one create without overwrite (a single PUT on object stores)."""
        if self.scheme not in ("hdfs", "viewfs"):     # Hadoop's local rename would overwrite
            return self._write(relative, text)
        aside = self.aside(relative)
        self._write(aside, text)
        if self._fs.rename(self._path(aside), self._path(relative)):
            return True
        self._fs.delete(self._path(aside), False)
        return False

    def exists(self, relative: str) -> bool:
        return bool(self._fs.exists(self._path(relative)))

    def list(self, relative: str) -> list[str]:
        path = self._path(relative)
        if not self._fs.exists(path):
            return []
        return sorted(name for name in (str(s.getPath().getName()) for s in self._fs.listStatus(path))
                      if self.visible(name))

    def read_text(self, relative: str) -> str:
        stream = self._fs.open(self._path(relative))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def age(self, relative: str) -> float:
        return time.time() - self._fs.getFileStatus(self._path(relative)).getModificationTime() / 1000.0

    def copy_file(self, source: str, relative: str, link: bool = False) -> bool:
        """Local files only: Hadoop's copy from the local disk (other sources are for Spark to read)."""
        if not source.startswith("file:"):
            return False
        self._fs.copyFromLocalFile(False, True, self._jvm.org.apache.hadoop.fs.Path(source), self._path(relative))
        return True

    def delete(self, relative: str) -> None:
        self._fs.delete(self._path(relative), True)
