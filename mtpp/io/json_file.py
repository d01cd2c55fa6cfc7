"""Reading JSON input files and checking paths, with one-line typed errors.

Every file mtpp reads as JSON (graphs, partitions and solutions, device sets) goes
through :func:`read_json`, so every failure reads the same way and names the file:
missing, a directory, unreadable, binary (not UTF-8), not JSON, or nested too deeply
for the parser (``RecursionError`` on adversarial input such as 100,000 nested
lists).  :func:`check_readable` and :func:`check_writable` check a path before any
work is done (the command line calls them first).  All raise
:class:`mtpp.core.errors.InputFileError` or the subclass the caller names.
"""

from __future__ import annotations

import json
import os
from typing import Any

import orjson

from mtpp.core.errors import InputFileError


def check_readable(
    path: str | os.PathLike[str], what: str = "file", error: type[InputFileError] = InputFileError
) -> str:
    """``path`` as a string if it is a readable regular file; else raise ``error``."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise error(f"{path}: is a directory ({what} expected)")
    if not os.path.exists(path):
        raise error(f"{path}: no such file")
    if not os.path.isfile(path):
        raise error(f"{path}: not a regular file ({what} expected)")
    if not os.access(path, os.R_OK):
        raise error(f"{path}: permission denied")
    return path


def check_writable(path: str | os.PathLike[str], what: str = "output file") -> str:
    """``path`` as a string if a file can be written there: it is not a directory and
    its directory exists and is writable.  Nothing is created."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputFileError(f"{path}: is a directory ({what} expected)")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise InputFileError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InputFileError(f"{path}: permission denied")
    return path


def check_directory(path: str | os.PathLike[str], what: str = "output directory") -> str:
    """``path`` as a string if it is a directory or can be made one: it is not a file,
    and its nearest existing ancestor is a writable directory."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputFileError(f"{path}: is a file ({what} expected)")
    ancestor = os.path.abspath(path)
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise InputFileError(f"{path}: {ancestor} is a file ({what} expected)")
    if not os.access(ancestor, os.W_OK):
        raise InputFileError(f"{path}: permission denied")
    return path


def read_json(
    path: str | os.PathLike[str], what: str = "JSON file", error: type[InputFileError] = InputFileError
) -> Any:
    """The parsed JSON of the file at ``path``; ``error`` (an :class:`InputFileError`
    type) with a one-line message naming the file and the problem otherwise."""
    path = check_readable(path, what, error)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: binary data (not UTF-8 text at byte {exc.start}); expected a {what}") from None
    try:
        return orjson.loads(raw)  # UTF-8 checked above; the same documents as json.loads, several times faster
    except orjson.JSONDecodeError:
        pass  # json.loads says where, and reads what orjson refuses (NaN, Infinity)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply to be a {what}") from None
