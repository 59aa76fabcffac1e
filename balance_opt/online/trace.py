"""Trace files of the online model: one CSV row per user (docs/formats.md, "Trace files (online)").

A bad trace raises :class:`~balance_opt.errors.InputError` naming the file, the data row
(counted from 1, the header not counted, so data row ``n`` is line ``n + 1`` when no cell holds
a line break), the column and the rule, e.g.
``t.csv: data row 3, column arrival_s: arrivals must be non-decreasing, got 1.5 after 2.0``.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.errors import InputError
from balance_opt.files import atomic_write, read_bytes
from balance_opt.generator import generate
from balance_opt.instance import USER_ARRAY_FIELDS, VALUE_RULES, YEAR_S, InvalidInstance, Rule, in_range
from balance_opt.online.workload import Acceptance, Workload

REQUIRED = ("arrival_s", "input_tokens", "output_tokens")
CHANNEL = (
    "uplink_bandwidth_hz",
    "uplink_spectral_efficiency",
    "downlink_bandwidth_hz",
    "downlink_spectral_efficiency",
)
# the order write_trace writes; read_trace takes the columns in any order
COLUMNS = (
    "user_id",
    "arrival_s",
    "input_tokens",
    "output_tokens",
    "predicted_output_tokens",
    "deadline_s",
    "acceptance",
    *CHANNEL,
)
KNOWN = (*COLUMNS, "deadline_scale")  # every column read_trace takes
# a trace's clock starts at 0: ten years leave sub-microsecond resolution in a double
RULES: dict[str, Rule] = {
    **VALUE_RULES["user"],
    "arrival_s": in_range(0.0, 10 * YEAR_S, " s"),
    "predicted_output_tokens": VALUE_RULES["user"]["output_tokens"],
    "deadline_scale": Rule("> 0", lambda x: x > 0),
}
INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
NON_FINITE = re.compile(r"[+-]?(nan|inf|infinity)", re.IGNORECASE)


class _Reader:
    """Cells of one trace, checked against their column's rule."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, row: int | None, column: str, rule: str) -> InputError:
        where = f"header, column {column}" if row is None else f"data row {row}, column {column}"
        return InputError(self.source, where, rule)

    def number(self, row: int, column: str, cell: str) -> int | float:
        """The cell as its column's number, or the rule it breaks."""
        rule, text = RULES[column], cell.strip()
        if rule.integer:
            if not INTEGER.fullmatch(text):
                raise self.fail(row, column, f"must be an integer {rule.text} (digits only), got {cell!r}")
            value: int | float = int(text)
        elif DECIMAL.fullmatch(text):
            value = float(text)
        elif NON_FINITE.fullmatch(text):
            raise self.fail(row, column, f"must be a finite number {rule.text}, got {cell!r}")
        else:
            raise self.fail(row, column, f"must be a number {rule.text}, got {cell!r}")
        broken = rule.broken(value)
        if broken is not None:
            raise self.fail(row, column, broken)
        return value


def _header(r: _Reader, rows: list[list[str]]) -> list[str]:
    if not rows:
        raise InputError(r.source, "", "is empty: a trace needs a header row and at least one data row")
    header = [name.strip() for name in rows[0]]
    for i, name in enumerate(header):
        if name not in KNOWN:
            raise r.fail(None, repr(name), f"unknown column; known: {', '.join(KNOWN)}")
        if name in header[:i]:
            raise r.fail(None, name, "appears twice")
    for name in REQUIRED:
        if name not in header:
            raise r.fail(None, name, "is required but missing")
    if ("deadline_s" in header) == ("deadline_scale" in header):
        raise r.fail(None, "deadline_s", "give exactly one of the columns deadline_s and deadline_scale")
    if len(rows) == 1:
        raise InputError(r.source, "", "is an empty trace: no data rows after the header")
    return header


def _columns(r: _Reader, rows: list[list[str]], header: list[str]) -> dict[str, list[Any]]:
    """Every column's values, row by row; the checks that span rows (order, unique ids)."""
    columns: dict[str, list[Any]] = {name: [] for name in header}
    seen: dict[str, int] = {}
    for n, cells in enumerate(rows[1:], start=1):
        if len(cells) != len(header):
            column = header[min(len(cells), len(header) - 1)]  # the first cell missing, or the last
            raise r.fail(n, column, f"the row has {len(cells)} cells, the header {len(header)} columns")
        for name, cell in zip(header, cells, strict=True):
            if name == "user_id":
                if not cell or cell in seen:
                    also = f", {cell!r} is also data row {seen[cell]}" if cell else ""
                    raise r.fail(n, name, f"user ids must be non-empty and unique{also}")
                seen[cell] = n
                columns[name].append(cell)
                continue
            columns[name].append(r.number(n, name, cell))
        a = columns["arrival_s"]
        if n > 1 and a[-1] < a[-2]:
            raise r.fail(n, "arrival_s", f"arrivals must be non-decreasing, got {a[-1]!r} after {a[-2]!r}")
    return columns


