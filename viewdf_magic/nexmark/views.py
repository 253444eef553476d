"""Nexmark q1-q5, q7 and q8 as ViewDF views over the streams ``person``, ``auction`` and ``bid``,
written as a user of the language would write them (docs/nexmark.md explains each one).

Every stream has parts of ``part_seconds``. Where a view's part stands for a window, the window is
named by its end:

* q5 (and its window view ``q5_bids``) has parts of ``slide_seconds``; part j holds the window that
  **ends at the end of part j**, ``[end(j) - window, end(j))``.
* q8 has parts of ``window_seconds`` (tumbling windows): part j holds the window ``[start(j), end(j))``,
  again the window ending at the end of part j.
* q7 has parts of ``window_seconds`` too, but part j holds the window that **ends at the start of
  part j**: Flink's q7 keeps the bids up to and including the window's end, the first instant of the
  next window, and no part may read a later part. Part j reads only the first stream part of its own
  span, so it is computed as soon as that part arrives, one stream part after the window ends.

q1 and q2 hold each part's bids; q3 and q4 have no window: q3's part j holds the pairs whose later
row (person or auction) is in part j, and q4's part j holds the query over every event before the
end of part j. The views with state or helpers (q4, q5, q7) have a RECOMPUTE clause, the batch query
over the parts the view part stands for, so VERIFY VIEW and a replay's naive timing work.
"""

from __future__ import annotations

from .queries import check_windows

NEXMARK_VIEWS = ("q1", "q2", "q3", "q4", "q5", "q7", "q8")


def _viewdf(name: str, query: str, length: int | None = None, recompute: str | None = None) -> str:
    """A view whose part is ``query`` (``{j}`` stands for the part variable), with a RECOMPUTE clause
    when ``recompute`` is given."""
    clauses = [f"INITIALIZE {name}[i] AS {query.format(j='i')}", f"UPDATE {name}[j] AS {query.format(j='j')}"]
    if recompute is not None:
        clauses.append(f"RECOMPUTE {name}[j] AS {recompute.format(j='j')}")
    if length is not None:
        clauses.append(f"PARTITION LENGTH {length}")
    return f"CREATE VIEW {name} AS\n" + "\n".join(clauses) + ";"


def _subscript(scale: int, offset: int) -> str:
    """``scale * {j} + offset``, written as a user would (``{j}``, ``{j}-4``, ``5*{j}+4``)."""
    term = "{j}" if scale == 1 else f"{scale}*{{j}}"
    return term if offset == 0 else f"{term}{offset:+d}"


def _parts(scale: int, low: int, high: int) -> str:
    """Source parts ``scale * {j} + low`` to ``scale * {j} + high``."""
    first = _subscript(scale, low)
    return first if low == high else f"{first} .. {_subscript(scale, high)}"


def _q1() -> list[str]:
    return [_viewdf("q1", "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid[{j}]")]


def _q2() -> list[str]:
    return [_viewdf("q2", "SELECT auction, price FROM bid[{j}] WHERE auction % 123 = 0")]


def _q3() -> list[str]:
    """Sellers in OR, ID and CA and auctions in category 10 kept apart, so that a step reads their
    history rather than the streams'; a pair appears in the part of its later row."""
    pair = "SELECT P.name, P.city, P.state, A.id FROM q3_auctions[{a}] AS A JOIN q3_sellers[{p}] AS P ON A.seller = P.id"
    return [
        _viewdf("q3_sellers", "SELECT id, name, city, state FROM person[{j}] WHERE state IN ('OR', 'ID', 'CA')"),
        _viewdf("q3_auctions", "SELECT id, seller FROM auction[{j}] WHERE category = 10"),
        _viewdf("q3", f"{pair.format(a='{j}', p='.. {j}')}\n  UNION ALL {pair.format(a='.. {j}-1', p='{j}')}"),
    ]


