"""Every notebook in notebooks/ runs top to bottom on a fresh kernel and shows what its prose promises."""

from __future__ import annotations

import re
from pathlib import Path

import sys

import nbformat
import pytest

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from execute_notebooks import execute, is_long_form, without_long_forms  # noqa: E402  (the same run as ./run notebooks)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# What each notebook's text says the reader will see, worked out by hand from its data.
PROMISES = {
    "01-quickstart": [
        r"E\[4\]\[4\]\s+d\s+d\s+self\s+each later d\s+d\.loss > 10",       # EXPLAIN: d+'s self loop
        r"CREATE VIEW View1__helper AS\nINITIALIZE View1__helper\[i\] AS",
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+6\n",                                  # the paper's losses start 6, 12
        r"Button\(description='Play'",                                         # the replay widget
        # 10:05: the helper reads M[j] and its previous part, View1 the helper's part; Direct all of M
        r"View1: part 2015-01-01 10:05:00, 1 row, incremental [\d.]+ s \(3 parts read\), "
        r"naive [\d.]+ s \(7 parts read\) ✓ equal",
        r"every part of View1 equals its recomputation: True",
        r"(Image\(value=b'\\x89PNG|Canvas\()",                                 # the timing plot
        r"2015-01-01 10:03:00\s+10\.0\.1\.2\s+10\.0\.2\.2\s+2015-01-01 10:00:40\s+4\s+89\s+29",  # 20+20+20+29
        r"2015-01-01 10:04:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+2015-01-01 10:01:00\s+4\s+71\s+24",  # 12+15+24+20
        r"2015-01-01 10:04:00\s+10\.0\.1\.2\s+10\.0\.2\.2\s+2015-01-01 10:00:40\s+5\s+108\s+29",
        r"2015-01-01 10:05:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+2015-01-01 10:01:00\s+5\s+87\s+24",  # +16
        # the helper after 10:05: the paper's pair has a run in each state; 10.0.1.2's loss of 1 killed its runs
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+2015-01-01 10:05:00\s+2015-01-01 10:04:00\s+"
        r"2015-01-01 10:03:00\s+2015-01-01 10:01:00\n",
        r"10\.0\.1\.1\s+10\.0\.2\.1\s+2015-01-01 10:05:27\s+2015-01-01 10:04:08\s+2015-01-01 10:03:32\s+NaT",
        r"View1: all 6 parts equal their recomputation\.",
    ],
    "02-writing-viewdfs": [
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+4\s+71\s+2015-01-01 10:04:00",      # 12+15+24+20, four minutes in a row
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+163\s+2015-01-01 10:00:00",         # the paper pair's ten-minute total
        r"10\.0\.0\.3\s+10\.0\.0\.4\s+300\s+2015-01-01 10:00:00",
        r"2015-01-01 10:02:00\s+10\.0\.0\.1\s+15\s+eu",                   # the band join's two matches
        r"2015-01-01 10:05:00\s+10\.0\.0\.3\s+30\s+us",
        r"Totals: all 10 parts equal their recomputation\.",
        r"Helper\[23668450\] \(2015-01-01 10:10:00\) UPDATE: 1 row in",
        r"10\.0\.0\.3\s+10\.0\.0\.4\s+11\s+330",                            # the step's preview: 11 minutes of 30
    ],
    "03-sliding-windows": [
        r"SUM\(loss\): subtractable -> running sum",
        r"MAX\(loss\): distributive, not subtractable -> chunked prefix and suffix maxima/minima \(two stacks",
        # 10:05: Sums__pre reads M[j]; Sums__sum reads itself, the new and the expired minute; Sums reads Sums__sum
        r"Sums: part 2015-01-01 10:05:00, 2 rows, incremental [\d.]+ s \(5 parts read\), "
        r"naive [\d.]+ s \(4 parts read\) ✓ equal",
        # Peaks__pre reads M[j]; Peaks__chunks its previous part and two minutes of __pre; Peaks both sides of
        # Peaks__chunks[10:05] (the window 10:02-10:05 is two whole chunks)
        r"Peaks: part 2015-01-01 10:05:00, 2 rows, incremental [\d.]+ s \(6 parts read\), "
        r"naive [\d.]+ s \(4 parts read\) ✓ equal",
        r"every view part equals its recomputation: True",
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+75\s+18\.75",                 # 15+24+20+16 over 10:02 .. 10:05
        r"10\.0\.0\.3\s+10\.0\.0\.4\s+62\s+15\.50",                 # 30+1+30+1
        r"10\.0\.0\.1\s+10\.0\.0\.2\s+24\s+15\n",
        r"10\.0\.0\.3\s+10\.0\.0\.4\s+30\s+1\n",
        r"Peaks__chunks: \[23668444, 23668445\]",                 # 10:04 (10:03 behind), 10:05 (10:02-10:03 behind)
        r"M: \[23668442, 23668443, 23668444, 23668445\]",
    ],
    "04-late-data": [
        # 10:03 is missing: sealed empty; Helper 6, View2 6, Recent__pre 6, __sum 6, Recent 6 (MAX reads __pre)
        r"Inserted 5 rows into 5 parts of M, 1 empty part sealed; 30 view parts computed\.",
        # before: the run breaks at 10:03 and restarts at 1; no alarm; the window 10:02 .. 10:04 holds 15+20
        r"2015-01-01 10:02:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+2\s+27\n2015-01-01 10:04:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+1\s+20\n",
        r"PART_TIMESTAMP  src  dest  ct  sum_loss\n\(0 rows\)",
        r"2015-01-01 10:04:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+35\s+20\n",
        # the late 24: Helper 10:03 .. 10:06 (10:06 unchanged), View2 10:03 .. 10:05 (10:03 unchanged, 10:06 skipped),
        # Recent__pre 10:03, Recent__sum 10:03 .. 10:06 (10:06 unchanged), Recent 10:03 .. 10:05
        r"Inserted 1 row into 1 part of M \(1 late row into 1 earlier part\); late data: "
        r"15 view parts recomputed \(12 changed, 3 unchanged\), 2 skipped by early cutoff\.",
        r"Helper\[2015-01-01 10:03:00 \.\. 10:06:00\], View2\[2015-01-01 10:03:00 \.\. 10:05:00\], "
        r"Recent__pre\[2015-01-01 10:03:00\], "
        r"Recent__sum\[2015-01-01 10:03:00 \.\. 10:06:00\], Recent\[2015-01-01 10:03:00 \.\. 10:05:00\]",
        # after: the paper's numbers, 12+15+24 = 51, +20 = 71, +16 = 87
        r"2015-01-01 10:03:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+3\s+51\n",
        r"2015-01-01 10:04:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+4\s+71\n2015-01-01 10:05:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+5\s+87\n"
        r"\(2 rows\)",
        # windows 10:01-10:03 = 12+15+24, 10:02-10:04 = 15+24+20, 10:03-10:05 = 24+20+16; 10:04-10:06 as before
        r"2015-01-01 10:03:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+51\s+24\n2015-01-01 10:04:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+59\s+24\n"
        r"2015-01-01 10:05:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+60\s+24\n2015-01-01 10:06:00\s+10\.0\.0\.1\s+10\.0\.0\.2\s+43\s+20\n"
        r"\(6 rows\)",
        # SHOW LATENESS: 5 rows on time, the 24 for 10:03 three parts behind 10:06 and the 3 for 10:05 one part
        # behind; the row ALLOWED LATENESS refused (none diverted); 15 + 6 view parts recomputed, 12 + 5 changed,
        # 3 + 1 unchanged
        r"M\s+6\s+7\s+5\s+2\s+2\s+\{1: 1, 3: 1\}\s+3\s+1\s+0\s+None\s+Helper, Recent, Recent__pre, Recent__sum, View2"
        r"\s+21\s+17\s+4\s+[\d.]+\n",
        # CHANGED SINCE: View2 10:04, 10:05; Helper 10:03 .. 10:05
        r"View2\s+23668444\s+2015-01-01 10:04:00\s+1\s+[\d.]+\s+update\s+Helper\[23668444\]\s+[\d-]+ [\d:.]+\n"
        r"View2\s+23668445\s+2015-01-01 10:05:00\s+1\s+[\d.]+\s+update\s+Helper\[23668445\]\s+[\d-]+ [\d:.]+\n\(2 rows\)",
        r"Helper\s+23668443\s+2015-01-01 10:03:00\s+1\s+[\d.]+\s+update\s+M\[23668443\], Helper\[23668442\]\s+[\d-]+ [\d:.]+\n"
        r"Helper\s+23668444\s+2015-01-01 10:04:00\s+1\s+[\d.]+\s+update\s+M\[23668444\], Helper\[23668443\]\s+[\d-]+ [\d:.]+\n"
        r"Helper\s+23668445\s+2015-01-01 10:05:00\s+1\s+[\d.]+\s+update\s+M\[23668445\], Helper\[23668444\]\s+[\d-]+ [\d:.]+\n"
        r"\(3 rows\)",
        r"2015-01-01 10:02:00\s+1\s+ingest\n2015-01-01 10:03:00\s+1\s+late\n2015-01-01 10:04:00\s+1\s+ingest\n",
        # the lineage viewer's details panel: View2[10:04] read Helper[10:04], and through the chain all since 10:01
        r"part: View2\[23668444\] \(2015-01-01 10:04:00\)\nhow: update\nrows: 1\n",
        r"recomputed after late data: yes, 1 time\nread directly: Helper\[23668444\]\n"
        r"computed from, transitively: Helper\[23668441 \.\. 23668444\], M\[23668441 \.\. 23668444\]\n",
        r"part: M\[23668443\] \(2015-01-01 10:03:00\)\nhow: late\nrows: 1\n",
        r"recomputed after late data: it received late rows \(batches arrived \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)\n",
        # 10:02 is 4 parts behind 10:06
        r"M: ALLOWED LATENESS 2 PARTS\.",
        r"1 row is more than ALLOWED LATENESS 2 PARTS behind the newest part of M \(2015-01-01 10:06:00\); "
        r"the oldest is for 2015-01-01 10:02:00\. Nothing was written",
        # a loss of 3 at 10:05: Helper[10:05] unchanged (Helper[10:06], View2[10:05], View2[10:06] skipped);
        # Recent__pre 10:05, Recent__sum and Recent 10:05, 10:06 changed
        r"Inserted 1 row into 1 part of M \(1 late row into 1 earlier part\); late data: "
        r"6 view parts recomputed \(5 changed, 1 unchanged\), 3 skipped by early cutoff\.",
        r"2015-01-01 10:05:00\s+10\.0\.0\.5\s+10\.0\.0\.6\s+3\s+3\n2015-01-01 10:06:00\s+10\.0\.0\.5\s+10\.0\.0\.6\s+3\s+3\n"
        r"\(2 rows\)",
        r"Recent: all 6 parts equal their recomputation\.",
        # the refused row (10:02:30, 40) is not in M
        r"2015-01-01 10:02:10\s+10\.0\.0\.1\s+10\.0\.0\.2\s+15\n2015-01-01 10:03:10\s+10\.0\.0\.1\s+10\.0\.0\.2\s+24\n",
        r"7 rows into 6 parts of M; 12 view parts computed",
        r"Helper and View2 equal the rebuild: True",
    ],
    "05-benchmarking": [
        # once the 4-minute window is full: View1 reads M[j], View1__helper[j-1] and [j]; Sums__pre M[j],
        # Sums__sum itself and the new and the expired minute, Sums the running sum
        r"incremental parts read per step, window full: \{'Sums': \[5\], 'View1': \[3\]\}",
        r"every naive window recomputation equals the incremental part: True",
        r"View1 at 10:05: incremental [\d.]+ s \(3 parts read\)",
        r"Direct, scope 2: [\d.]+ s \(2 parts read\)\nDirect, scope 4: [\d.]+ s \(4 parts read\)\n"
        r"Direct, scope 6: [\d.]+ s \(6 parts read\)",
        r"2015-01-01 10:02:00\s+4\s+3\n",                       # naive: the window fills one minute at a time
        r"2015-01-01 10:05:00\s+5\s+4\n",
        r"<Figure size 1100x350 with 2 Axes>",
    ],
    "06-your-own-data": [
        r"2009-04-01\s+511\s+2009-03-05\n2009-05-01\s+513\s+2009-04-30",   # 28-day parts: 512 is empty
        r"Inserted 60 rows into 12 parts of Stocks, 1 empty part sealed",
        # IBM rose Jan..May 2009 across the empty part (CONTIGUITY EVENTS): 89.46 .. 104.85
        r"2009-04-30\s+IBM\s+2009-01-01\s+5\s+89\.46\s+104\.85",
        r"2009-11-12\s+IBM\s+2009-06-01\s+7\s+103\.01\s+130\.32",
        # December 2009: rising since February (AAPL, GOOG), June (IBM), July (MSFT); AMZN fell
        r"AAPL\s+2009-02-01\s+11\s+89\.31\s+210\.73\n\s*GOOG\s+2009-02-01\s+11\s+337\.99\s+619\.98\n"
        r"\s*IBM\s+2009-06-01\s+7\s+103\.01\s+130\.32\n\s*MSFT\s+2009-07-01\s+6\s+23\.18\s+30\.34\n\(4 rows\)",
        # the 6-part window ending in December: July .. December, as pandas computes it too
        r"IBM\s+121\.2567\s+6\n",
        r"GOOG\s+523\.2783\s+6\n",
        r"2009-06-25\s+104\.1160\s+5\n",     # parts 510..515, 512 empty: (95.09+101.29+104.85+103.01+116.34)/5
        r"Rising: all 13 parts equal their recomputation\.",
        r"Avg6: all 13 parts equal their recomputation\.",
    ],
    "07-match-recognize": [
        # PATTERN reports IBM's second run every month while it grows; MATCH_RECOGNIZE reports the first run once,
        # in the part of June's quote (103.01 < 104.85 ends it), and not the second, still open at the end
        r"2009-11-12\s+IBM\s+2009-06-01\s+7\s+103\.01\s+130\.32",
        r"2009-05-28\s+IBM\s+1\s+2009-01-01\s+5\s+89\.46\s+104\.85\n\(1 row\)",
        # every ended run of two months or more (the oracle's closed matches over 2009)
        r"AMZN\s+1\s+2009-01-01\s+4\s+58\.82\s+80\.52\s+2009-04-30\n\s*AMZN\s+2\s+2009-05-01\s+3\s+77\.99\s+85\.76"
        r"\s+2009-07-23\n\s*AMZN\s+3\s+2009-08-01\s+4\s+81\.19\s+135\.91\s+2009-11-12\n\s*IBM\s+1\s+2009-01-01\s+5"
        r"\s+89\.46\s+104\.85\s+2009-05-28\n\s*MSFT\s+1\s+2009-02-01\s+5\s+15\.81\s+23\.42\s+2009-06-25\n\(5 rows\)",
        # ALL ROWS PER MATCH: a row per quote of IBM's run, RUNNING and FINAL counts
        r"IBM 2009-01-01\s+89\.46\s+A\s+1\s+5\s+1\n",
        r"IBM 2009-05-01\s+104\.85\s+B\s+5\s+5\s+1\n\(5 rows\)",
        r"B2\s+B B\.price > PREV\(B\.price\)\s+B2, end",            # the automaton: B+ is B B*, greedy
        r"Runs: all 13 parts equal their recomputation\.",
    ],
    "08-nexmark": [
        # at saturation, 28,000 events in parts of 2 s: seconds (viewdf: and its set-up), events/s, its
        # lowest-highest over the rounds, events/s per core, events per CPU-s, one round, equal
        *(rf"{query}\s+{system}\s+2\s+\d+\.\d\d\s+{setup}\s+\d+\.\d\s+\d+\.\d-\d+\.\d\s+\d+\.\d\s+\d+\.\d\s+1\s+yes\n"
          for query in ("q1", "q5", "q7")
          for system, setup in (("viewdf", r"\d+\.\d\d"), ("streaming", "-"), ("naive", "-"))),
        r"<Figure size 1100x380 with 2 Axes>",
        r"CREATE VIEW q5_bids AS SELECT auction, count\(\*\) AS num FROM bid \[WINDOW 4 SECONDS SLIDE 1 SECONDS\]",
        r"RECOMPUTE q5\[j\] AS .* FROM bid\[j-3 \.\. j\] GROUP BY auction",      # the 4 s window in parts of 1 s
        r"7360 bids",                                                            # 46 in every 50 of 8,000 events
        r"Button\(description='Play'",
        r"q5_bids: part 2015-07-15 00:00:07, \d+ rows, incremental [\d.]+ s \(5 parts read\), "
        r"naive [\d.]+ s \(4 parts read\) ✓ equal",
        r"q5: part 2015-07-15 00:00:07, 1 row, incremental [\d.]+ s \(1 part read\), "
        r"naive [\d.]+ s \(4 parts read\) ✓ equal",
        r"every view part equals its recomputation: True",
        # the first window (ending at 1 s) has only auction 1000 hot; in 4-8 s, 1300 is hot the longest
        r"2015-07-15 00:00:00\s+1000\s+\d+\n",
        r"2015-07-15 00:00:07\s+1300\s+\d+",
        r"(Image\(value=b'\\x89PNG|Canvas\()",
    ],
    "10-pipelines": [
        # one file a minute, two rows each, one micro-batch per file: 10:01-10:04, then 10:05-10:06, then none
        r"4 micro-batches of 8 rows; M holds 8 rows",
        r"\['Lossy', 'M'\]",                              # register_views: the helper is left out
        # losses 12, 15, 24, 20 from 10:01: four minutes over 10 by 10:04 (71), five by 10:05 (87); 7 at 10:06
        r"\|10\.0\.0\.1\|10\.0\.0\.2\|2015-01-01 10:01:10\|  4\|      71\|2015-01-01 10:04:00\|\n\+",
        r"2 micro-batches of 4 rows; M holds 12 rows",
        r"\|10\.0\.0\.1\|10\.0\.0\.2\|  4\|      71\|2015-01-01 10:04:00\|\n"
        r"\|10\.0\.0\.1\|10\.0\.0\.2\|  5\|      87\|2015-01-01 10:05:00\|\n\+",
        r"0 micro-batches of 0 rows; M holds 12 rows",        # a re-run takes nothing twice
        r"every part of Lossy equals its recomputation: True",
    ],
}


