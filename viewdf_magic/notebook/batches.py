"""A replay's input: a source read whole, then cut into one batch per time part of the target stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..catalog.model import ObjectDef
from ..engine.conform import conform_by_name, read_file, to_frame
from ..errors import ViewDFError
from ..language.tokens import quote_name
from ..network_example import SEED, network_stream
from ..timeparts import part_start, subscript_sql
from ..warehouse import Warehouse

PART = "__replay_part"


@dataclass(frozen=True)
class NetworkStream:
    """The paper's synthetic network-monitoring stream (``network_example.network_stream``) as a replay source."""

    parts: int = 10
    pairs: int = 4
    selectivity: float | None = None      # share of rows with loss above 10; None: losses uniform in 0..30
    rows_per_part: int | None = None      # None: the paper's pair plus one row per other pair
    seed: int = SEED

    def frame(self) -> pd.DataFrame:
        return network_stream(self.parts, self.pairs, self.selectivity, self.rows_per_part, self.seed)


Source: TypeAlias = pd.DataFrame | DataFrame | str | NetworkStream


class Batches:
    """The rows of a source for ``stream``, one batch per non-empty part, oldest first.

    Parts with no rows are not batches: the next batch's ingest seals them empty, as usual.
    """

    def __init__(self, warehouse: Warehouse, stream: str, source: Source) -> None:
        definition = warehouse.catalog.get(stream)
        if definition is None or definition.kind != "stream":
            raise ViewDFError(f"no stream named '{stream}' to replay into")
        self.definition: ObjectDef = definition
        assert definition.timestamp_column is not None      # every stream has one
        subscript = F.expr(subscript_sql(quote_name(definition.timestamp_column), definition.length))
        frame = _read(warehouse, definition, source).withColumn(PART, subscript)
        self._frame = frame.localCheckpoint()
        counts = sorted(self._frame.groupBy(PART).count().collect())
        if any(row[PART] is None for row in counts):
            raise ViewDFError(f"the source has rows with a NULL {definition.timestamp_column}")
        self.subscripts: list[int] = [row[PART] for row in counts]
        self.rows: list[int] = [row["count"] for row in counts]

    def __len__(self) -> int:
        return len(self.subscripts)

    def frame(self, index: int) -> DataFrame:
        """The rows of batch ``index``, with the stream's columns."""
        return self._frame.where(F.col(PART) == self.subscripts[index]).drop(PART)

    def timestamp(self, index: int) -> pd.Timestamp:
        """The start of batch ``index``'s part."""
        return part_start(self.subscripts[index], self.definition.length)

    def ingested(self, newest: int | None) -> int:
        """How many batches lie at or before the stream's ``newest`` part (already in the stream)."""
        return sum(1 for s in self.subscripts if newest is not None and s <= newest)


def _read(warehouse: Warehouse, definition: ObjectDef, source: Source) -> DataFrame:
    """The source as a Spark DataFrame with the stream's columns (matched by name)."""
    if isinstance(source, NetworkStream):
        source = source.frame()
    if isinstance(source, str):
        return read_file(warehouse.spark, source, None, {}, definition.schema, ViewDFError)
    if isinstance(source, pd.DataFrame) and source.empty:
        raise ViewDFError("the source has no rows")
    return conform_by_name(to_frame(warehouse.spark, source), definition.schema, ViewDFError)