def _q4(part_seconds: int) -> list[str]:
    """The auctions that can still take a bid, each with its highest bid so far; per category the
    sum and count of the auctions' highest bids, changed by the auctions whose highest bid changed."""
    ends = f"INTERVAL {part_seconds} SECONDS"
    # part_end: the end of the part being computed (a bid at or after it comes in a later part)
    new = (f"SELECT id, category, date_time, expires, CAST(NULL AS BIGINT) AS final, "
           f"PART_TIMESTAMP + {ends} AS part_end FROM auction[{{j}}]")
    kept = (f"SELECT id, category, date_time, expires, final, PART_TIMESTAMP + INTERVAL {2 * part_seconds} SECONDS "
            f"AS part_end "
            f"FROM q4_auctions[j-1] WHERE still_open")
    step = """WITH open AS ({open}),
     best AS (SELECT O.id, max(B.price) AS price FROM open AS O JOIN bid[{j}] AS B
              ON B.auction = O.id AND B.date_time BETWEEN O.date_time AND O.expires GROUP BY O.id)
SELECT O.id, O.category, O.date_time, O.expires, greatest(O.final, best.price) AS final, O.final AS previous,
       O.expires >= O.part_end AS still_open
FROM open AS O LEFT JOIN best ON O.id = best.id
WHERE O.expires >= O.part_end OR best.price > coalesce(O.final, 0)"""
    # the auctions whose highest bid changed in part {j}: how much, and whether the auction is new ({since}: more
    # columns, for the RANGE clause)
    changed = ("SELECT category, final - coalesce(previous, 0) AS total, "
               "CASE WHEN previous IS NULL THEN 1 ELSE 0 END AS auctions{since} FROM q4_auctions[{j}] "
               "WHERE NOT final <=> previous")
    # from scratch: the batch query over every event up to the end of the part
    batch = """SELECT category, sum(final) DIV count(*) AS average_final
FROM (SELECT A.id, A.category, max(B.price) AS final FROM auction AS A JOIN bid AS B
      ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires GROUP BY A.id, A.category)
GROUP BY category"""
    # a run of parts __vdf_first .. __vdf_last in one query: each auction open from the part it arrives in (or,
    # kept open, from the run's first part) to the part holding its expiry, its highest bid so far a running
    # maximum over those parts; the same rows UPDATE gives part after part
    auctions_run = f"""WITH open AS (
  SELECT id, category, date_time, expires, CAST(NULL AS BIGINT) AS before, __vdf_j AS born FROM auction[j]
  UNION ALL SELECT id, category, date_time, expires, final, __vdf_first FROM q4_auctions[j-1] WHERE still_open),
alive AS (SELECT O.*, explode(sequence(born, least(__vdf_last, greatest(born, unix_seconds(expires) DIV {part_seconds}))))
  AS part FROM open AS O),
best AS (SELECT O.id, B.__vdf_j AS part, max(B.price) AS price FROM open AS O JOIN bid[j] AS B
  ON B.auction = O.id AND B.date_time BETWEEN O.date_time AND O.expires GROUP BY O.id, B.__vdf_j),
running AS (SELECT A.id, A.category, A.date_time, A.expires, A.part, X.price AS best,
  greatest(A.before, max(X.price) OVER (PARTITION BY A.id ORDER BY A.part)) AS final,
  greatest(A.before, max(X.price) OVER (PARTITION BY A.id ORDER BY A.part ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
    AS previous
  FROM alive AS A LEFT JOIN best AS X ON X.id = A.id AND X.part = A.part)
SELECT id, category, date_time, expires, final, previous,
       expires >= timestamp_seconds((part + 1) * {part_seconds}) AS still_open, part
FROM running WHERE expires >= timestamp_seconds((part + 1) * {part_seconds}) OR best > coalesce(previous, 0)"""
    # every category's running sums: each change counts for its part and the run's later parts
    categories_run = f"""SELECT category, sum(total), sum(auctions), run.part FROM (
  SELECT category, total, auctions, __vdf_first - 1 AS since FROM q4_categories[j-1]
  UNION ALL {changed.format(j='j', since=', __vdf_j AS since')}) AS changes
JOIN (SELECT explode(sequence(__vdf_first, __vdf_last)) AS part) AS run ON changes.since <= run.part
GROUP BY category, run.part"""
    return [
        f"CREATE VIEW q4_auctions AS\nINITIALIZE q4_auctions[i] AS {step.format(open=new.format(j='i'), j='i')}\n"
        f"UPDATE q4_auctions[j] AS {step.format(open=new.format(j='j') + ' UNION ALL ' + kept, j='j')}\n"
        f"RANGE q4_auctions[j] AS {auctions_run};",
        f"CREATE VIEW q4_categories AS\n"
        f"INITIALIZE q4_categories[i] AS SELECT category, sum(total) AS total, sum(auctions) AS auctions "
        f"FROM ({changed.format(j='i', since='')}) GROUP BY category\n"
        f"UPDATE q4_categories[j] AS SELECT category, sum(total), sum(auctions) FROM ("
        f"SELECT category, total, auctions FROM q4_categories[j-1] UNION ALL {changed.format(j='j', since='')}) "
        f"GROUP BY category\n"
        f"RANGE q4_categories[j] AS {categories_run};",
        _viewdf("q4", "SELECT category, total DIV auctions AS average_final FROM q4_categories[{j}]",
                recompute=batch),
    ]


