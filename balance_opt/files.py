"""Project files in general: strict JSON in, deterministic JSON out, atomic writes, digests.

Both file formats (docs/formats.md) are read through :class:`Checker`, which raises
:class:`~balance_opt.errors.InputError` naming the file, the JSON path and the rule, e.g.
``bad.json: users[3].acceptance: must be a number with 0 < value < 1, got 1.2``. Every file
the project writes goes through :func:`atomic_write` (temporary file, fsync, rename), so a
reader never sees half a file. The instance format is :mod:`balance_opt.io`, the solution
format :mod:`balance_opt.solution`.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from balance_opt.errors import InputError
from balance_opt.instance import Rule
from balance_opt.instance import show_value as _show

FORMAT_VERSION = 1  # of both formats: instance and solution files
# The largest input file read (1 GiB): a K = 100,000 instance takes about 20 MB.
MAX_INPUT_BYTES = 1 << 30


# --- reading -------------------------------------------------------------------------


class Checker:
    """Reads typed values out of a JSON tree, raising InputError with the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, rule: str) -> InputError:
        return InputError(self.source, path, rule)

    def obj(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = self.get(parent, key, path)
        if not isinstance(value, dict):
            raise self.fail(join_path(path, key), f"must be a JSON object, got {_show(value)}")
        return value

    def get(self, parent: Mapping[str, Any], key: str, path: str) -> Any:
        if key not in parent:
            raise self.fail(join_path(path, key), "is required but missing")
        return parent[key]

    def value(self, parent: Mapping[str, Any], key: str, path: str, rule: Rule) -> Any:
        """``parent[key]`` checked against one value rule (:class:`~balance_opt.instance.Rule`)."""
        value = self.get(parent, key, path)
        broken = rule.broken(value)
        if broken is not None:
            raise self.fail(join_path(path, key), broken)
        return float(value) if not rule.integer else value

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> str:
        value = self.get(parent, key, path)
        if not isinstance(value, str):
            raise self.fail(join_path(path, key), f"must be a string, got {_show(value)}")
        return value

    def name(self, parent: Mapping[str, Any], key: str, path: str) -> str:
        """A string that names something (a user, a solver): printable, so that it cannot
        move a terminal's cursor or split a CSV row when it is shown."""
        value = self.string(parent, key, path)
        if not value.isprintable():
            bad = next(ch for ch in value if not ch.isprintable())
            rule = f"must hold no control characters, got {bad!r} in {value!r}"
            raise self.fail(join_path(path, key), rule[:200])
        return value

    def optional(self, doc: Mapping[str, Any], key: str, kind: type, path: str, what: str) -> Any:
        """An optional field of the given JSON type (None when absent or null)."""
        value = doc.get(key)
        if value is not None and not isinstance(value, kind):
            raise self.fail(f"{path}{key}", f"must be {what} when given, got {_show(value)}")
        return value


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _NonFinite:
    """Stands in for a ``NaN`` / ``Infinity`` literal until its JSON path is known."""

    def __init__(self, name: str) -> None:
        self.name = name


def _find_non_finite(value: Any, path: str = "") -> tuple[str, str] | None:
    """The JSON path and literal of the first non-finite number, in document order."""
    if isinstance(value, _NonFinite):
        return path, value.name
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _find_non_finite(item, f"{path}[{key}]" if isinstance(key, int) else join_path(path, key))
        if found is not None:
            return found
    return None


def parse_json(text: str | bytes, source: str) -> Any:
    """Strict JSON: no NaN / Infinity (named by JSON path), duplicate keys rejected."""
    seen: list[_NonFinite] = []

    def non_finite(name: str) -> _NonFinite:
        # json accepts NaN / Infinity by default; docs/formats.md does not. Rejected after
        # parsing, when the tree gives the literal its path.
        seen.append(_NonFinite(name))
        return seen[-1]

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    try:
        doc = json.loads(text, parse_constant=non_finite, object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise InputError(source, "", f"is not valid JSON: {exc}") from None
    except RecursionError:  # json's C decoder recurses once per nesting level
        raise InputError(source, "", "nests arrays or objects too deeply to be one of our files") from None
    found = _find_non_finite(doc) if seen else None
    if found is not None:
        raise InputError(source, found[0], f"{found[1]} is not valid JSON (numbers must be finite)")
    return doc


def check_header(c: Checker, doc: Any, schema: str) -> None:
    if not isinstance(doc, dict):
        raise c.fail("", f"must hold a JSON object at the top level, got {_show(doc)[:20]}")
    got = c.get(doc, "schema", "")
    if got != schema:
        raise c.fail("schema", f"must be {schema!r}, got {_show(got)}")
    version = c.get(doc, "version", "")
    if isinstance(version, bool) or version != FORMAT_VERSION:
        raise c.fail("version", f"must be {FORMAT_VERSION}, got {_show(version)}")


# --- writing -------------------------------------------------------------------------


def dumps(doc: Mapping[str, Any]) -> str:
    """Deterministic JSON text: fixed indentation, float repr, trailing newline."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def read_bytes(path: str | Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` of them; anything else is an InputError.

    A FIFO or a device (``/dev/zero``) named where a file is expected would block or never
    end, so only regular files are opened, and a file above the limit is refused unread.
    """
    try:
        # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb", buffering=0) as fh:
            info = os.fstat(fh.fileno())
            _refuse_unless_regular(path, info, limit)
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(str(path), "", f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:  # it grew while being read
        raise InputError(str(path), "", f"holds more than {limit} bytes, the limit")
    return data


def _refuse_unless_regular(path: str | Path, info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InputError(str(path), "", "is not a regular file (a folder, FIFO or device)")
    if info.st_size > limit:
        raise InputError(str(path), "", f"holds {info.st_size} bytes, above the limit of {limit}")


def check_regular_file(path: str | Path, limit: int = MAX_INPUT_BYTES) -> None:
    """InputError unless ``path`` is a regular file of at most ``limit`` bytes (for readers
    that open the file themselves, such as pandas)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError(str(path), "", f"cannot be read: {exc.strerror or exc}") from None
    _refuse_unless_regular(path, info, limit)


def sha256_bytes(data: bytes) -> str:
    """Hex digest used in solution files (``instance_sha256``)."""
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over ``path``.

    The file gets mode 0666 less the user's umask, as any other tool's file would
    (``tempfile.mkstemp`` would keep its private 0600 through the rename).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new, exclusively created ``.NAME.RANDOM.tmp`` beside ``path``; the kernel applies the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits collide
            continue