# What the long forms (the cells tagged long-form: a day of history) show; ./run stress runs them.
LONG_FORM_PROMISES = {
    "01-quickstart": [
        # a day of history: 1,440 minutes of 101 measurements, loaded at once, then 6 minutes replayed;
        # Direct rereads every minute of M up to the part, the incremental steps still read 3 parts
        r"145,440 measurements from 2015-01-01 10:00:00 to 2015-01-02 09:59:59",
        r"Inserted 145,440 rows into 1,440 parts of M; 2,880 view parts computed\.",
        r"View1: part 2015-01-02 10:05:00, \d+ rows, incremental [\d.]+ s \(3 parts read\), "
        r"naive [\d.]+ s \(1447 parts read\) ✓ equal",
    ],
    "03-sliding-windows": [
        # a day-long window after a day of history: the incremental steps read what they read for 4 minutes,
        # the naive side all 1,440 minutes; DaySums__pre, __sum and DaySums computed for each minute
        r"Inserted 145,440 rows into 1,440 parts of M; 4,320 view parts computed\.",
        r"DaySums: part 2015-01-02 10:05:00, 101 rows, incremental [\d.]+ s \(5 parts read\), "
        r"naive [\d.]+ s \(1440 parts read\) ✓ equal",
        r"every day-window part equals its recomputation: True",
    ],
    "05-benchmarking": [
        # a day of 20 pairs a minute loaded at once: M's 1,440 parts, 5 views' parts each (View1__helper,
        # View1, DaySums__pre, DaySums__sum, DaySums)
        r"Inserted 28,800 rows into 1,440 parts of M; 7,200 view parts computed\.",
        r"every naive day-window recomputation equals the incremental part: True",
        r"View1: incremental [\d.]+ s a minute; Direct over the whole day [\d.]+ s",
        r"DaySums: incremental [\d.]+ s a minute, naive [\d.]+ s\.",
    ],
}


