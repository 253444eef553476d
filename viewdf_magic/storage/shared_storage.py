"""Spark Connect: this process writes the catalog, the server writes the parts, so both must
reach the same storage. Checked once when a warehouse opens on a Connect session."""

from __future__ import annotations

import uuid

from ..catalog.filesystem import FileSystem
from ..errors import ViewDFError
from .spark_errors import SPARK_ERRORS


def check_shared_storage(spark, fs: FileSystem) -> None:
    """Write a probe file here and read it back through the server; a clear error if it cannot."""
    probe = f"_viewdf/probes/{uuid.uuid4().hex}"
    token = uuid.uuid4().hex
    fs.create_exclusive(probe, token)
    try:
        seen = [row.value for row in spark.read.text(fs.uri(probe)).collect()]
    except SPARK_ERRORS:
        seen = []
    finally:
        fs.delete(probe)
    if seen != [token]:
        raise ViewDFError(
            f"the Spark Connect server does not see the warehouse folder {fs.root} that this process "
            "writes: with Spark Connect, put the warehouse on storage both reach (HDFS, S3, a shared mount)")
