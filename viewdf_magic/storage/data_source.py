"""The ``viewdf`` Spark data source: any Spark job reads a stream or view of a warehouse.

``spark.read.format("viewdf").load("<warehouse>/<name>")`` reads the parts the catalog had published when the
DataFrame was made (Spark plans a Python data source's partitions then: load again for newer parts). A part
being written or repaired is not published yet, and a replaced part's old files stay until VACUUM (an hour at
least), so a reader never sees half a part. ``PART_TIMESTAMP`` is the last column. ``readStream.format("viewdf")``
emits the parts published between two catalog versions, its offsets. A filter on ``PART_TIMESTAMP`` is
applied to whole parts: only those parts are read. The driver plans the scans from the catalog
(``storage/slices.plan_scans``, as the warehouse reads parts); Spark's Python workers read them with pyarrow.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyarrow import fs as pafs
from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader, EqualTo, Filter, GreaterThan,
                                    GreaterThanOrEqual, InputPartition, LessThan, LessThanOrEqual)
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType, TimestampType

from ..catalog.arrow_fs import ArrowFileSystem
from ..catalog.catalog import Catalog
from ..catalog.filesystem import qualify
from ..catalog.model import PART_TIMESTAMP, ObjectDef, PartMeta, Slice
from ..errors import ViewDFError
from .loaded_parts import microseconds, part_numbers
from .slices import PART_COLUMN, Scan, Wanted, plan_scans

if TYPE_CHECKING:
    import pandas as pd

FORMAT = "viewdf"


def _split(options: Mapping[str, str]) -> tuple[str, str]:
    """The warehouse's root URI and the object's name, from ``load("<warehouse>/<name>")``."""
    path = options.get("path", "")
    root, _, name = qualify(path).rstrip("/").rpartition("/")
    if not root or not name:
        raise ViewDFError(f"load('<warehouse>/<stream or view>') for the viewdf format, got {path!r}")
    return root, name


def _open(root: str, name: str) -> tuple[Catalog, ObjectDef]:
    catalog = Catalog(ArrowFileSystem(root))
    catalog.refresh()
    definition = catalog.get(name)
    if definition is None or not definition.partitioned:
        raise ViewDFError(f"the warehouse at {root} has no stream or view named '{name}'")
    return catalog, definition


class ViewDFDataSource(DataSource):
    """``format("viewdf")``: a stream or view of a warehouse, read as of each query's start."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        root, name = _split(self.options)
        _, definition = _open(root, name)
        return StructType(definition.schema.fields + [StructField(PART_TIMESTAMP, TimestampType())])

    def reader(self, schema: StructType) -> "ViewDFReader":
        return ViewDFReader(*_split(self.options), schema)

    def streamReader(self, schema: StructType) -> "ViewDFStreamReader":
        return ViewDFStreamReader(*_split(self.options), schema)


@dataclass
class ScanPartition(InputPartition):
    """One scan of ``storage/slices``: its folders' URIs, the embedded column, and the parts each part's rows
    are read as."""

    folders: list[str]
    column: str | None
    targets: dict[int, tuple[int, ...]] | None
    length: int
    loaded_by: str | None = None      # loaded files: the timestamp column their rows' parts are computed from


_BOUNDS = {GreaterThan: "low", GreaterThanOrEqual: "low", LessThan: "high", LessThanOrEqual: "high", EqualTo: "both"}


