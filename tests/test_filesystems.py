"""Every metadata filesystem backend keeps the same contract: files appear whole and are never
overwritten, listings hide temporary files, and deletes reach folders' contents."""

from __future__ import annotations

import os
import threading
import time

import pytest

from viewdf_magic.catalog.actions import Setting
from viewdf_magic.catalog.arrow_fs import ArrowFileSystem
from viewdf_magic.catalog.catalog import Catalog
from viewdf_magic.catalog.backends import open_filesystem
from viewdf_magic.catalog.hadoop_fs import HadoopFileSystem
from viewdf_magic.catalog.local_fs import LocalFileSystem
from viewdf_magic.catalog.lock import WriterLock

BACKENDS = ["local", "hadoop", "arrow-local", "arrow-memory"]


@pytest.fixture(params=BACKENDS)
def fs(request, spark, tmp_path):
    root = str(tmp_path / "wh")
    return {"local": lambda: LocalFileSystem(root),
            "hadoop": lambda: HadoopFileSystem(spark, root),
            "arrow-local": lambda: ArrowFileSystem(f"file:{root}"),
            "arrow-memory": lambda: ArrowFileSystem(f"mock:///{tmp_path.name}")}[request.param]()


def test_a_file_is_created_once_and_never_overwritten(fs):
    assert fs.create_exclusive("_viewdf/lock", "first")
    assert not fs.create_exclusive("_viewdf/lock", "second")
    assert fs.read_text("_viewdf/lock") == "first"
    fs.write_text("_viewdf/log/00001.json", '{"version": 1}')
    with pytest.raises(FileExistsError):
        fs.write_text("_viewdf/log/00001.json", '{"version": 2}')
    assert fs.read_text("_viewdf/log/00001.json") == '{"version": 1}'


def test_listing_is_sorted_and_hides_temporary_files(fs):
    for name in ("b.json", "a.json", "_tmp-123", ".hidden"):
        fs.create_exclusive(f"log/{name}", name)
    assert fs.list("log") == ["a.json", "b.json"]
    assert fs.list("missing") == []


def test_delete_removes_files_and_whole_folders(fs):
    fs.create_exclusive("data/1/part-0", "x")
    fs.create_exclusive("data/1/sub/part-1", "y")
    fs.create_exclusive("lock", "z")
    fs.delete("data/1")
    fs.delete("lock")
    fs.delete("never-was")
    assert not fs.exists("data/1") and not fs.exists("data/1/sub/part-1") and not fs.exists("lock")


def test_a_local_file_is_copied_in_byte_for_byte(fs, tmp_path):
    source = tmp_path / "landing" / "part.parquet"
    source.parent.mkdir()
    content = "".join(f"row {n}\n" for n in range(20_000))
    source.write_text(content)
    assert fs.copy_file(f"file:{source}", "data/1/f/part-00000.parquet")
    source.write_text("changed")          # the copy is the warehouse's own
    assert fs.list("data/1/f") == ["part-00000.parquet"]
    assert fs.read_text("data/1/f/part-00000.parquet") == content


def test_age_counts_from_the_last_write(fs):
    fs.create_exclusive("lock", "me")
    assert 0 <= fs.age("lock") < 60


def test_local_age_follows_the_modification_time(tmp_path):
    fs = LocalFileSystem(str(tmp_path))
    fs.create_exclusive("lock", "me")
    os.utime(tmp_path / "lock", (time.time() - 100, time.time() - 100))
    assert 99 < fs.age("lock") < 110


def test_local_exclusive_creation_has_one_winner_among_racing_threads(tmp_path):
    fs = LocalFileSystem(str(tmp_path))
    winners, start = [], threading.Barrier(8)

    def race(k: int) -> None:
        start.wait()
        if fs.create_exclusive("lock", f"thread {k}"):
            winners.append(k)
    threads = [threading.Thread(target=race, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1 and fs.read_text("lock") == f"thread {winners[0]}"
    assert fs.list("") == ["lock"]        # no file written aside is left behind


def test_catalog_and_lock_work_on_every_backend(fs):
    catalog = Catalog(fs)
    with WriterLock(fs).held():
        catalog.commit([Setting("maintenance", "manual")])
        catalog.commit([Setting("color", "blue")])
    assert not fs.exists("_viewdf/lock")
    reopened = Catalog(fs)
    assert reopened.version == 2 and reopened.settings == {"maintenance": "manual", "color": "blue"}


def test_local_warehouses_use_the_operating_system_directly(spark, tmp_path):
    assert isinstance(open_filesystem(spark, str(tmp_path)), LocalFileSystem)
    assert open_filesystem(spark, f"file:{tmp_path}").root == f"file:{tmp_path}"
