"""Nexmark queries 1, 2, 3, 4, 5, 7 and 8 as Spark SQL batch queries over ``person``, ``auction``
and ``bid`` (the generator's columns), after nexmark-flink's ``queries/q*.sql``.

Flink's streaming windows become fixed event-time windows aligned to the Unix epoch, half-open
``[start, end)`` as Flink's TUMBLE and HOP and Spark's ``window()`` make them. Where the Flink
query keeps only some columns, a batch query over many windows also keeps the window's start, so
its rows say which window they belong to. Other departures, each to keep a result exact:

* q4's ``AVG`` over BIGINT is Flink's, an integer: ``sum DIV count`` (Spark's AVG is a double).
* q7 names its columns after what they hold (``auction, price, bidder, ...``); the Flink sink
  declares ``auction, bidder, price`` but receives ``B.auction, B.price, B.bidder``. It also
  returns the window's end (``window_end``): a bid at a window's very end can be the highest of
  two windows, and then it is two rows that differ only there.
"""

from __future__ import annotations


# the streams each query reads
QUERY_STREAMS = {"q1": ("bid",), "q2": ("bid",), "q3": ("person", "auction"), "q4": ("auction", "bid"),
                 "q5": ("bid",), "q7": ("bid",), "q8": ("person", "auction")}


def check_windows(window_seconds: int, slide_seconds: int) -> None:
    """Refuse windows that are not whole seconds or not a multiple of the slide."""
    if window_seconds < 1 or slide_seconds < 1 or window_seconds % slide_seconds:
        raise ValueError("the window and the slide must be whole seconds, the window a multiple of the slide")


def nexmark_queries(window_seconds: int = 10, slide_seconds: int = 2) -> dict[str, str]:
    """The queries by name (``q1`` ...). ``window_seconds`` is the window of q5, q7 and q8 and
    ``slide_seconds`` q5's slide (10 and 2 in nexmark-flink)."""
    check_windows(window_seconds, slide_seconds)
    tumble = f"window(date_time, '{window_seconds} seconds')"
    hop = f"window(date_time, '{window_seconds} seconds', '{slide_seconds} seconds')"
    return {
        # currency conversion: dollars to euros
        "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid",
        # selection: bids on some auctions
        "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
        # local item suggestion: sellers in three states of auctions in category 10
        "q3": """SELECT P.name, P.city, P.state, A.id
                 FROM auction AS A JOIN person AS P ON A.seller = P.id
                 WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')""",
        # average closing price per category: the highest bid while the auction is open
        "q4": """SELECT category, sum(final) DIV count(*) AS average_final
                 FROM (SELECT A.id, A.category, max(B.price) AS final
                       FROM auction AS A JOIN bid AS B
                         ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
                       GROUP BY A.id, A.category) AS Q
                 GROUP BY category""",
        # hot items: the auctions with the most bids in each sliding window
        "q5": f"""WITH auction_bids AS (
                      SELECT auction, count(*) AS num, w.start AS starttime, w.end AS endtime
                      FROM (SELECT auction, {hop} AS w FROM bid) AS B
                      GROUP BY auction, w.start, w.end)
                  SELECT AB.auction, AB.num, AB.starttime
                  FROM auction_bids AS AB
                  JOIN (SELECT max(num) AS maxn, starttime, endtime FROM auction_bids
                        GROUP BY starttime, endtime) AS MB
                    ON AB.starttime = MB.starttime AND AB.endtime = MB.endtime AND AB.num >= MB.maxn""",
        # highest bid: the bids at each tumbling window's highest price, from the window's start up
        # to and including its end (Flink's BETWEEN)
        "q7": f"""SELECT B.auction, B.price, B.bidder, B.date_time, B.extra, B1.date_time AS window_end
                  FROM bid AS B
                  JOIN (SELECT max(price) AS maxprice, w.end AS date_time
                        FROM (SELECT price, {tumble} AS w FROM bid) AS W
                        GROUP BY w.start, w.end) AS B1
                    ON B.price = B1.maxprice
                  WHERE B.date_time BETWEEN B1.date_time - INTERVAL {window_seconds} SECONDS AND B1.date_time""",
        # monitor new users: persons who open an auction in the window they registered in
        "q8": f"""SELECT P.id, P.name, P.starttime
                  FROM (SELECT id, name, w.start AS starttime, w.end AS endtime
                        FROM (SELECT id, name, {tumble} AS w FROM person) AS R
                        GROUP BY id, name, w.start, w.end) AS P
                  JOIN (SELECT seller, w.start AS starttime, w.end AS endtime
                        FROM (SELECT seller, {tumble} AS w FROM auction) AS S
                        GROUP BY seller, w.start, w.end) AS A
                    ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    }
