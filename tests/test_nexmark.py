"""The Nexmark generator against the rules of the Java generator (docs/nexmark.md), checked from
the generated rows alone: counts and ids from the 1 : 3 : 46 mix, references against the persons
and auctions that exist at each bid, shares against the configured odds."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from nexmark.oracle import oracle_rows, spark_rows
from viewdf_magic.nexmark import NexmarkConfig, generate, stream_statements, write_parquet

FIRST = pd.Timestamp("2015-07-15 00:00:00", tz="UTC")


def frames(config: NexmarkConfig) -> dict[str, pd.DataFrame]:
    return generate(config).to_pandas()


def newest(rows: pd.DataFrame, of: pd.DataFrame, by: str = "date_time") -> np.ndarray:
    """For each row of ``rows``, the id of the newest row of ``of`` at or before its time."""
    matched = pd.merge_asof(rows[[by]].reset_index(), of[["date_time", "id"]], left_on=by,
                            right_on="date_time", direction="backward")
    return matched.sort_values("index")["id"].to_numpy()


def within_binomial(observed: int, probabilities: np.ndarray, sigmas: float = 5.0) -> bool:
    expected = probabilities.sum()
    return abs(observed - expected) <= sigmas * math.sqrt((probabilities * (1 - probabilities)).sum())


@pytest.mark.parametrize(("events", "persons", "auctions", "bids"), [
    (1, 1, 0, 0),                   # event 0 is a person
    (4, 1, 3, 0),                   # events 1-3 are auctions
    (1000, 20, 60, 920),            # 20 whole cycles of 50
    (1234, 25, 75, 1134),           # 24 cycles + events 1200-1233: a person, 3 auctions, 30 bids
    (50_007, 1001, 3003, 46_003),   # across the 50,000-event chunk boundary
])
def test_the_event_mix_is_1_3_46_by_event_number(events, persons, auctions, bids):
    tables = generate(NexmarkConfig(events=events)).tables()
    assert {name: table.num_rows for name, table in tables.items()} == {
        "person": persons, "auction": auctions, "bid": bids}


def test_ids_start_at_1000_and_increase_by_one_per_event_of_their_kind():
    data = frames(NexmarkConfig(events=5000))
    assert data["person"]["id"].tolist() == list(range(1000, 1100))
    assert data["auction"]["id"].tolist() == list(range(1000, 1300))


@pytest.mark.parametrize(("rate", "step_us"), [(10_000, 100), (4000, 250), (1, 1_000_000)])
def test_each_event_is_1e6_over_rate_microseconds_after_the_one_before(rate, step_us):
    data = frames(NexmarkConfig(events=777, rate=rate))
    times = pd.concat([data[name]["date_time"] for name in data]).sort_values().reset_index(drop=True)
    assert len(times) == 777 and times[0] == FIRST
    assert set(times.diff().dropna()) == {pd.Timedelta(microseconds=step_us)}
    # a person every 50 events, the auctions on the 3 events after it
    assert (data["person"]["date_time"] == FIRST + pd.to_timedelta(np.arange(16) * 50 * step_us, "us")).all()
    assert data["auction"]["date_time"].iloc[3] == FIRST + pd.Timedelta(microseconds=51 * step_us)


def test_a_rate_that_does_not_divide_a_second_rounds_each_time_down():
    data = frames(NexmarkConfig(events=60, rate=3))
    assert (data["person"]["date_time"] - FIRST).dt.total_seconds().mul(1e6).tolist() == [0, 16_666_666]


def test_the_first_event_time_is_configurable_and_naive_means_utc():
    data = frames(NexmarkConfig(events=3, first_event_time="2020-02-29 23:59:59.5"))
    assert data["person"]["date_time"][0] == pd.Timestamp("2020-02-29 23:59:59.5", tz="UTC")
    assert data["auction"]["date_time"][1] == pd.Timestamp("2020-02-29 23:59:59.5002", tz="UTC")


def test_bids_and_auctions_refer_to_recent_ids_or_to_at_most_10_ahead():
    data = frames(NexmarkConfig(events=120_000))
    bids, auctions, persons = data["bid"], data["auction"], data["person"]
    # auctions: one of the last 101 auctions existing at the bid, or one of the next 10
    last_auction = newest(bids, auctions)
    assert ((bids["auction"] >= np.maximum(last_auction - 100, 1000)) & (bids["auction"] <= last_auction + 10)).all()
    # bidders and sellers: one of the last 1000 persons existing at the event, or one of the next 10
    for rows, column in ((bids, "bidder"), (auctions, "seller")):
        last_person = newest(rows, persons)
        assert ((rows[column] >= np.maximum(last_person - 999, 1000)) & (rows[column] <= last_person + 10)).all()
    # the windows are used: some ids lie ahead of the newest one, and old ones are still chosen
    assert (bids["auction"] > last_auction).any() and (bids["auction"] < last_auction - 90).any()


def test_hot_auctions_hot_bidders_and_hot_sellers_have_the_configured_shares():
    config = NexmarkConfig(events=200_000)
    data = frames(config)
    bids, auctions, persons = data["bid"], data["auction"], data["person"]
    # A bid is for the hot auction (the first of the newest auction's block of 100) with odds
    # 1 - 1/2, or else by a uniform draw among the window of ids that includes it.
    last_auction = newest(bids, auctions) - 1000
    window = last_auction - np.maximum(last_auction - 100, 0) + 1 + 10
    hot = bids["auction"] - 1000 == last_auction // 100 * 100
    assert within_binomial(int(hot.sum()), 0.5 + 0.5 / window)
    # bidders: odds 1 - 1/4 for the second person of the newest person's block of 100
    last_person = newest(bids, persons) - 1000
    window = np.minimum(last_person + 1, 1000) + 10
    hot = bids["bidder"] - 1000 == last_person // 100 * 100 + 1
    assert within_binomial(int(hot.sum()), 0.75 + 0.25 / window)
    # sellers: odds 1 - 1/4 for the first person of the block
    last_person = newest(auctions, persons) - 1000
    window = np.minimum(last_person + 1, 1000) + 10
    hot = auctions["seller"] - 1000 == last_person // 100 * 100
    assert within_binomial(int(hot.sum()), 0.75 + 0.25 / window)


def test_a_hot_ratio_of_one_leaves_only_the_uniform_draw():
    # Java's "random.nextInt(1) > 0" is never true: with ratio 1 no bid is steered to the hot auction
    data = frames(NexmarkConfig(events=100_000, hot_auction_ratio=1))
    bids = data["bid"]
    last_auction = newest(bids, data["auction"]) - 1000
    window = last_auction - np.maximum(last_auction - 100, 0) + 1 + 10
    hot = bids["auction"] - 1000 == last_auction // 100 * 100
    assert within_binomial(int(hot.sum()), 1 / window)
    assert hot.mean() < 0.02


def test_prices_follow_100_times_10_to_the_6u():
    data = frames(NexmarkConfig(events=200_000))
    prices = pd.concat([data["bid"]["price"], data["auction"]["initial_bid"]]).to_numpy()
    assert prices.min() >= 100 and prices.max() <= 100_000_000
    # P(round(100 * 10**(6u)) <= x) = P(u < log10((x + 0.5) / 100) / 6)
    for x in (1000, 100_000, 10_000_000):       # the median is 100,000 cents
        p = math.log10((x + 0.5) / 100) / 6
        assert within_binomial(int((prices <= x).sum()), np.full(len(prices), p))
    auctions = data["auction"]
    assert (auctions["reserve"] - auctions["initial_bid"] >= 100).all()   # initial bid plus another price


def test_auction_fields():
    config = NexmarkConfig(events=100_000)
    auctions = frames(config)["auction"]
    assert set(auctions["category"]) == {10, 11, 12, 13, 14}
    # lengths: 1 ms plus a uniform draw below twice the time 100 auctions take (1666 events, 166 ms)
    length_ms = (auctions["expires"] - auctions["date_time"]).dt.total_seconds() * 1000
    assert (length_ms == length_ms.round()).all() and length_ms.min() >= 1 and length_ms.max() <= 332
    assert abs(length_ms.mean() - 166.5) < 3
    for column, longest in (("item_name", 19), ("description", 99)):
        lengths = auctions[column].str.len()
        assert lengths.max() <= longest and auctions[column].str.fullmatch(r"[a-z]([a-z ]*[a-z])?|").all()
    sizes = 8 + auctions["item_name"].str.len() + auctions["description"].str.len() + 40 + auctions["extra"].str.len()
    assert abs(sizes.mean() - 500) < 2


def test_person_fields():
    persons = frames(NexmarkConfig(events=100_000))["person"]
    first, last = persons["name"].str.split(" ", n=1, expand=True).T.to_numpy()
    assert set(first) <= {"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter",
                          "Walter"}
    assert set(last) <= {"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
    assert set(persons["state"]) == {"AZ", "CA", "ID", "OR", "WA", "WY"}
    assert len(set(persons["city"])) == 10
    assert persons["credit_card"].str.fullmatch(r"\d{4} \d{4} \d{4} \d{4}").all()
    # 3 to 6 and 3 to 4 characters, a space in 13, trimmed (so possibly empty, as in Java)
    assert persons["email_address"].str.fullmatch(r"([a-z]([a-z ]{0,4}[a-z])?)?@([a-z]([a-z ]{0,2}[a-z])?)?\.com").all()
    sizes = 8 + sum(persons[c].str.len() for c in ("name", "email_address", "credit_card", "city", "state", "extra"))
    assert abs(sizes.mean() - 200) < 2


def test_bid_channels_urls_and_padding():
    bids = frames(NexmarkConfig(events=100_000))["bid"]
    hot = bids["channel"].isin(["Google", "Facebook", "Baidu", "Apple"])
    assert within_binomial(int(hot.sum()), np.full(len(bids), 0.5))
    assert bids["channel"][~hot].str.fullmatch(r"channel-\d{1,4}").all()
    assert bids.groupby("channel")["url"].nunique().max() == 1          # one URL per channel
    assert bids["url"].str.fullmatch(r"https://www\.nexmark\.com(/[a-z_]{3,4}){3}/item\.htm\?query=1"
                                     r"(&channel_id=-?\d+)?").all()
    assert not bids["url"][hot].str.contains("channel_id").any()
    with_id = bids[bids["url"].str.contains("channel_id")]
    assert within_binomial(len(with_id), np.full((~hot).sum(), 0.9))
    for channel, url in with_id[["channel", "url"]].drop_duplicates().head(200).itertuples(index=False):
        reversed_bits = int(f"{int(channel.removeprefix('channel-')):032b}"[::-1], 2)
        java_int = reversed_bits - (1 << 32) if reversed_bits >= 1 << 31 else reversed_bits
        java_abs = java_int if java_int == -(1 << 31) else abs(java_int)      # Math.abs(Integer.MIN_VALUE)
        assert url.endswith(f"&channel_id={java_abs}")
    # padding brings a bid to 100 bytes: 68 on top of 4 longs, give or take round(13.6) = 14
    assert bids["extra"].str.len().between(54, 81).all() and set(bids["extra"].str.len()) == set(range(54, 82))


def test_the_same_seed_gives_the_same_events_and_another_seed_others():
    config = NexmarkConfig(events=3000, seed=7)
    first, again = generate(config), generate(config)
    other = generate(NexmarkConfig(events=3000, seed=8))
    for name, table in first.tables().items():
        assert table.equals(again.tables()[name])
        assert not table.equals(other.tables()[name])
    # ids and times do not depend on the seed
    assert first.persons.column("id").equals(other.persons.column("id"))
    assert first.bids.column("date_time").equals(other.bids.column("date_time"))


def test_fewer_events_are_a_prefix_of_more():
    short, long = generate(NexmarkConfig(events=1000)), generate(NexmarkConfig(events=51_000))
    for name, table in short.tables().items():
        assert table.equals(long.tables()[name].slice(0, table.num_rows))


def test_no_events():
    tables = generate(NexmarkConfig(events=0)).tables()
    assert [table.num_rows for table in tables.values()] == [0, 0, 0]
    assert tables["bid"].schema.names == ["auction", "bidder", "price", "channel", "url", "date_time", "extra"]


@pytest.mark.parametrize("bad", [dict(events=-1), dict(events=1, rate=0), dict(events=1, seed=-1),
                                 dict(events=1, hot_auction_ratio=0)])
def test_bad_configurations_are_refused(bad):
    with pytest.raises(ValueError):
        NexmarkConfig(**bad)


def test_spark_frames_match_the_arrow_tables(spark):
    events = generate(NexmarkConfig(events=500))
    frames = events.to_spark(spark)
    assert dict(frames["auction"].dtypes)["expires"] == "timestamp"
    for name, table in events.tables().items():
        expected = table.to_pandas()
        actual = frames[name].toPandas()
        pd.testing.assert_frame_equal(actual, expected.assign(**{
            c: expected[c].dt.tz_localize(None) for c in ("date_time", "expires") if c in expected}),
            check_dtype=False)


def test_parquet_folders_hold_the_generated_tables(tmp_path):
    config = NexmarkConfig(events=50_100)          # two chunks: two files per folder
    write_parquet(config, tmp_path)
    expected = generate(config)
    for name, table in expected.tables().items():
        folder = tmp_path / f"{name}.parquet"
        assert sorted(p.name for p in folder.iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
        assert pq.read_table(folder).equals(table)
    events = generate(NexmarkConfig(events=10))
    events.write_parquet(tmp_path / "small")
    assert pq.read_table(tmp_path / "small" / "bid.parquet").equals(events.bids)


def test_the_bid_folder_loads_into_a_warehouse_stream(make_warehouse, tmp_path):
    write_parquet(NexmarkConfig(events=50_100), tmp_path)
    warehouse = make_warehouse()
    warehouse.run(stream_statements(partition_length_seconds=2))
    warehouse.run(f"LOAD '{tmp_path / 'bid.parquet'}' INTO bid")
    # 50,100 events at 10,000 per second span 5.01 s: two parts of 20,000 events (18,400 bids) and
    # one of 10,100 (9292 bids); 2015-07-15 00:00 UTC is 1,436,918,400 s after the epoch
    parts = warehouse.parts("bid").sort_values("part")
    assert parts["part"].tolist() == [718_459_200, 718_459_201, 718_459_202]
    assert parts["rows"].tolist() == [18_400, 18_400, 9292]
    described = warehouse.execute("DESCRIBE auction")
    assert dict(zip(described["column"], described["type"])) == {
        "id": "bigint", "item_name": "string", "description": "string", "initial_bid": "bigint",
        "reserve": "bigint", "date_time": "timestamp", "expires": "timestamp", "seller": "bigint",
        "category": "bigint", "extra": "string", "PART_TIMESTAMP": "timestamp"}


def test_the_queries_give_what_an_independent_duckdb_formulation_gives(spark):
    from viewdf_magic.nexmark.queries import nexmark_queries

    # 20 s of events starting off the window grid, 4 s windows sliding by 1 s
    events = generate(NexmarkConfig(events=20_000, rate=1000, first_event_time="2015-07-15 00:00:03.5"))
    for name, frame in events.to_spark(spark).items():
        frame.createOrReplaceTempView(name)
    counts = {}
    for name, sql in nexmark_queries(window_seconds=4, slide_seconds=1).items():
        expected = oracle_rows(events, name, 4_000_000, 1_000_000)
        assert spark_rows(spark.sql(sql)) == expected, name
        counts[name] = len(expected)
    # every bid; every category; at least one row per window: hop windows starting at 0 s to 23 s,
    # tumbling windows starting at 0 s to 20 s
    assert counts["q1"] == 18_400 and counts["q4"] == 5 and counts["q5"] >= 24 and counts["q7"] >= 6
    assert counts["q2"] and counts["q3"] and counts["q8"]


def test_window_parameters_are_checked():
    from viewdf_magic.nexmark.queries import nexmark_queries

    with pytest.raises(ValueError):
        nexmark_queries(window_seconds=10, slide_seconds=3)


def test_the_modules_flinks_virtualenv_imports_need_no_pyspark():
    """tools/flink_nexmark.py runs in its own virtualenv, which has no pyspark (it conflicts with PyFlink over
    grpcio): what it imports from this repository must import without it."""
    repo = Path(__file__).resolve().parent.parent
    blocked = ("import sys; sys.modules['pyspark'] = None; "
               "import benchmarks.flink_csv, benchmarks.process_cpu, viewdf_magic.nexmark, "
               "viewdf_magic.nexmark.canonical, viewdf_magic.nexmark.parts")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
