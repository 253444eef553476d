"""A replay's input: a source read whole, then cut into one batch per time part of the target stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import ViewDFError
from ..network_example import SEED, network_stream
from ..timeparts import part_start
from ..warehouse import ObjectDef, Warehouse

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
        definition = warehouse.reads.definition(stream)
        if definition is None or definition.kind != "stream":
            raise ViewDFError(f"no stream named '{stream}' to replay into")
        self.definition: ObjectDef = definition
        rows = source.frame() if isinstance(source, NetworkStream) else source
        self._frame = warehouse.reads.stream_rows(definition, rows, PART).localCheckpoint()
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