def _has_long_form(path: Path) -> bool:
    return any(is_long_form(cell) for cell in nbformat.read(path, as_version=4).cells)


# Each notebook runs without its long form in CI; the notebooks that have one run whole in ./run stress.
RUNS = ([pytest.param(p, False, id=p.stem) for p in NOTEBOOKS]
        + [pytest.param(p, True, id=f"{p.stem}-long-form", marks=pytest.mark.stress)
           for p in NOTEBOOKS if _has_long_form(p)])


def test_every_long_form_has_its_promises_and_nothing_after_it_needs_it():
    """The short run leaves the long-form cells out, so no code cell may follow them."""
    long = [p.stem for p in NOTEBOOKS if _has_long_form(p)]
    assert sorted(LONG_FORM_PROMISES) == long
    for path in NOTEBOOKS:
        cells = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        tagged = [k for k, cell in enumerate(cells) if is_long_form(cell)]
        assert tagged == list(range(len(cells) - len(tagged), len(cells))), path.name


# What the notebooks' HTML outputs must hold (drawings have no text/plain form).
HTML_PROMISES = {
    "07-match-recognize": [r"<svg[^>]*>.*>start<.*>B2<.*>end<.*</svg>"],      # EXPLAIN VIEW's automaton
    "01-quickstart": [r"<svg[^>]*>.*>begin<.*>d\+<.*</svg>"       # EXPLAIN VIEW's FSM diagram, then its
                      r".*<details class='viewdf-section'><summary>ViewDF of View1__helper</summary>"   # folded
                      r"<pre>view View1__helper, PARTITION LENGTH 60, reads M\n\nCREATE VIEW View1__helper AS"],
}