class ViewDFReader(DataSourceReader):
    """Plans the scans of the published parts (within the pushed PART_TIMESTAMP bounds) and reads them."""

    def __init__(self, root: str, name: str, schema: StructType) -> None:
        self.root, self.name, self.schema = root, name, schema
        self.low: int | None = None           # the first and last part start to read, epoch seconds
        self.high: int | None = None

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Take the comparisons of PART_TIMESTAMP with a timestamp: every row of a part has its part's
        PART_TIMESTAMP, so choosing parts applies them exactly. Others are left to Spark."""
        for item in filters:
            side = _BOUNDS.get(type(item))
            value = getattr(item, "value", None)
            if side is None or getattr(item, "attribute", None) != (PART_TIMESTAMP,) or not isinstance(value, dt.datetime):
                yield item
                continue
            seconds = value.replace(tzinfo=value.tzinfo or dt.timezone.utc).timestamp()
            whole = int(seconds) == seconds
            if side in ("low", "both"):      # a part start after (or at) the value
                first = int(seconds) + (0 if isinstance(item, (GreaterThanOrEqual, EqualTo)) and whole else 1)
                self.low = first if self.low is None else max(self.low, first)
            if side in ("high", "both"):
                last = int(seconds) - (1 if isinstance(item, LessThan) and whole else 0)
                self.high = last if self.high is None else min(self.high, last)

    def partitions(self) -> list[InputPartition]:
        catalog, definition = _open(self.root, self.name)
        length = definition.length
        return _scans(catalog, definition, lambda s, meta: (self.low is None or s * length >= self.low)
                      and (self.high is None or s * length <= self.high))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.schema)


class ViewDFStreamReader(DataSourceStreamReader):
    """``readStream.format("viewdf")``: each micro-batch holds the parts published since the last one, whole. Its
    offsets are catalog versions, so a query restarts from its checkpoint; a part recomputed after late data or a
    change is published again, so it comes again, whole, with its new rows (a consumer keeps the newest rows of
    each PART_TIMESTAMP)."""

    def __init__(self, root: str, name: str, schema: StructType) -> None:
        self.root, self.name, self.schema = root, name, schema

    def initialOffset(self) -> dict:
        return {"version": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        catalog, _ = _open(self.root, self.name)
        return {"version": catalog.version}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        catalog, definition = _open(self.root, self.name)
        after, until = start["version"], end["version"]
        return _scans(catalog, definition, lambda s, meta: after < meta.changed <= until)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.schema)


def _scans(catalog: Catalog, definition: ObjectDef, chosen: Callable[[int, PartMeta], bool]) -> list[InputPartition]:
    """The scans that read the parts with rows that ``chosen`` keeps (at least one, maybe empty: Spark wants one)."""
    state, length = catalog.state(definition.name), definition.length
    parts = [s for s, meta in state.parts.items() if meta.rows and chosen(s, meta)]
    scans: list[Scan] = plan_scans([Wanted(Slice.parse(text), s) for s in parts for text in state.parts[s].folders])
    return [ScanPartition([catalog.fs.uri(f) for f in scan.folders], scan.column, scan.targets, length,
                          definition.timestamp_column if scan.loaded else None)
            for scan in scans] or [ScanPartition([], None, {}, length)]


def _read(partition: InputPartition, schema: StructType) -> Iterator[pa.RecordBatch]:
    assert isinstance(partition, ScanPartition)
    arrow = to_arrow_schema(schema, timezone="UTC")
    for table in _scan_rows(partition):
        yield from table.select(arrow.names).cast(arrow).to_batches()


def _scan_rows(scan: ScanPartition) -> Iterator[pa.Table]:
    """The rows of one scan, each stamped as every part it is read for (the view's columns, PART_TIMESTAMP)."""
    if not scan.folders:
        return
    tables = []
    for uri in scan.folders:
        filesystem, path = pafs.FileSystem.from_uri(uri)
        tables.append(ds.dataset(path, filesystem=filesystem, format="parquet").to_table())
    table = pa.concat_tables(tables, promote_options="default")
    stamp = pa.timestamp("us", tz="UTC")
    if scan.loaded_by is not None:     # the stream's columns only: each row's part from its timestamp
        micros = microseconds(table[scan.loaded_by])
        parts = part_numbers(micros, scan.length)
        table = table.set_column(table.schema.get_field_index(scan.loaded_by), scan.loaded_by,
                                 pa.array(micros).cast(stamp)) \
            .append_column(PART_TIMESTAMP, pa.array(parts * scan.length * 1_000_000).cast(stamp)) \
            .append_column(PART_COLUMN, pa.array(parts))
    if scan.column is not None:        # embedded rows: a struct column where it is not NULL
        embedded = table.filter(pc.is_valid(table[scan.column]))
        fields = embedded[scan.column].combine_chunks().flatten()
        columns = {name: fields[k] for k, name in enumerate(embedded.schema.field(scan.column).type.names)}
        columns[PART_TIMESTAMP] = embedded[PART_TIMESTAMP]
        if PART_COLUMN in embedded.column_names:
            columns[PART_COLUMN] = embedded[PART_COLUMN]
        table = pa.table(columns)
    if scan.targets is None:           # a whole folder of the older layout
        yield table
        return
    for source, targets in scan.targets.items():
        rows = table.filter(pc.equal(table[PART_COLUMN], source))
        for target in targets:         # a part that carries part ``source``'s rows over unchanged
            at = pa.array([target * scan.length * 1_000_000] * rows.num_rows, pa.int64()).cast(stamp)
            yield rows.set_column(rows.schema.get_field_index(PART_TIMESTAMP), PART_TIMESTAMP, at)


def published_rows(location: str) -> "pd.DataFrame":
    """Every published row of the stream or view at ``location`` (``<warehouse>/<name>``), as the ``viewdf``
    reader gives them, read with pyarrow in this process (no Spark); timestamps without a zone, as ViewDF's are
    (UTC)."""
    source = ViewDFDataSource({"path": location})
    schema = source.schema()
    reader = source.reader(schema)
    arrow = to_arrow_schema(schema, timezone="UTC")
    frame = pa.concat_tables([pa.Table.from_batches(list(reader.read(partition)), schema=arrow)
                              for partition in reader.partitions()]).to_pandas()
    for column in frame.select_dtypes("datetimetz"):
        frame[column] = frame[column].dt.tz_localize(None)
    return frame
