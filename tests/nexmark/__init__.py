"""The small fixed Nexmark configuration the tests and Flink's recorded results share."""

from __future__ import annotations

import pathlib

# 20,000 events over 10 s starting off the window grid: 6 parts of 2 s, 4 s windows sliding by 2 s
EVENTS = dict(events=20_000, rate=2_000, seed=0, first_event_time="2015-07-15 00:00:03.5")
WINDOW_SECONDS, SLIDE_SECONDS, PART_SECONDS = 4, 2, 2
FLINK_RESULTS = pathlib.Path(__file__).with_name("flink_results")
