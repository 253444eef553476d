"""Typed catalog actions: each is written to the log and read back as itself; an action that cannot
be applied changes nothing and writes no log entry (so no entry fails on a later reopen); log
entries of older versions still replay."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pyspark.sql.types import IntegerType, StructField, StructType, TimestampType

from viewdf_magic.catalog.actions import (KINDS, Advance, Create, Drop, DropParts, InvalidAction, KeyFacts, Loaded,
                                          Moved, Options, Part, Setting, SinkBatch, TableData, Vacuumed, TooLate, Verified,
                                          read_action)
from viewdf_magic.catalog.catalog import LOG, Catalog
from viewdf_magic.catalog.local_fs import LocalFileSystem
from viewdf_magic.catalog.model import LineageRange, LoadedFile, ObjectDef, ObjectState, PartMeta
from viewdf_magic.language.statements import ClauseKind

SCHEMA = StructType([StructField("ts", TimestampType()), StructField("x", IntegerType())]).json()
STREAM = ObjectDef("stream", "S", "s0001", SCHEMA, "CREATE STREAM S ...", 1.0, 60, timestamp_column="ts")
VIEW = ObjectDef("view", "V", "v0001", SCHEMA, "CREATE VIEW V ...", 2.0, 60, sources=("S",))


def meta(subscript: int, folder: str, checksum: str = "c") -> PartMeta:
    return PartMeta(subscript, 3, (folder,), 0.5, (LineageRange("S", subscript, subscript),), 10.0 + subscript,
                    ClauseKind.UPDATE, checksum)


EXAMPLES = [Create(STREAM), Drop("s", 5.0), Drop("s"), Part("v", meta(7, "data/v0001/a")),
            Part("v", meta(7, "data/v0001/b"), same_rows=True), Advance("s", 9, 4.0), Verified("v", 7),
            KeyFacts("s", 7, ("dest", "src"), True), KeyFacts("s", 8, ("src",), False),
            Options("s", {"lateness": 2}), Options("s", {"lateness": None, "retain": 5}), DropParts("v", 3, 6.0),
            DropParts("v", 3), Setting("maintenance", "manual"), Setting("maintenance", None),
            Vacuumed(("data/a", "data/b")), TableData("t", ("data/t0001/x",), 12, 7.0),
            TableData("t", ("data/t0001/y",), 3, 8.0, replace=True), TooLate("s", 2, True), TooLate("s", 1, False),
            Loaded("s", (LoadedFile("file:/in/a.csv", 49, 3.5, "ab" * 32, 8.0),
                         LoadedFile("file:/in/b.csv", 0, 3.0, "cd" * 32, 8.0))), SinkBatch("s", "events", 4),
            Moved("v", ((7, ("data/v0001/c#7[7,8]",), ("data/v0001/a",)), (8, ("data/v0001/c#8[7,8]",), ())), 9.5)]


def test_every_kind_of_action_is_read_back_from_its_json_as_itself():
    assert {type(action) for action in EXAMPLES} == set(KINDS.values())
    for action in EXAMPLES:
        text = json.dumps(action.to_json())
        assert read_action(json.loads(text)) == action


def test_the_log_format_is_unchanged():
    # entries written by earlier versions must replay, and new entries must read the same way
    assert Part("v", meta(7, "f"), same_rows=True).to_json()["same_rows"] is True
    assert "same_rows" not in Part("v", meta(7, "f")).to_json()
    assert Drop("s").to_json() == {"op": "drop", "name": "s"}
    assert Options("s", {"retain": 5}).to_json() == {"op": "options", "name": "s", "retain": 5}
    assert Create(STREAM).to_json() == {"op": "create", "object": STREAM.to_json()}
    assert Vacuumed(("a",)).to_json() == {"op": "vacuumed", "folders": ["a"]}
    assert KeyFacts("s", 7, ("k",), True).to_json() == {"op": "key_facts", "name": "s", "subscript": 7,
                                                        "columns": ("k",), "repeats": True}
    assert Loaded("s", (LoadedFile("file:/a.csv", 4, 1.0, "ff", 2.0),)).to_json() == {
        "op": "loaded", "name": "s",
        "files": [{"path": "file:/a.csv", "size": 4, "modified": 1.0, "sha256": "ff", "loaded": 2.0}]}


@pytest.mark.parametrize("data, message", [
    ({"op": "rename", "name": "s"}, "unknown catalog action 'rename'"),
    ({"op": "advance", "name": "s"}, "malformed advance action"),
    ({"op": "options", "name": "s", "colour": 1}, None),         # unknown keys of a known kind are ignored
    ({"name": "s"}, "unknown catalog action None"),
])
def test_a_malformed_log_action_is_refused_with_what_is_wrong(data, message):
    if message is None:
        assert read_action(data) == Options("s", {})
        return
    with pytest.raises(InvalidAction, match=message):
        read_action(data)


def test_an_unknown_option_cannot_be_built():
    with pytest.raises(InvalidAction, match="unknown option colour"):
        Options("s", {"colour": 1})


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    catalog = Catalog(LocalFileSystem(str(tmp_path)))
    catalog.commit([Create(STREAM), Create(VIEW)])
    catalog.commit([Part("s", meta(1, "data/s0001/1")), Advance("s", 1, 3.0), Part("v", meta(1, "data/v0001/1"))])
    return catalog


def log_entries(catalog: Catalog) -> list[str]:
    return catalog.fs.list(LOG)


def test_an_action_that_cannot_be_applied_changes_nothing_and_writes_no_entry(catalog):
    before = (json.dumps(catalog.states["v"].to_json()), dict(catalog.settings), dict(catalog.garbage),
              catalog.version, log_entries(catalog))
    state = catalog.states["v"]
    # the first two actions apply; the third names a part that does not exist: none may stay applied
    with pytest.raises(InvalidAction, match="cannot apply Verified"):
        catalog.commit([Part("v", meta(1, "data/v0001/2")), Setting("maintenance", "manual"), Verified("v", 99)])
    with pytest.raises(InvalidAction, match="no object named 'w'"):
        catalog.commit([Part("w", meta(1, "data/w/1"))])
    after = (json.dumps(catalog.states["v"].to_json()), dict(catalog.settings), dict(catalog.garbage),
             catalog.version, log_entries(catalog))
    assert after == before
    assert catalog.states["v"] is state       # callers holding the state see it restored, not a stale copy
    reopened = Catalog(catalog.fs)
    assert reopened.version == catalog.version
    assert json.dumps(reopened.states["v"].to_json()) == before[0]


def whole_state(catalog: Catalog) -> tuple:
    return ({k: json.dumps(d.to_json()) for k, d in catalog.objects.items()},
            {k: json.dumps(state.to_json()) for k, state in catalog.states.items()},
            dict(catalog.settings), dict(catalog.garbage))


def test_every_kind_of_change_is_undone_when_a_later_action_fails(catalog):
    catalog.commit([Part("s", meta(3, "data/s0001/3")), Advance("s", 3, 3.5)])     # part 2 sealed empty
    before, states = whole_state(catalog), dict(catalog.states)
    other = ObjectDef("view", "W", "w0001", SCHEMA, "CREATE VIEW W ...", 4.0, 60, sources=("S",))
    every_kind = [Part("s", meta(-3, "data/s0001/-3")),          # late rows before the first part: a sealed gap
                  Advance("s", 8, 4.0),                         # parts 4 .. 8 sealed empty
                  Part("v", meta(1, "data/v0001/2")),           # replaces a part: its folder becomes garbage
                  Moved("v", ((1, ("data/v0001/3#1[1,1]",), ("data/v0001/2",)),), 4.5),   # compacted: 2 is garbage
                  Verified("v", 1), KeyFacts("s", 3, ("x",), True), KeyFacts("s", 3, ("ts",), False),
                  Options("s", {"retain": 4, "lateness": 1}), Setting("maintenance", "manual"),
                  Vacuumed(("data/v0001/1",)), DropParts("s", 2, 9.0), Create(other), Part("w", meta(1, "data/w/1")),
                  Loaded("s", (LoadedFile("file:/in/a.csv", 49, 3.5, "ab", 8.0),)), Drop("v", 11.0)]
    with pytest.raises(InvalidAction, match="no object named 'v'"):
        catalog.commit([*every_kind, Verified("v", 1)])
    assert whole_state(catalog) == before
    assert all(catalog.states[name] is state for name, state in states.items())
    catalog.commit(every_kind)                                   # and they do apply without the failing one
    assert "v" not in catalog.states and catalog.states["s"].newest == 8


def test_a_failed_action_inside_a_transaction_rolls_the_transaction_back(catalog):
    version = catalog.version
    with pytest.raises(InvalidAction):
        with catalog.transaction():
            catalog.commit([Setting("maintenance", "manual")])
            catalog.commit([Verified("v", 99)])
    assert catalog.settings == {} and catalog.version == version
    assert Catalog(catalog.fs).settings == {}


def test_applied_actions_reopen_to_the_same_state(catalog):
    catalog.commit([Part("v", meta(1, "data/v0001/2")), Verified("v", 1), Options("s", {"retain": 4}),
                    Setting("maintenance", "manual")])
    catalog.commit([DropParts("v", 1, 9.0), Drop("s", 11.0)])
    reopened = Catalog(catalog.fs)
    assert reopened.version == catalog.version == 4
    assert {k: v.to_json() for k, v in reopened.states.items()} == {k: v.to_json() for k, v in catalog.states.items()}
    assert reopened.settings == {"maintenance": "manual"}
    # the replaced part's folder, the dropped stream's data: garbage since the actions' times
    assert reopened.garbage == catalog.garbage == {"data/v0001/1": 11.0, "data/s0001": 11.0}


def test_parts_stay_in_subscript_order_through_late_parts_failures_and_reopens(catalog):
    # late rows make parts older than the newest; the oldest and newest part are read in O(1) from the order
    catalog.commit([Part("s", meta(5, "data/s0001/5")), Part("s", meta(-2, "data/s0001/-2")),
                    Part("s", meta(3, "data/s0001/3")), Advance("s", 5, 4.0)])
    with pytest.raises(InvalidAction):
        catalog.commit([Part("s", meta(0, "data/s0001/0")), Verified("v", 99)])     # rolled back
    for state in (catalog.states["s"], Catalog(catalog.fs).states["s"]):
        assert list(state.parts) == [-2, 1, 3, 5]
        assert (state.oldest_part(), state.newest_part()) == (-2, 5)
    assert (catalog.states["v"].oldest_part(), catalog.states["v"].newest_part()) == (1, 1)
    written = catalog.states["s"].to_json()
    written["parts"].reverse()                     # a snapshot written before parts were kept in order
    assert list(ObjectState.from_json(written).parts) == [-2, 1, 3, 5]


def test_entries_written_by_earlier_versions_replay(tmp_path):
    fs = LocalFileSystem(str(tmp_path))
    # as an early version wrote a part: every field but the arrival times (stream parts had none), later fields
    # (arrival rows, key facts) unknown, and the fields at their defaults written out
    part = {"subscript": 2, "rows": 3, "folders": ["data/s0001/2"], "seconds": 0.5, "lineage": [["S", 2, 2]],
            "updated": 12.0, "how": "update", "checksum": "c", "repairs": 0, "repairs_changed": 0,
            "repair_seconds": 0.0, "changed": 0, "verified": 0}
    fs.write_text(f"{LOG}/{1:020d}.json", json.dumps({"version": 1, "actions": [
        {"op": "create", "object": STREAM.to_json()}, {"op": "options", "name": "s", "lateness": 3},
        {"op": "part", "name": "s", "part": part}]}))
    catalog = Catalog(fs)
    assert catalog.states["s"].lateness == 3 and catalog.states["s"].parts[2] == dataclasses.replace(
        meta(2, "data/s0001/2"), changed=1, verified=1)
    # DROP without "updated": the files were deleted at once, so none are garbage
    fs.write_text(f"{LOG}/{2:020d}.json", json.dumps({"version": 2, "actions": [{"op": "drop", "name": "s"}]}))
    assert catalog.refresh() and catalog.version == 2 and catalog.objects == {} and catalog.garbage == {}


def test_key_facts_add_to_a_stream_part_and_change_nothing_else(catalog):
    catalog.commit([Part("s", meta(3, "data/s0001/3")), Advance("s", 3, 3.5)])
    before = catalog.state("S").parts[3]
    catalog.commit([KeyFacts("s", 3, ("x",), True), KeyFacts("s", 3, ("ts", "x"), False),
                    KeyFacts("s", 3, ("x",), True), KeyFacts("s", 5, ("x",), False)])   # 5: no such part, ignored
    after = catalog.state("S").parts[3]
    assert (after.repeated, after.unique) == ((("x",),), (("ts", "x"),))
    assert dataclasses.replace(after, repeated=(), unique=()) == before     # rows, folders, versions
    assert 5 not in catalog.state("S").parts
    assert STREAM.repeats_in(after, ("x",)) is True and STREAM.repeats_in(after, ("x", "ts")) is False
    assert STREAM.repeats_in(after, ("ts",)) is None


def test_a_part_is_logged_without_its_fields_at_their_defaults_and_read_back_whole():
    plain = meta(7, "data/v0001/a")
    assert set(plain.to_json()) == {"subscript", "rows", "folders", "seconds", "lineage", "updated", "how", "checksum"}
    full = dataclasses.replace(plain, arrivals=(1.0, 2.0), arrival_rows=(2, 1), arrival_behind=(None, 3), repairs=2,
                               repairs_changed=1, repair_seconds=0.25, changed=4, verified=5, unique=(("a", "b"),),
                               repeated=(("c",),))
    assert set(full.to_json()) == {f.name for f in dataclasses.fields(PartMeta)}
    for part in (plain, full):
        assert PartMeta.from_json(json.loads(json.dumps(part.to_json()))) == part
    assert full.at_version(8, 9) == dataclasses.replace(full, changed=8, verified=9)


def test_moved_parts_keep_everything_but_their_folders_and_free_the_old_ones(catalog):
    catalog.commit([Part("v", meta(2, "data/v0001/2"))])
    before = dict(catalog.states["v"].parts)
    moves = ((1, ("data/v0001/m#1[1,2]",), ("data/v0001/1",)), (2, ("data/v0001/m#2[1,2]",), ("data/v0001/2",)))
    catalog.commit([Moved("v", moves, 20.0)])
    for state in (catalog.states["v"], Catalog(catalog.fs).states["v"]):
        assert {s: dataclasses.replace(m, folders=()) for s, m in state.parts.items()} == \
            {s: dataclasses.replace(m, folders=()) for s, m in before.items()}
        assert {s: m.folders for s, m in state.parts.items()} == {1: ("data/v0001/m#1[1,2]",),
                                                                  2: ("data/v0001/m#2[1,2]",)}
    assert catalog.references["data/v0001/m"] == 2 and "data/v0001/1" not in catalog.references
    assert {f: t for f, t in catalog.garbage.items() if f.startswith("data/v0001/")} == {"data/v0001/1": 20.0,
                                                                                       "data/v0001/2": 20.0}
    stale = Moved("v", ((1, ("data/v0001/n#1[1,1]",), ("data/v0001/1",)),), 21.0)    # part 1 moved already
    with pytest.raises(InvalidAction, match=r"v\[1\] changed since its rows were moved"):
        catalog.commit([stale])
    assert catalog.states["v"].parts[1].folders == ("data/v0001/m#1[1,2]",)
