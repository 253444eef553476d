"""The paper's network-monitoring example: the stream M of packet losses per (src, dest) pair, the
hand-written views Helper and View2, and a synthetic generator of minutes of M.

View2 reports the (src, dest) pairs whose loss exceeded 10 in each of the last four or more
consecutive minutes. The paper's pair 10.0.0.1 -> 10.0.0.2 reaches ct=4, sum_loss=71 at 10:04
and ct=5, sum_loss=87 at 10:05, and drops out at 10:06.
"""

from __future__ import annotations

import random

import pandas as pd


def stream_ddl(name: str) -> str:
    """CREATE STREAM for a stream of measurements like M, in one-minute parts."""
    return f"""
CREATE STREAM {name} (ts TIMESTAMP, src STRING, dest STRING, loss INT)
  TIMESTAMP ts PARTITION LENGTH 60"""


NETWORK_DDL = stream_ddl("M") + """;

CREATE VIEW Helper AS
INITIALIZE Helper[i] AS
  SELECT src, dest, 1 AS ct, loss AS sum_loss FROM M[i] WHERE loss > 10
UPDATE Helper[j] AS
  SELECT n.src, n.dest, coalesce(p.ct, 0) + 1 AS ct, coalesce(p.sum_loss, 0) + n.loss AS sum_loss
  FROM M[j] AS n LEFT OUTER JOIN Helper[j-1] AS p ON n.src = p.src AND n.dest = p.dest
  WHERE n.loss > 10
PARTITION LENGTH 60;

CREATE VIEW View2 AS
INITIALIZE View2[i] AS SELECT src, dest, ct, sum_loss FROM Helper[i] WHERE ct >= 4
UPDATE View2[j] AS SELECT src, dest, ct, sum_loss FROM Helper[j] WHERE ct >= 4
PARTITION LENGTH 60;
"""
START = pd.Timestamp("2015-01-01 10:00:00")
PAPER_PAIR = ("10.0.0.1", "10.0.0.2")
PAPER_LOSSES = (6, 12, 15, 24, 20, 16, 7, 30, 31, 2)
SEED = 2015


def minute_batch(start: pd.Timestamp, paper_loss: int, pairs: int, rng: random.Random,
                 rows: int | None = None, selectivity: float | None = None) -> pd.DataFrame:
    """One minute of measurements: the paper's pair, then ``rows`` (default ``pairs``) rows cycling
    over ``pairs`` other pairs. Their losses are uniform in 0..30, or, with ``selectivity``, above 10
    (what Helper keeps) with that probability."""
    def loss() -> int:
        if selectivity is None:
            return rng.randint(0, 30)
        return rng.randint(11, 30) if rng.random() < selectivity else rng.randint(0, 10)

    measurements = [(start, *PAPER_PAIR, paper_loss)]
    measurements += [(start + pd.Timedelta(seconds=rng.randrange(60)), f"10.0.1.{k}", f"10.0.2.{k}", loss())
                     for k in (r % pairs + 1 for r in range(pairs if rows is None else rows))]
    return pd.DataFrame(measurements, columns=["ts", "src", "dest", "loss"])


def network_stream(parts: int = 10, pairs: int = 4, selectivity: float | None = None,
                   rows_per_part: int | None = None, seed: int = SEED) -> pd.DataFrame:
    """``parts`` minutes of the paper's stream M from 10:00: per minute, the paper's pair (its losses
    repeat every ten minutes) plus ``rows_per_part - 1`` rows over ``pairs`` other pairs (one row
    per pair by default); see ``minute_batch``."""
    rng = random.Random(seed)
    others = None if rows_per_part is None else rows_per_part - 1
    return pd.concat([minute_batch(START + pd.Timedelta(minutes=minute), PAPER_LOSSES[minute % len(PAPER_LOSSES)],
                                   pairs, rng, others, selectivity) for minute in range(parts)],
                     ignore_index=True)
