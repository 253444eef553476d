"""A deterministic, vectorised Nexmark event generator (persons, auctions and bids).

It follows the Java generator of github.com/nexmark/nexmark (nexmark-flink, ``generator``
package) with NexmarkConfiguration's defaults:

* Event number ``n`` (0, 1, 2, ...) is a person when ``n % 50 == 0``, an auction when
  ``n % 50`` is 1 to 3 and a bid otherwise (proportions 1 : 3 : 46).
* Person and auction ids are 1000 plus the number of persons (auctions) before them, so they
  increase by one per event of their kind. Bids and auctions refer to persons (auctions) by the
  Java rules: with odds ``1 - 1/hot_bidders_ratio`` (``hot_sellers_ratio``,
  ``hot_auction_ratio``) a "hot" id, the first person (auction) of the current block of 100
  (plus one for bidders, so hot bidders and hot sellers differ); otherwise a uniform id among the
  last 1000 persons (the last 101 auctions) and up to 10 that do not exist yet.
* Prices are ``round(100 * 10 ** (6 u))`` cents for ``u`` uniform in [0, 1); a reserve is the
  initial bid plus another price; categories are 10 to 14; an auction lasts 1 ms plus a uniform
  time below twice the time that 100 auctions take to arrive.
* Names, cities and states come from the Java lists; emails, item names and descriptions are the
  Java random strings; the ``extra`` padding brings a row to 200 (person), 500 (auction) or 100
  (bid) bytes on average, give or take 20%; half of the bids come from four hot channels and the
  rest from channels ``channel-0`` to ``channel-9999``, each with its own URL.
* Event ``n``'s time is ``first_event_time + n * 1_000_000 // rate`` microseconds.

Where it differs from the Java generator:

* Random numbers come from numpy, one generator per chunk of 50,000 events seeded with
  ``(seed, chunk)``, so the same ``(seed, events, rate, first_event_time)`` gives the same events
  and a smaller ``events`` gives a prefix of a larger one. The Java generator's draws are its own
  (an unseeded ``SplittableRandom`` in nexmark-flink, ``Random(eventId)`` in Beam): the
  distributions are the same, the values are not.
* Event numbers start at 0 as in Beam, so the first person and the first auction are 1000. The
  Flink source starts at event number 2 (first event id 1 plus first event number 1), so there
  person 1000 and auction 1000 never occur.
* Times keep microseconds; Java truncates each event's time to milliseconds (ten events per ms
  at 10,000 events per second). Auction lengths are whole milliseconds, as in Java.
* nexmark-flink's BidGenerator adds the first person id to the bidder twice, so its bidders are
  2000 above the persons they stand for; bidders here are the persons themselves (as in Beam).
* The padding and the channel URLs use lower-case letters only; Java's padding also has some
  characters from 'H' to '`' (a negative ``int`` modulo 26).
* The channel URLs are drawn from ``seed``; Java draws them once per JVM, unseeded.
* No out-of-order events and no rate changes (Java's outOfOrderGroupSize 1 and a constant rate,
  its defaults) and one generator (Java's numEventGenerators 1).

Columns are snake_case versions of Nexmark's (``emailAddress`` is ``email_address``,
``dateTime`` is ``date_time``, ``initialBid`` is ``initial_bid`` ...), times are UTC
timestamps with microseconds (Spark TIMESTAMP).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..timeparts import TimestampLike, epoch_micros
from .strings import exact_strings, extra_lengths, fixed_width_digits, int32_bit_reversed_abs, random_strings

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
HOT_BLOCK = 100                 # HOT_AUCTION_RATIO, HOT_BIDDER_RATIO, HOT_SELLER_RATIO in Java
ID_LEAD = 10                    # PERSON_ID_LEAD, AUCTION_ID_LEAD: ids chosen ahead of the last one
NUM_ACTIVE_PEOPLE = 1000
NUM_IN_FLIGHT_AUCTIONS = 100
AVERAGE_BYTES = {"person": 200, "auction": 500, "bid": 100}
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
NUM_CHANNELS = 10_000
CHUNK_EVENTS = 50_000

US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
             "Kent", "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")

_TIME = pa.timestamp("us", tz="UTC")
SCHEMAS = {
    "person": pa.schema([("id", pa.int64()), ("name", pa.string()), ("email_address", pa.string()),
                         ("credit_card", pa.string()), ("city", pa.string()), ("state", pa.string()),
                         ("date_time", _TIME), ("extra", pa.string())]),
    "auction": pa.schema([("id", pa.int64()), ("item_name", pa.string()), ("description", pa.string()),
                          ("initial_bid", pa.int64()), ("reserve", pa.int64()), ("date_time", _TIME),
                          ("expires", _TIME), ("seller", pa.int64()), ("category", pa.int64()),
                          ("extra", pa.string())]),
    "bid": pa.schema([("auction", pa.int64()), ("bidder", pa.int64()), ("price", pa.int64()),
                      ("channel", pa.string()), ("url", pa.string()), ("date_time", _TIME),
                      ("extra", pa.string())]),
}


@dataclass(frozen=True)
class NexmarkConfig:
    """What to generate: ``events`` events at ``rate`` events per second of event time from
    ``first_event_time`` (naive means UTC), drawn from ``seed``; the hot ratios are
    NexmarkConfiguration's."""

    events: int
    rate: int = 10_000
    seed: int = 0
    first_event_time: TimestampLike = "2015-07-15 00:00:00"
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4

    def __post_init__(self) -> None:
        if self.events < 0 or self.rate < 1 or self.seed < 0:
            raise ValueError("events and seed must be at least 0 and rate at least 1")
        if min(self.hot_auction_ratio, self.hot_sellers_ratio, self.hot_bidders_ratio) < 1:
            raise ValueError("the hot ratios must be at least 1")

    def offsets_us(self, numbers: np.ndarray) -> np.ndarray:
        """Microseconds from the first event to the events numbered ``numbers``."""
        return numbers * 1_000_000 // self.rate


