"""The landing root's file system, as the Python workers see it: a feed's folder listed, a
landed file opened, whether a folder exists.

A root is a local path (or a ``file:`` URI) or a URI that ``pyarrow.fs`` opens: ``s3://`` (any
S3 API; ``s3a://`` and ``s3n://`` are the same objects), ``gs://``, ``abfs://``, ``hdfs://``,
with that file system's usual credentials from the environment (for S3: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for a non-AWS endpoint).

A listed file's path is what a landed file is known by in the decoded tables: for a local one
the ``file:`` URI Spark's own listing gives (so the files a store tried are recognised whoever
listed them), for any other the root's URI with the file's key below it.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlparse

# Hadoop's names for S3 objects; pyarrow's S3 file system reads the same ones
_S3_ALIASES = ("s3a", "s3n")
# what a path keeps unquoted in a file: URI, as java.net.URI's multi-argument constructors
# (through Hadoop's Path) write it: its legal characters, and any other non-ASCII character
# that is neither a control nor a space
_URI_LEGAL = re.compile(r"[A-Za-z0-9\-_.!~*'(),;:$&+=@/]")


def local_path(path: str) -> str | None:
    """The local path of a ``file:`` URI or a plain path; None for any other file system."""
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return path
    return None


def file_uri(path: str) -> str:
    """The ``file:`` URI of a local absolute path, as Spark names the file (``file:/a/b%20c``).

    >>> file_uri("/landing/pg/sp ace é#1.json")
    'file:/landing/pg/sp%20ace%20é%231.json'
    """
    return "file:" + "".join(
        char if _URI_LEGAL.fullmatch(char) or _other(char) else _escaped(char) for char in path
    )


def _other(char: str) -> bool:
    return ord(char) > 127 and unicodedata.category(char) not in ("Cc", "Zs", "Zl", "Zp")


def _escaped(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


@functools.lru_cache(maxsize=32)
def _remote_filesystem(scheme: str, authority: str) -> tuple[Any, str]:
    """The ``pyarrow.fs`` file system of ``scheme://authority`` and the inner path of its root
    (``bucket`` for an object store, ``/`` for HDFS); one per process and root."""
    from pyarrow import fs

    scheme = "s3" if scheme in _S3_ALIASES else scheme
    return fs.FileSystem.from_uri(f"{scheme}://{authority}")


def _remote(uri: str) -> tuple[Any, str]:
    """The file system of a non-local URI and the path inside it (its key, kept as written: no
    URI decoding, so a name with a space or a '%' is the object's own name)."""
    scheme, _, rest = uri.partition("://")
    authority, _, inner = rest.partition("/")
    filesystem, base = _remote_filesystem(scheme, authority)
    return filesystem, (base.rstrip("/") + "/" + inner).rstrip("/")


def open_file(path: str) -> Any:
    """A binary file object for ``path``: local, or any file system ``pyarrow.fs`` opens."""
    local = local_path(path)
    if local is not None:
        return open(local, "rb")
    filesystem, inner = _remote(path)
    return filesystem.open_input_file(inner)


def folder_exists(folder: str | None) -> bool | None:
    """Whether ``folder`` is a folder (on an object store: whether any object has it as its
    prefix); None when the file system cannot tell (no access, not reachable). A missing folder
    and an empty one both list no file; this tells them apart."""
    if folder is None:
        return None
    local = local_path(folder)
    if local is not None:
        return os.path.isdir(local)
    from pyarrow import fs

    try:
        filesystem, inner = _remote(folder)
        return filesystem.get_file_info(inner).type == fs.FileType.Directory
    except OSError:
        return None


def hidden(name: str) -> bool:
    """Whether a file or folder name is hidden from a listing, as Spark hides it: a leading
    '.', a leading '_' (unless the name holds '=', a partition folder), a file being copied.

    >>> [hidden(n) for n in ("a.json", "_SUCCESS", ".a.json.crc", "_p=1", "a._COPYING_")]
    [False, True, True, False, True]
    """
    return (
        (name.startswith("_") and "=" not in name)
        or name.startswith(".")
        or name.endswith("._COPYING_")
    ) and not name.startswith(("_metadata", "_common_metadata"))


def name_filter(glob: str) -> Callable[[str], bool]:
    """A test of a file name against a glob, as Spark's ``pathGlobFilter`` (Hadoop's glob):
    ``*``, ``?``, ``[abc]``, ``[^a]`` or ``[!a]``, ``{a,b}``, ``\\`` to escape.

    >>> matches = name_filter("*.{json,jsonl}")
    >>> [matches(n) for n in ("a.json", "a.jsonl", "a.json.gz", "b.txt")]
    [True, True, False, False]
    """
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
            continue
        if char == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            negated = body[:1] in ("^", "!")
            body = body[1:] if negated else body
            out.append("[" + ("^" if negated else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        if char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        else:
            out.append({"*": ".*", "?": "."}.get(char) or re.escape(char))
        i += 1
    pattern = re.compile("".join(out) + ")" * depth, re.DOTALL)
    return lambda name: pattern.fullmatch(name) is not None


def list_files(folder: str, glob: str = "*") -> list[tuple[str, int, int]]:
    """The files under ``folder`` (at any depth) whose name ``glob`` matches, as (path, size,
    modification time in epoch microseconds) by path; none when the folder does not exist.
    Left out, as Spark's listing leaves them out: hidden names, the files of hidden folders,
    and empty files (no record yet: a file just created is listed once it has bytes)."""
    matches = name_filter(glob)
    local = local_path(folder)
    found: list[tuple[str, int, int]] = []
    if local is not None:
        for directory, folders, names in os.walk(os.path.abspath(local), followlinks=True):
            folders[:] = [name for name in folders if not hidden(name)]
            for name in names:
                if hidden(name) or not matches(name):
                    continue
                path = os.path.join(directory, name)
                try:
                    stat = os.stat(path)
                except FileNotFoundError:  # removed while listed
                    continue
                if not stat.st_size:
                    continue
                # milliseconds, as Spark's listing gives them
                found.append((file_uri(path), stat.st_size, stat.st_mtime_ns // 10**6 * 1000))
        return sorted(found)
    from pyarrow import fs

    filesystem, inner = _remote(folder)
    selector = fs.FileSelector(inner, recursive=True, allow_not_found=True)
    prefix = folder.rstrip("/")
    for info in filesystem.get_file_info(selector):
        relative = info.path[len(inner) :].lstrip("/")
        parts = relative.split("/")
        if info.type != fs.FileType.File or not info.size:
            continue
        if any(hidden(part) for part in parts) or not matches(parts[-1]):
            continue
        micros = 0 if info.mtime_ns is None else info.mtime_ns // 1000
        found.append((f"{prefix}/{relative}", info.size, micros))
    return sorted(found)