def read_trace(
    path: str | Path, preset: str = "fig4", seed: int = 0, acceptance: Acceptance = "random"
) -> Workload:
    """The workload of a trace; columns it lacks come from ``generate(preset, users=K, seed=seed)``.

    The server and models are the preset's, the instance is named after the file's stem, and
    ``seed`` also seeds the users' acceptance streams.
    """
    r = _Reader(str(path))
    try:
        text = read_bytes(path).decode("utf-8-sig")  # a spreadsheet's byte-order mark is no cell
    except UnicodeDecodeError as exc:
        raise InputError(r.source, "", f"is not UTF-8 text: {exc}") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise InputError(r.source, "", f"is not valid CSV: {exc}") from None
    header = _header(r, rows)
    columns = _columns(r, rows, header)
    k = len(rows) - 1
    base = generate(preset, users=k, seed=seed)
    changes: dict[str, Any] = {"name": Path(path).stem or "trace"}
    if "user_id" in columns:
        changes["user_ids"] = tuple(columns["user_id"])
    for name, dtype in USER_ARRAY_FIELDS:
        if name in columns:
            changes[name] = np.array(columns[name], dtype=dtype)
    if "deadline_scale" in columns:
        changes["deadline_s"] = _scaled_deadlines(r, base.deadline_s.tolist(), columns["deadline_scale"])
    if any(name in columns for name in CHANNEL):
        changes["distance_m"] = None  # the preset's distances no longer explain the links
    given = [name for name in KNOWN if name in columns]
    changes["generator"] = {**(base.generator or {}), "trace": {"file": Path(path).name, "columns": given}}
    predicted = columns.get("predicted_output_tokens", columns["output_tokens"])
    try:
        inst = base.replace(**changes)
    except InvalidInstance as exc:  # every cell was checked; kept so no rule escapes as a ValueError
        raise InputError(r.source, exc.path, exc.rule) from None
    return Workload(inst, np.array(columns["arrival_s"]), np.array(predicted), seed, acceptance)


def _scaled_deadlines(r: _Reader, drawn: list[float], scales: list[float]) -> np.ndarray:
    """The preset's deadline times each row's ``deadline_scale``, within the deadline's rule."""
    rule = VALUE_RULES["user"]["deadline_s"]
    out = []
    for n, (t, s) in enumerate(zip(drawn, scales, strict=True), start=1):
        broken = rule.broken(t * s)
        if broken is not None:
            raise r.fail(n, "deadline_scale", f"makes the deadline {t!r} * {s!r}, which {broken}")
        out.append(t * s)
    return np.array(out, dtype=np.float64)


def trace_text(workload: Workload) -> str:
    """The CSV text :func:`write_trace` writes: every column, floats as ``repr`` (they round-trip)."""
    inst = workload.instance
    if "" in inst.user_ids:  # a trace's user ids are non-empty (read_trace refuses an empty cell)
        raise ValueError(f"user {inst.user_ids.index('')} has an empty id, which a trace cannot hold")
    values: dict[str, list[Any]] = {name: getattr(inst, name).tolist() for name, _ in USER_ARRAY_FIELDS}
    values |= {"arrival_s": workload.arrival_s.tolist(), "user_id": list(inst.user_ids)}
    values["predicted_output_tokens"] = workload.predicted_output_tokens.tolist()
    lines = [",".join(COLUMNS)]
    for k in range(inst.num_users):
        lines.append(",".join(_cell(values[name][k]) for name in COLUMNS))
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        assert math.isfinite(value), value  # a Workload holds finite values only
        return repr(value)
    if isinstance(value, str) and (any(c in value for c in ',"\r\n')):
        # csv.writer leaves a lone "\r" unquoted when lines end in "\n"; a reader splits there
        return '"' + value.replace('"', '""') + '"'
    return str(value)


def write_trace(workload: Workload, path: str | Path) -> Path:
    """Write the workload as a trace, atomically; ``read_trace`` gives back its users exactly."""
    return atomic_write(path, trace_text(workload))
