"""The catalog: every stream, view and table, and every part, kept as a transaction log.

Each change is one JSON log entry ``_viewdf/log/<version>.json``, published whole
(temporary file, then rename). A part's data folder becomes visible only when the
entry naming it is published, so a crash never exposes a half-written part. Every
``CHECKPOINT_EVERY`` versions the whole state is also written as a checkpoint, so
reopening reads one checkpoint and a few entries.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from contextlib import contextmanager
from typing import Iterable, Iterator

from .filesystem import FileSystem
from .model import ObjectDef, ObjectState, PartMeta

LOG = "_viewdf/log"
CHECKPOINTS = "_viewdf/checkpoint"
CHECKPOINT_EVERY = 100


class Catalog:
    """In-memory catalog state, replayed from and committed to the warehouse's log."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.objects: dict[str, ObjectDef] = {}
        self.states: dict[str, ObjectState] = {}
        self.settings: dict[str, str] = {}
        self.garbage: dict[str, float] = {}     # data folders no part references any more -> since when
        self.version = 0
        self._pending: list[dict] | None = None     # actions of an open transaction
        self._grouped: list[dict] | None = None     # actions applied but not yet published (``grouped``)
        self._load()

    # -- persistence ---------------------------------------------------------------------
    def _load(self) -> None:
        checkpoints = [int(n.split(".")[0]) for n in self.fs.list(CHECKPOINTS) if n.endswith(".json")]
        if checkpoints:
            latest = max(checkpoints)
            snapshot = json.loads(self.fs.read_text(f"{CHECKPOINTS}/{latest:020d}.json"))
            for entry in snapshot["objects"]:
                definition = ObjectDef.from_json(entry["definition"])
                self.objects[definition.key] = definition
                self.states[definition.key] = ObjectState.from_json(entry["state"])
            self.settings = dict(snapshot.get("settings", {}))
            self.garbage = dict(snapshot.get("garbage", {}))
            self.version = latest
        versions = sorted(int(n.split(".")[0]) for n in self.fs.list(LOG) if n.endswith(".json"))
        for version in versions:
            if version > self.version:
                self._replay(version)

    def _replay(self, version: int) -> None:
        entry = json.loads(self.fs.read_text(f"{LOG}/{version:020d}.json"))
        self._apply_all(entry["actions"], version)
        self.version = version

    def refresh(self) -> bool:
        """Apply entries other processes published since; True if there were any."""
        if self._pending is not None or self._grouped:
            return False
        start = self.version
        while self.fs.exists(f"{LOG}/{self.version + 1:020d}.json"):
            self._replay(self.version + 1)
        return self.version != start

    def commit(self, actions: list[dict]) -> None:
        """Publish ``actions`` as the next log entry, then apply them (inside a transaction:
        apply them now, publish them with the transaction)."""
        if not actions:
            return
        version = self.version + 1
        if self._pending is not None or self._grouped is not None:
            (self._pending if self._pending is not None else self._grouped).extend(actions)
            self._apply_all(actions, version)
            return
        self._publish(actions)

    def _publish(self, actions: list[dict]) -> None:
        version = self.version + 1
        self.fs.write_text(f"{LOG}/{version:020d}.json", json.dumps({"version": version, "actions": actions}))
        if self._grouped is None:
            self._apply_all(actions, version)
        self.version = version
        if version % CHECKPOINT_EVERY == 0:
            self._checkpoint()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group commits into one log entry; if the block raises, nothing is published and the
        in-memory state is restored."""
        if self._pending is not None:
            yield
            return
        saved = copy.deepcopy((self.objects, self.states, self.settings, self.garbage))
        self._pending = []
        try:
            yield
        except BaseException:
            self.objects, self.states, self.settings, self.garbage = saved
            self._pending = None
            raise
        actions, self._pending = self._pending, None
        self.commit(actions)

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """Apply commits at once but publish them together: at ``flush`` or when the block ends, even by
        an exception (each commit is complete on its own). Many small commits (parts recorded without a
        Spark job) then cost one log entry. Inside a transaction, the transaction already groups them."""
        if self._pending is not None or self._grouped is not None:
            yield
            return
        self._grouped = []
        try:
            yield
        finally:
            try:
                self.flush()
            finally:
                self._grouped = None

    def flush(self) -> None:
        """Publish the commits of a ``grouped`` block made so far (before a long Spark job, say)."""
        if self._grouped:
            actions, self._grouped = self._grouped, []
            self._publish(actions)

    def _checkpoint(self) -> None:
        snapshot = {"version": self.version, "settings": self.settings, "garbage": self.garbage,
                    "objects": [{"definition": d.to_json(), "state": self.states[k].to_json()}
                                for k, d in self.objects.items()]}
        self.fs.write_text(f"{CHECKPOINTS}/{self.version:020d}.json", json.dumps(snapshot))

    def _apply_all(self, actions: Iterable[dict], version: int) -> None:
        """Apply actions published (or to be published) as log ``version``."""
        for action in actions:
            getattr(self, f"_apply_{action['op']}")(action, version)

    def _apply_create(self, action: dict, version: int) -> None:
        definition = ObjectDef.from_json(action["object"])
        self.objects[definition.key] = definition
        self.states[definition.key] = ObjectState()

    def _apply_drop(self, action: dict, version: int) -> None:
        dropped = self.objects.pop(action["name"], None)
        self.states.pop(action["name"], None)
        if dropped is not None and "updated" in action:     # older logs: DROP deleted the files at once
            self.garbage[f"data/{dropped.id}"] = action["updated"]

    def _apply_part(self, action: dict, version: int) -> None:
        meta = dataclasses.replace(PartMeta.from_json(action["part"]), changed=version, verified=version)
        state = self.states[action["name"]]
        replaced = state.parts.get(meta.subscript)
        if replaced is not None and action.get("same_rows"):     # recomputed by another clause, same rows
            meta = dataclasses.replace(meta, changed=replaced.changed)
        if replaced is not None:        # a recomputed view part: its old folder is garbage from now on
            self.garbage.update((f, meta.updated) for f in replaced.folders if f not in meta.folders)
        state.parts[meta.subscript] = meta
        if self.objects[action["name"]].kind == "stream":
            if state.first is not None and meta.subscript < state.first - 1:   # late rows before the first part
                state.sealed.append((meta.subscript + 1, state.first - 1, meta.updated))
            state.first = meta.subscript if state.first is None else min(state.first, meta.subscript)

    def _apply_advance(self, action: dict, version: int) -> None:
        """A stream's newest part moves to ``through``; parts skipped on the way are sealed empty."""
        state = self.states[action["name"]]
        through = action["through"]
        if state.newest is not None and through <= state.newest:
            return
        begin = state.first if state.newest is None else state.newest + 1
        if begin is None:
            begin = through
        state.first = begin if state.first is None else state.first
        gap_start = None
        for subscript in range(begin, through + 2):
            empty = subscript <= through and subscript not in state.parts
            if empty and gap_start is None:
                gap_start = subscript
            elif not empty and gap_start is not None:
                state.sealed.append((gap_start, subscript - 1, action["updated"]))
                gap_start = None
        state.newest = through

    def _apply_verified(self, action: dict, version: int) -> None:
        """A view part was recomputed after late data and came out unchanged."""
        parts = self.states[action["name"]].parts
        meta = parts[action["subscript"]]
        parts[action["subscript"]] = dataclasses.replace(meta, verified=version, repairs=meta.repairs + 1)

    def _apply_options(self, action: dict, version: int) -> None:
        state = self.states[action["name"]]
        for option in ("lateness", "retain"):
            if option in action:
                setattr(state, option, action[option])

    def _apply_drop_parts(self, action: dict, version: int) -> None:
        """Retention: parts before ``before`` are gone (their folders are garbage from now on)."""
        state = self.states[action["name"]]
        before = action["before"]
        if "updated" in action:                              # older logs: retention deleted the files at once
            self.garbage.update((f, action["updated"]) for s, meta in state.parts.items() if s < before
                                for f in meta.folders)
        state.parts = {s: meta for s, meta in state.parts.items() if s >= before}
        state.sealed = [(max(a, before), b, when) for a, b, when in state.sealed if b >= before]
        state.dropped_before = max(before, state.dropped_before or before)

    def _apply_setting(self, action: dict, version: int) -> None:
        if action["value"] is None:
            self.settings.pop(action["key"], None)
        else:
            self.settings[action["key"]] = action["value"]

    def _apply_vacuumed(self, action: dict, version: int) -> None:
        for folder in action["folders"]:
            self.garbage.pop(folder, None)

    def _apply_table_data(self, action: dict, version: int) -> None:
        state = self.states[action["name"]]
        state.table_folders.extend(action["folders"])
        state.table_rows += action["rows"]
        state.table_updated = action["updated"]

    # -- lookups -------------------------------------------------------------------------
    def get(self, name: str) -> ObjectDef | None:
        return self.objects.get(name.lower())

    def state(self, name: str) -> ObjectState:
        return self.states[name.lower()]

    def dependents(self, name: str) -> list[ObjectDef]:
        """Views that read ``name`` directly."""
        key = name.lower()
        return [d for d in self.objects.values() if d.kind == "view" and key in {s.lower() for s in d.sources}]

    def downstream(self, name: str) -> list[ObjectDef]:
        """The object and every view that reads it, directly or through other views."""
        result = [self.objects[name.lower()]]
        for item in result:
            result.extend(d for d in self.dependents(item.name) if d not in result)
        return result

    def views(self) -> list[ObjectDef]:
        """All views, sources before the views that read them (creation order guarantees it)."""
        return [d for d in self.objects.values() if d.kind == "view"]