def _q5(window_seconds: int, slide_seconds: int, part_seconds: int) -> list[str]:
    hottest = "SELECT auction, num FROM (SELECT auction, num, max(num) OVER () AS most FROM {counts}) WHERE num = most"
    # the window ending at the end of q5's part j, in bid's parts
    scale = slide_seconds // part_seconds
    window = _parts(scale, scale - window_seconds // part_seconds, scale - 1)
    return [
        f"CREATE VIEW q5_bids AS SELECT auction, count(*) AS num "
        f"FROM bid [WINDOW {window_seconds} SECONDS SLIDE {slide_seconds} SECONDS] GROUP BY auction;",
        _viewdf("q5", hottest.format(counts="q5_bids[{j}]"), recompute=hottest.format(
            counts=f"(SELECT auction, count(*) AS num FROM bid[{window}] GROUP BY auction)")),
    ]


def _q7(window_seconds: int, part_seconds: int) -> list[str]:
    parts = window_seconds // part_seconds
    window = _parts(parts, -parts, -1)       # window j-1's parts; it ends where part j starts
    # window j-1's bids and the bids at its very end, the first instant of window j (Flink's BETWEEN)
    bids = (f"(SELECT * FROM bid[{window}] UNION ALL "
            f"SELECT * FROM bid[{_parts(parts, 0, 0)}] WHERE date_time = PART_TIMESTAMP)")
    # the highest price per window, as Nexmark's q7 groups by the window: one window per part, so the grouping
    # changes no row, and it lets runs of parts be computed in one job (an aggregate without GROUP BY would
    # give a row even for an empty part, which keeps a view to one part per step)
    query = (f"SELECT B.auction, B.price, B.bidder, B.date_time, B.extra FROM {bids} AS B "
             f"JOIN (SELECT max(price) AS maxprice FROM bid[{window}] "
             f"GROUP BY unix_seconds(date_time) DIV {window_seconds}) AS M ON B.price = M.maxprice")
    return [_viewdf("q7", query, window_seconds)]


def _q8(window_seconds: int, part_seconds: int) -> list[str]:
    parts = window_seconds // part_seconds
    window = _parts(parts, 0, parts - 1)
    return [_viewdf("q8", f"SELECT DISTINCT P.id, P.name FROM person[{window}] AS P "
                          f"JOIN auction[{window}] AS A ON P.id = A.seller", window_seconds)]


def view_statements(window_seconds: int = 10, slide_seconds: int = 2, part_seconds: int = 2) -> dict[str, str]:
    """Each query's CREATE VIEW statements (``q1`` ...), helper views first, over streams with parts
    of ``part_seconds``; the slide must be a multiple of the part and the window of the slide."""
    check_windows(window_seconds, slide_seconds)
    if part_seconds < 1 or slide_seconds % part_seconds:
        raise ValueError("the slide must be a multiple of the part")
    queries = {"q1": _q1(), "q2": _q2(), "q3": _q3(), "q4": _q4(part_seconds),
               "q5": _q5(window_seconds, slide_seconds, part_seconds), "q7": _q7(window_seconds, part_seconds),
               "q8": _q8(window_seconds, part_seconds)}
    return {name: "\n".join(statements) for name, statements in queries.items()}