# A timing plot's widget (an Image, or ipympl's Canvas); a preview without widget state shows its PNG instead.
PLOT_WIDGET = r"Image\(value=b'\\x89PNG|Canvas\("

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _expects_error(cell) -> bool:
    """A cell that shows a refusal on purpose; its error stops nothing (nbclient's own tag)."""
    return "raises-exception" in cell.get("metadata", {}).get("tags", [])


def _merged(outputs: list) -> list:
    """``outputs`` with each run of printed text (stream outputs of one name) as one output: the kernel sends
    printed text in as many messages as its buffer was flushed, which depends on timing, and a reader sees
    one text."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if previous is not None and output.get("output_type") == previous.get("output_type") == "stream" \
                and output.get("name") == previous.get("name"):
            merged[-1] = {**previous, "text": previous.get("text", "") + output.get("text", "")}
        else:
            merged.append(output)
    return merged


def _text(notebook) -> str:
    """Every output's text, with the message of each expected error (shown without a traceback)."""
    return "\n".join(output.get("text", "") + output.get("data", {}).get("text/plain", "")
                     + ANSI_ESCAPE.sub("", "\n".join(output.get("traceback", [])))
                     for cell in notebook.cells for output in _merged(cell.get("outputs", [])))


# What may differ between two runs of a notebook: times and sizes, temporary folders, object addresses,
# Spark's expression and plan ids (an observation's is a UUID), today's timestamps; and the spacing of tables
# whose numbers changed width.
VOLATILE = [(re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
            (re.compile(r"\d+\.\d+"), "#.#"), (re.compile(r"/tmp/[\w./-]+"), "/tmp/..."),
            (re.compile(r"0x[0-9a-f]+"), "0x#"), (re.compile(r"(#|plan_id=)\d+L?"), r"\1#"),   # Spark's ids
            (re.compile(r"(CollectMetrics [^\n]*\], )\d+"), r"\1#"),      # an observation's Dataset id
            (re.compile(r"20[2-9]\d-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?(\.\d+)?( UTC)?"), "<now>"),
            (re.compile(r"[ \t]+"), " ")]


def _comparable(cell) -> list[tuple[str, str]]:
    """A code cell's outputs as a reader sees their text, with what varies between runs masked."""
    shown = []
    for output in _merged(cell.get("outputs", [])):
        kind = output["output_type"]
        text = (output.get("text", "") if kind == "stream" else
                ANSI_ESCAPE.sub("", "\n".join(output.get("traceback", []))) if kind == "error" else
                output.get("data", {}).get("text/plain", ""))
        for pattern, mask in VOLATILE:
            text = pattern.sub(mask, text)
        shown.append((kind, text.strip()))
    return shown


@pytest.mark.parametrize("path, long_forms", RUNS)
def test_notebook_runs_on_a_fresh_kernel(path, long_forms, tmp_path):
    committed = nbformat.read(path, as_version=4)
    if not long_forms:
        committed.cells = without_long_forms(committed.cells)
    notebook = execute(path, str(tmp_path), long_forms)
    errors = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if output.get("output_type") == "error" and not _expects_error(cell)]
    assert not errors, errors
    refusals = [cell for cell in notebook.cells if _expects_error(cell)]
    assert all(output.get("ename") == "StatementFailed" for cell in refusals for output in cell.outputs
               if output.get("output_type") == "error"), "a tagged cell failed with a Python error"
    assert all(any(o.get("output_type") == "error" for o in cell.outputs) for cell in refusals), \
        "a cell tagged raises-exception did not fail"
    text = _text(notebook)
    assert "Traceback" not in text
    noise = [output["text"] for cell in notebook.cells for output in cell.get("outputs", [])
             if output.get("name") == "stderr"]
    assert not noise, noise                   # e.g. the JVM's start-up banner
    for promise in PROMISES[path.stem] + (LONG_FORM_PROMISES.get(path.stem, []) if long_forms else []):
        assert re.search(promise, text), promise
    markup = "\n".join(output.get("data", {}).get("text/html", "")
                       for cell in notebook.cells for output in cell.get("outputs", []))
    for promise in HTML_PROMISES.get(path.stem, []):
        assert re.search(promise, markup, re.DOTALL), promise
    plots = [output["data"] for cell in notebook.cells for output in cell.get("outputs", [])
             if re.match(PLOT_WIDGET, output.get("data", {}).get("text/plain", ""))]
    assert all(data.get("image/png") for data in plots), "a plot widget without its static PNG"   # GitHub shows it
    stale = [(k, _comparable(old), _comparable(new)) for k, (old, new) in enumerate(zip(committed.cells, notebook.cells))
             if new.cell_type == "code" and _comparable(old) != _comparable(new)]
    assert not stale, (f"{path.name}: the saved outputs of {len(stale)} cells differ from a fresh run; "
                       f"run ./run notebooks {path.stem} and commit. First: {stale[0]}")
