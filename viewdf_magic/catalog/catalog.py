"""The catalog: every stream, view and table, and every part, kept as a transaction log.

Each change is one JSON log entry ``_viewdf/log/<version>.json``, published whole
(temporary file, then rename). A part's data folder becomes visible only when the
entry naming it is published, so a crash never exposes a half-written part. Every
``CHECKPOINT_EVERY`` versions the whole state is also written as a checkpoint, so
reopening reads one checkpoint and a few entries.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, cast

from .model import folder_of
from .actions import Action, InvalidAction, read_action
from .filesystem import FileSystem
from .model import ObjectDef, ObjectState

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
        self.references: dict[str, int] = {}    # data folder -> how many part slices read it (derived, not logged)
        self.garbage: dict[str, float] = {}     # data folders no part references any more -> since when
        self.version = 0
        self._pending: list[Action] | None = None     # actions of an open transaction
        self._undos: list[Callable[[], None]] = []     # what takes them back, in the order applied
        self._grouped: list[Action] | None = None     # actions applied but not yet published (``grouped``)
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
            for state in self.states.values():
                for meta in state.parts.values():
                    for text in meta.folders:
                        folder = folder_of(text)
                        self.references[folder] = self.references.get(folder, 0) + 1
        versions = sorted(int(n.split(".")[0]) for n in self.fs.list(LOG) if n.endswith(".json"))
        for version in versions:
            if version > self.version:
                self._replay(version)

    def _replay(self, version: int) -> None:
        entry = json.loads(self.fs.read_text(f"{LOG}/{version:020d}.json"))
        self._apply_all([read_action(action) for action in entry["actions"]], version)
        self.version = version

    def refresh(self) -> bool:
        """Apply entries other processes published since; True if there were any."""
        if self._pending is not None or self._grouped:
            return False
        start = self.version
        while self.fs.exists(f"{LOG}/{self.version + 1:020d}.json"):
            self._replay(self.version + 1)
        return self.version != start

    def commit(self, actions: list[Action]) -> None:
        """Apply ``actions`` and publish them as the next log entry (inside a transaction or a
        ``grouped`` block: apply them now, publish them with it). Actions that cannot be applied
        raise InvalidAction and change nothing, so no log entry fails on a later replay."""
        if not actions:
            return
        if self._pending is not None or self._grouped is not None:
            undos = self._apply_all(actions, self.version + 1)
            if self._pending is not None:
                self._undos.extend(undos)
            cast("list[Action]", self._pending if self._pending is not None else self._grouped).extend(actions)
            return
        self._apply_all(actions, self.version + 1, publish=True)

    def _write_entry(self, actions: list[Action]) -> None:
        """Publish ``actions``, applied already, as the next log entry."""
        version = self.version + 1
        text = json.dumps({"version": version, "actions": [action.to_json() for action in actions]})
        self.fs.write_text(f"{LOG}/{version:020d}.json", text)
        self.version = version
        if version % CHECKPOINT_EVERY == 0:
            self._checkpoint()

    @property
    def in_transaction(self) -> bool:
        """Whether commits are held until an open ``transaction`` ends (and undone if it fails)."""
        return self._pending is not None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group commits into one log entry; if the block raises, nothing is published and the
        in-memory state is restored."""
        if self._pending is not None:
            yield
            return
        self._pending, self._undos = [], []
        try:
            yield
            actions, self._pending = self._pending, None
            if actions:
                self._write_entry(actions)
        except BaseException:
            for undo in reversed(self._undos):      # each action's own undo: no copy of the whole catalog
                undo()
            raise
        finally:
            self._pending, self._undos = None, []

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
            self._write_entry(actions)

    def _checkpoint(self) -> None:
        snapshot = {"version": self.version, "settings": self.settings, "garbage": self.garbage,
                    "objects": [{"definition": d.to_json(), "state": self.states[k].to_json()}
                                for k, d in self.objects.items()]}
        self.fs.write_text(f"{CHECKPOINTS}/{self.version:020d}.json", json.dumps(snapshot))

    def _apply_all(self, actions: list[Action], version: int, publish: bool = False) -> list[Callable[[], None]]:
        """Apply actions published (or, with ``publish``, to publish now) as log ``version``: all of
        them, or none (raising InvalidAction if one cannot be applied). Returns their undos."""
        undos: list[Callable[[], None]] = []
        try:
            for action in actions:
                try:
                    undos.append(action.apply(self, version))
                except (KeyError, TypeError, ValueError) as error:
                    if isinstance(error, InvalidAction):
                        raise
                    raise InvalidAction(f"cannot apply {action}: {error!r}") from None
            if publish:
                self._write_entry(actions)
        except BaseException:
            for undo in reversed(undos):
                undo()
            raise
        return undos

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

    def upstream(self, names: Iterable[str]) -> set[str]:
        """The keys of the named objects and of everything they read, directly or through views."""
        keys = [name.lower() for name in names if name.lower() in self.objects]
        for key in keys:
            keys.extend(s.lower() for s in self.objects[key].sources if s.lower() in self.objects and s.lower() not in keys)
        return set(keys)

    def views(self) -> list[ObjectDef]:
        """All views, sources before the views that read them (creation order guarantees it)."""
        return [d for d in self.objects.values() if d.kind == "view"]
