"""LOAD's per-file work on threads (storage/file_threads.py): results in order, and nothing runs after a failure
or an interrupt is raised, so the caller's clean-up of what was written is final."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from typing import Callable

import pytest

from viewdf_magic.storage.file_threads import FILE_THREADS, THREADED_FILE_BYTES, each_file

LARGE = THREADED_FILE_BYTES


def test_results_come_in_the_items_order_and_run_on_several_threads():
    threads = set()

    def work(item: int) -> int:
        threads.add(threading.get_ident())
        time.sleep(0.01 * (item % 3))      # later items may finish first
        return item * item

    assert each_file(work, list(range(40)), [LARGE] * 40) == [k * k for k in range(40)]
    assert 1 < len(threads) <= FILE_THREADS


def _recording(fail: Callable[[int], None]):
    started, finished = [], []

    def work(item: int) -> int:
        started.append(item)
        fail(item)
        time.sleep(0.02)
        finished.append(item)
        return item
    return work, started, finished


def test_a_failure_cancels_the_calls_not_started_and_waits_for_the_running_ones():
    def fail(item: int) -> None:
        if item == 2:
            raise OSError("disk full")

    work, started, finished = _recording(fail)
    with pytest.raises(OSError, match="disk full"):
        each_file(work, list(range(200)), [LARGE] * 200)
    seen = (list(started), list(finished))
    time.sleep(0.2)
    assert (started, finished) == seen                     # nothing ran after the error was raised
    assert len(started) < 200                              # the rest were cancelled
    assert set(finished) == set(started) - {2}             # every call that started had finished


def test_an_interrupt_of_the_caller_cancels_the_rest_and_waits_for_the_running_ones():
    # Ctrl-C's own handler: a test before this one in the same worker may have left another SIGINT handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupted_calls()
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted_calls() -> None:
    def fail(item: int) -> None:
        if item == 5:
            _thread.interrupt_main()         # as Ctrl-C does, while the caller waits for results

    work, started, finished = _recording(fail)
    with pytest.raises(KeyboardInterrupt):
        each_file(work, list(range(500)), [LARGE] * 500)
    seen = (list(started), list(finished))
    time.sleep(0.2)
    assert (started, finished) == seen
    assert len(started) < 500
    assert set(finished) == set(started)


def test_one_item_and_small_files_run_on_the_callers_thread():
    here = threading.get_ident()
    assert each_file(lambda item: threading.get_ident(), ["only"], [10 * LARGE]) == [here]
    assert each_file(lambda item: item, [], []) == []
    # on average below THREADED_FILE_BYTES, though one of them is larger
    assert each_file(lambda item: threading.get_ident(), list(range(8)), [LARGE + 1] + [1000] * 7) == [here] * 8
