"""The fuzz suite's machinery: hostile values, mutations of JSON trees and files, and a
command runner that reports how a command answered.

A mutation takes a valid document (instance, solution, configuration, table) and changes
one place: a value replaced by a hostile one (numbers at the float limits, integers of 400
digits, wrong types, deep nesting, path strings, control characters), a key removed or
added, or the text itself cut or edited. :func:`answer` runs a real command in this
process and returns its exit status and output; the contract (docs/contract.md) says
which answers are allowed.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from balance_opt.cli import main

# The documented exit statuses of every command (0 ok, 1 refuted claim or infeasible
# schedule, 2 bad input, 4 failed solves under --fail-on-error); 3 needs a dask scheduler.
EXIT_STATUSES = frozenset({0, 1, 2, 4})

EDGE_NUMBERS: tuple[Any, ...] = (
    0, -0.0, -1, 1, 2, 0.5, 1e-300, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
    1e15, 1e16, 10**7, 10**7 + 1, 2**31, 2**53 + 1, 2**63, 2**64, 10**400, -(10**400), 3e9,
)  # fmt: skip
HOSTILE_STRINGS = (
    "", " ", "../../escape", "/etc/passwd", "/dev/zero", "a/b", "\x1b[31mred", "new\nline", "tab\tx",
    "nul\x00", "\u202eevil", "=cmd|' /C calc'!A0", "x" * 5000, "ü", "1e400", "NaN", "null",
)  # fmt: skip


# Stands for an array nested 100,000 deep, put in by :func:`dump` (json.dumps cannot write it).
DEEP = "\ue000deep"


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


hostile_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.sampled_from(HOSTILE_STRINGS),
    st.sampled_from([None, True, False, [], {}, [1, 2], {"a": 1}, [None], _deep(50), DEEP]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree (keys of objects, indexes of lists), parents first."""
    out: list[tuple[Any, ...]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out.append((*prefix, key))
        out += paths(value, (*prefix, key))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def mutated_documents(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` (a fresh copy) with one place replaced, removed, or a key added."""
    doc = json.loads(json.dumps(doc))
    places = paths(doc)
    path = draw(st.sampled_from(places))
    parent = _parent(doc, path)
    action = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add"]))
    if action == "replace":
        parent[path[-1]] = draw(hostile_values)
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.sampled_from(["extra", "id", "name", "z", "\x1b"]))] = draw(hostile_values)
    else:
        parent.insert(path[-1], draw(hostile_values))
    return doc


def dump(doc: Any) -> str:
    """JSON text as an outside tool might write it: NaN and Infinity allowed, any integer."""
    return json.dumps(doc, allow_nan=True).replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)


@st.composite
def mutated_texts(draw: st.DrawFn, text: str) -> str:
    """``text`` cut short, with a character replaced or inserted, or a BOM in front."""
    at = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
    kind = draw(st.sampled_from(["cut", "replace", "insert", "bom", "nan"]))
    char = draw(st.sampled_from([*'{}[]",:0-9e.\x00\n\\', "\ufeff", "é"]))
    if kind == "cut":
        return text[:at]
    if kind == "replace":
        return text[:at] + char + text[at + 1 :]
    if kind == "insert":
        return text[:at] + char + text[at:]
    if kind == "bom":
        return "\ufeff" + text
    return text.replace("0.5", "NaN", 1) if "0.5" in text else text + "NaN"


@dataclass(frozen=True)
class Answer:
    """How a command answered: exit status, standard output, standard error."""

    code: int
    out: str
    err: str

    def problems(self, named: Sequence[str | Path] = ()) -> list[str]:
        """What breaks the contract: an undocumented status, an internal error, a bad-input
        message that names none of the given files."""
        found = []
        if self.code not in EXIT_STATUSES:
            found.append(f"exit status {self.code}")
        if "internal error" in self.err or "Traceback" in self.err:
            found.append("internal error")
        if self.code == 2 and named and not any(Path(p).name in self.err for p in named):
            found.append("exit 2 without naming the file")
        return found


def answer(*argv: str | Path) -> Answer:
    """Run ``balance-opt ARGV`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return Answer(code, out.getvalue(), err.getvalue())
