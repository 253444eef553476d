"""The files a LOAD path names, fingerprinted, and which of them a stream or table has taken before.

A path names one file, or a folder whose visible files directly in it (names starting with ``_`` or ``.`` are
hidden, as Spark's file sources hide them; sub-folders are not read, so a path such as ``/`` costs one
listing) are loaded. Each file is fingerprinted by its size, modification time and SHA-256 of its content,
read through pyarrow's file systems (local paths, and the URIs pyarrow knows), several large files at once
(``file_threads``); a file the record has at the same path, size and modification time is not read again. The
catalog keeps the fingerprints of the files a LOAD took, published in the same log entry as their rows
(``catalog.actions.Loaded``), so a LOAD run again takes only files it has not taken: a re-run cell never loads
the same rows twice, and a landing folder that keeps receiving files is loaded file by file, as Auto Loader
and Spark's file source do. LOAD .. MOVE then removes the files it took (and those taken before) from the
path, as Hive's LOAD DATA INPATH and Auto Loader's ``cleanSource`` do: only after the commit, so a crash
before it leaves every file in place, and one after it leaves files that the next LOAD .. MOVE removes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping

import pyarrow.fs as pafs

from ..catalog.filesystem import qualify
from ..catalog.model import LoadedFile
from .file_threads import each_file

CHUNK = 1 << 20


class UnreadablePath(OSError):
    """The path cannot be listed or read from this process."""


def _visible(name: str) -> bool:
    return not name.startswith(("_", "."))


def _uri(filesystem: pafs.FileSystem, path: str) -> str:
    return "file:" + path if isinstance(filesystem, pafs.LocalFileSystem) else filesystem.type_name + "://" + path


def fingerprint(path: str, recorded: Mapping[str, LoadedFile] | None = None) -> list[LoadedFile]:
    """The files ``path`` names (one file, or the visible files directly in a folder, in path order),
    fingerprinted. A file at a ``recorded`` path with the recorded size and modification time keeps the
    recorded hash, unread: a landing folder's LOAD reads only the files that are new or changed."""
    recorded = recorded or {}
    try:
        filesystem, root = pafs.FileSystem.from_uri(qualify(path))
        info = filesystem.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            raise UnreadablePath(f"'{path}' does not exist")
        if info.type == pafs.FileType.Directory:
            listed = filesystem.get_file_info(pafs.FileSelector(root, recursive=False))
            infos = sorted((i for i in listed if i.type == pafs.FileType.File and _visible(i.base_name)),
                           key=lambda i: i.path)
        else:
            infos = [info]

        def fingerprinted(info: pafs.FileInfo) -> LoadedFile:
            uri, modified = _uri(filesystem, info.path), info.mtime.timestamp() if info.mtime else 0.0
            before = recorded.get(uri)
            unchanged = before is not None and (before.size, before.modified) == (info.size, modified)
            return LoadedFile(uri, info.size, modified,
                              before.sha256 if before is not None and unchanged else _sha256(filesystem, info.path))

        return each_file(fingerprinted, infos, [info.size or 0 for info in infos])
    except UnreadablePath:
        raise
    except (OSError, ValueError, TypeError) as exc:      # pyarrow's errors for unknown schemes and I/O
        raise UnreadablePath(f"cannot list or read '{path}' from this process: {exc}") from None


def _sha256(filesystem: pafs.FileSystem, path: str) -> str:
    digest = hashlib.sha256()
    with filesystem.open_input_stream(path) as stream:
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)


def remove_files(files: list[LoadedFile]) -> list[tuple[LoadedFile, str]]:
    """Remove ``files`` from where a LOAD .. MOVE took them, once their rows are committed (a file already gone
    counts as removed). Each file that could not be removed, with why."""
    failures = []
    for file in files:
        try:
            filesystem, path = pafs.FileSystem.from_uri(file.path)
            if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
                filesystem.delete_file(path)
        except (OSError, ValueError) as exc:
            failures.append((file, str(exc)))
    return failures


@dataclass
class Taken:
    """The files of a LOAD path sorted by what the object's record says of them."""

    new: list[LoadedFile] = field(default_factory=list)
    loaded: list[tuple[LoadedFile, LoadedFile]] = field(default_factory=list)    # (file, its record)
    changed: list[tuple[LoadedFile, LoadedFile]] = field(default_factory=list)   # a recorded path, new content


def sort_files(files: list[LoadedFile], record: dict[str, LoadedFile], moved: bool = False) -> Taken:
    """Which of ``files`` were taken before (the same content, at this path or another), which are at a
    recorded path with other content (changed since), and which are new. For a LOAD .. MOVE, whose files are
    removed once taken, a file at a recorded path with other content is new."""
    by_hash = {f.sha256: f for f in record.values()}
    taken = Taken()
    for file in files:
        same = by_hash.get(file.sha256)
        before = record.get(file.path)
        if same is not None:
            taken.loaded.append((file, same))
        elif before is not None and not moved:
            taken.changed.append((file, before))
        else:
            taken.new.append(file)
    return taken