def last_base0_person_id(numbers: np.ndarray) -> np.ndarray:
    """The newest person id (minus 1000) at each event number: the event's own id for a person."""
    epoch, offset = np.divmod(numbers, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + np.minimum(offset, PERSON_PROPORTION - 1)


def last_base0_auction_id(numbers: np.ndarray) -> np.ndarray:
    """The newest auction id (minus 1000) at each event number: the event's own id for an auction."""
    epoch, offset = np.divmod(numbers, TOTAL_PROPORTION)
    in_epoch = np.clip(offset - PERSON_PROPORTION, -1, AUCTION_PROPORTION - 1)
    return epoch * AUCTION_PROPORTION + in_epoch     # -1 means the last one of the previous epoch


def _any_person(rng: np.random.Generator, numbers: np.ndarray) -> np.ndarray:
    """PersonGenerator.nextBase0PersonId: one of the last 1000 persons or the next 10."""
    existing = last_base0_person_id(numbers) + 1
    active = np.minimum(existing, NUM_ACTIVE_PEOPLE)
    return existing - active + rng.integers(0, active + ID_LEAD)


def _any_auction(rng: np.random.Generator, numbers: np.ndarray) -> np.ndarray:
    """AuctionGenerator.nextBase0AuctionId: one of the last 101 auctions or the next 10."""
    newest = last_base0_auction_id(numbers)
    oldest = np.maximum(newest - NUM_IN_FLIGHT_AUCTIONS, 0)
    return oldest + rng.integers(0, newest - oldest + 1 + ID_LEAD)


def _prices(rng: np.random.Generator, count: int) -> np.ndarray:
    """PriceGenerator.nextPrice: ``round(100 * 10 ** (6 u))`` cents, rounding halves up as Java."""
    return np.floor(10.0 ** (rng.random(count) * 6.0) * 100.0 + 0.5).astype(np.int64)


def _hot_or(rng: np.random.Generator, ratio: int, hot: np.ndarray, other: np.ndarray) -> np.ndarray:
    """``hot`` with odds ``1 - 1/ratio``, else ``other`` (Java: ``random.nextInt(ratio) > 0``)."""
    return np.where(rng.integers(0, ratio, size=len(hot)) > 0, hot, other)


def _times(config: NexmarkConfig, numbers: np.ndarray) -> pa.Array:
    first = epoch_micros(config.first_event_time)
    return pa.array(first + config.offsets_us(numbers), type=pa.int64()).cast(_TIME)


def _lengths(strings: pa.Array) -> np.ndarray:
    return pc.binary_length(strings).to_numpy()


def _persons(rng: np.random.Generator, config: NexmarkConfig, numbers: np.ndarray) -> pa.Table:
    count = len(numbers)
    names = pa.array([f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES])
    name = names.take(rng.integers(0, len(FIRST_NAMES), count) * len(LAST_NAMES)
                      + rng.integers(0, len(LAST_NAMES), count))
    email = pc.binary_join_element_wise(random_strings(rng, count, 7), random_strings(rng, count, 5), "@")
    email = pc.binary_join_element_wise(email, ".com", "")
    credit_card = fixed_width_digits(rng, count, groups=4, width=4)
    city = pa.array(US_CITIES).take(rng.integers(0, len(US_CITIES), count))
    state = pa.array(US_STATES).take(rng.integers(0, len(US_STATES), count))
    size = cast(np.ndarray, 8 + sum(_lengths(column) for column in (name, email, credit_card, city, state)))
    extra = exact_strings(rng, extra_lengths(rng, size, AVERAGE_BYTES["person"]))
    return pa.table([last_base0_person_id(numbers) + FIRST_PERSON_ID, name, email, credit_card, city, state,
                     _times(config, numbers), extra], schema=SCHEMAS["person"])


def _auctions(rng: np.random.Generator, config: NexmarkConfig, numbers: np.ndarray) -> pa.Table:
    count = len(numbers)
    hot_seller = last_base0_person_id(numbers) // HOT_BLOCK * HOT_BLOCK
    seller = _hot_or(rng, config.hot_sellers_ratio, hot_seller, _any_person(rng, numbers)) + FIRST_PERSON_ID
    category = FIRST_CATEGORY_ID + rng.integers(0, NUM_CATEGORIES, count)
    initial_bid = _prices(rng, count)
    # An auction lasts on average as long as the next 100 auctions take to arrive (Java's horizon).
    events_for_auctions = NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION // AUCTION_PROPORTION
    horizon_ms = (config.offsets_us(numbers + events_for_auctions) - config.offsets_us(numbers)) // 1000
    length_ms = 1 + rng.integers(0, np.maximum(2 * horizon_ms, 1))
    item_name = random_strings(rng, count, 20)
    description = random_strings(rng, count, 100)
    reserve = initial_bid + _prices(rng, count)
    size = 8 + _lengths(item_name) + _lengths(description) + 5 * 8
    extra = exact_strings(rng, extra_lengths(rng, size, AVERAGE_BYTES["auction"]))
    times = _times(config, numbers)
    expires = pa.array(times.cast(pa.int64()).to_numpy() + length_ms * 1000).cast(_TIME)
    return pa.table([last_base0_auction_id(numbers) + FIRST_AUCTION_ID, item_name, description, initial_bid,
                     reserve, times, expires, seller, category, extra], schema=SCHEMAS["auction"])


@dataclass(frozen=True)
class _Channels:
    """The channels bids come from, the four hot ones first, and each one's URL."""

    names: pa.Array
    urls: pa.Array

    @classmethod
    def draw(cls, seed: int) -> _Channels:
        rng = np.random.default_rng([seed, 1])
        count = len(HOT_CHANNELS) + NUM_CHANNELS
        path = [random_strings(rng, count, 5, special="_") for _ in range(3)]
        base = pc.binary_join_element_wise("https://www.nexmark.com", *path, "item.htm?query=1", "/")
        numbers = pa.array(np.arange(NUM_CHANNELS)).cast(pa.string())
        channel_ids = pa.array(int32_bit_reversed_abs(np.arange(NUM_CHANNELS))).cast(pa.string())
        with_id = np.concatenate([np.zeros(len(HOT_CHANNELS), bool), rng.integers(0, 10, NUM_CHANNELS) > 0])
        hot_blanks = pa.array([""] * len(HOT_CHANNELS))
        suffix = pa.concat_arrays([hot_blanks, pc.binary_join_element_wise("&channel_id=", channel_ids, "")])
        urls = pc.binary_join_element_wise(base, pc.if_else(pa.array(with_id), suffix, ""), "")
        names = pa.concat_arrays([pa.array(HOT_CHANNELS), pc.binary_join_element_wise("channel-", numbers, "")])
        return cls(names, urls)


def _bids(rng: np.random.Generator, config: NexmarkConfig, channels: _Channels, numbers: np.ndarray) -> pa.Table:
    count = len(numbers)
    hot_auction = last_base0_auction_id(numbers) // HOT_BLOCK * HOT_BLOCK
    auction = _hot_or(rng, config.hot_auction_ratio, hot_auction, _any_auction(rng, numbers)) + FIRST_AUCTION_ID
    hot_bidder = last_base0_person_id(numbers) // HOT_BLOCK * HOT_BLOCK + 1
    bidder = _hot_or(rng, config.hot_bidders_ratio, hot_bidder, _any_person(rng, numbers)) + FIRST_PERSON_ID
    price = _prices(rng, count)
    hot_channel = rng.integers(0, len(HOT_CHANNELS), count)
    other_channel = len(HOT_CHANNELS) + rng.integers(0, NUM_CHANNELS, count)
    channel = _hot_or(rng, 2, hot_channel, other_channel)        # Java's HOT_CHANNELS_RATIO
    extra = exact_strings(rng, extra_lengths(rng, np.full(count, 4 * 8), AVERAGE_BYTES["bid"]))
    return pa.table([auction, bidder, price, channels.names.take(channel), channels.urls.take(channel),
                     _times(config, numbers), extra], schema=SCHEMAS["bid"])


@dataclass(frozen=True)
class NexmarkEvents:
    """Generated events as Arrow tables, one per Nexmark stream, each in event order."""

    persons: pa.Table
    auctions: pa.Table
    bids: pa.Table

    def tables(self) -> dict[str, pa.Table]:
        """The tables by Nexmark stream name: ``person``, ``auction`` and ``bid``."""
        return {"person": self.persons, "auction": self.auctions, "bid": self.bids}

    def to_pandas(self) -> dict[str, pd.DataFrame]:
        """pandas DataFrames by stream name (times as ``datetime64[us, UTC]``)."""
        return {name: table.to_pandas() for name, table in self.tables().items()}

    def to_spark(self, spark: SparkSession) -> dict[str, DataFrame]:
        """Spark DataFrames by stream name, e.g. for ``Warehouse.ingest(name, frame)``."""
        return {name: spark.createDataFrame(table) for name, table in self.tables().items()}

    def write_parquet(self, path: str | os.PathLike[str], part: int = 0) -> None:
        """Write each stream as ``path/<stream>.parquet/part-<part>.parquet`` (a folder per stream,
        which Spark, ``LOAD '<path>/bid.parquet' INTO bid`` and DuckDB read whole)."""
        for name, table in self.tables().items():
            folder = os.path.join(path, f"{name}.parquet")
            os.makedirs(folder, exist_ok=True)
            pq.write_table(table, os.path.join(folder, f"part-{part:05d}.parquet"))


def _chunk(config: NexmarkConfig, channels: _Channels, index: int) -> NexmarkEvents:
    """Events ``index * CHUNK_EVENTS`` up to the next chunk or ``config.events``. The whole chunk is
    always drawn, so the events do not depend on where ``config.events`` cuts it."""
    rng = np.random.default_rng([config.seed, 0, index])
    numbers = np.arange(index * CHUNK_EVENTS, (index + 1) * CHUNK_EVENTS, dtype=np.int64)
    offset = numbers % TOTAL_PROPORTION
    kinds = {"person": offset < PERSON_PROPORTION, "bid": offset >= PERSON_PROPORTION + AUCTION_PROPORTION}
    kinds["auction"] = ~kinds["person"] & ~kinds["bid"]
    tables = {"person": _persons(rng, config, numbers[kinds["person"]]),
              "auction": _auctions(rng, config, numbers[kinds["auction"]]),
              "bid": _bids(rng, config, channels, numbers[kinds["bid"]])}
    kept = {name: int(np.count_nonzero(kinds[name] & (numbers < config.events))) for name in tables}
    return NexmarkEvents(*(tables[name].slice(0, kept[name]) for name in ("person", "auction", "bid")))


def generate_chunks(config: NexmarkConfig) -> Iterator[NexmarkEvents]:
    """The events in chunks of 50,000 (the last one shorter), for output larger than memory."""
    channels = _Channels.draw(config.seed)
    for index in range(math.ceil(config.events / CHUNK_EVENTS)):
        yield _chunk(config, channels, index)


def generate(config: NexmarkConfig) -> NexmarkEvents:
    """All the events of ``config`` (tables of one Arrow chunk per 50,000 events)."""
    chunks = list(generate_chunks(config))
    return NexmarkEvents(*(pa.concat_tables([getattr(chunk, kind) for chunk in chunks])
                           if chunks else SCHEMAS[name].empty_table()
                           for kind, name in (("persons", "person"), ("auctions", "auction"), ("bids", "bid"))))


def write_parquet(config: NexmarkConfig, path: str | os.PathLike[str]) -> None:
    """Generate and write the events chunk by chunk (see NexmarkEvents.write_parquet)."""
    for part, chunk in enumerate(generate_chunks(config)):
        chunk.write_parquet(path, part)


def stream_statements(partition_length_seconds: int) -> str:
    """CREATE STREAM statements for ``person``, ``auction`` and ``bid`` matching the generated
    columns, partitioned on ``date_time``."""
    types = {pa.int64(): "BIGINT", pa.string(): "STRING", _TIME: "TIMESTAMP"}
    statements = []
    for name, schema in SCHEMAS.items():
        columns = ", ".join(f"{field.name} {types[field.type]}" for field in schema)
        statements.append(f"CREATE STREAM {name} ({columns}) TIMESTAMP date_time "
                          f"PARTITION LENGTH {partition_length_seconds};")
    return "\n".join(statements)
