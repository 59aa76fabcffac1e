"""The timings CSV that ``balance-opt calibrate`` reads (one measured forward pass a row).

Columns: ``model`` (``llm`` or ``slm``), ``phase`` (``prefill``, ``decode``, ``verify``),
``batch`` (sequences in the pass), ``new_tokens`` (tokens per sequence processed: the
prompt length for prefill, 1 for decode, the verified tokens for verify),
``context_tokens`` (tokens in the KV cache before the pass; 0 for prefill) and
``seconds``. Extra columns are ignored. A bad row raises :class:`InputError` naming the
file, the row (1 = first data row), the column and the rule.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from balance_opt.errors import InputError

COLUMNS = ("model", "phase", "batch", "new_tokens", "context_tokens", "seconds")
MODELS = ("llm", "slm")
PHASES = ("prefill", "decode", "verify")


@dataclass(frozen=True)
class Timing:
    """One measured forward pass."""

    model: str
    phase: str
    batch: int
    new_tokens: int
    context_tokens: int
    seconds: float


def _int(text: str, minimum: int) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= minimum else None


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def parse_row(row: dict[str, str], where: str, source: str) -> Timing:
    """One CSV row as a :class:`Timing`; InputError at ``source: where, column C: rule``."""

    def fail(column: str, rule: str) -> InputError:
        return InputError(source, f"{where}, column {column}", f"{rule}, got {row.get(column)!r}")

    model, phase = (row.get("model") or "").strip(), (row.get("phase") or "").strip()
    if model not in MODELS:
        raise fail("model", "must be one of llm, slm")
    if phase not in PHASES:
        raise fail("phase", "must be one of prefill, decode, verify")
    batch = _int(row.get("batch") or "", 1)
    if batch is None:
        raise fail("batch", "must be an integer >= 1")
    new = _int(row.get("new_tokens") or "", 1)
    if new is None:
        raise fail("new_tokens", "must be an integer >= 1")
    context = _int(row.get("context_tokens") or "", 0)
    if context is None:
        raise fail("context_tokens", "must be an integer >= 0")
    seconds = _seconds(row.get("seconds") or "")
    if seconds is None:
        raise fail("seconds", "must be a finite number > 0")
    # The phase fixes the shape of the pass (docs/model.md section 3).
    if phase == "prefill" and context != 0:
        raise fail("context_tokens", "must be 0 for a prefill row")
    if phase == "decode" and new != 1:
        raise fail("new_tokens", "must be 1 for a decode row")
    if phase == "verify" and model != "llm":
        raise fail("model", "must be llm for a verify row (only the LLM verifies)")
    return Timing(model, phase, batch, new, context, seconds)


def parse_rows(rows: Iterable[dict[str, str]], header: Iterable[str], source: str) -> list[Timing]:
    """Every row, checked; the header must hold all :data:`COLUMNS`."""
    missing = [c for c in COLUMNS if c not in set(header)]
    if missing:
        raise InputError(
            source, "header", f"missing column(s) {', '.join(missing)}; need {', '.join(COLUMNS)}"
        )
    out = [parse_row(row, f"row {i}", source) for i, row in enumerate(rows, start=1)]
    if not out:
        raise InputError(source, "", "has no data rows")
    return out


def read_timings(path: str | Path) -> list[Timing]:
    """The checked rows of the timings CSV at ``path``."""
    source = str(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            return parse_rows(reader, reader.fieldnames or (), source)
    except OSError as exc:
        raise InputError(source, "", f"cannot read: {exc.strerror or exc}") from None
    except csv.Error as exc:
        raise InputError(source, "", f"not a valid CSV file: {exc}") from None


def timings_csv(rows: Iterable[Timing]) -> str:
    """The CSV text of ``rows`` (the format :func:`read_timings` reads)."""
    lines = [",".join(COLUMNS)]
    for r in rows:
        lines.append(f"{r.model},{r.phase},{r.batch},{r.new_tokens},{r.context_tokens},{r.seconds!r}")
    return "\n".join(lines) + "\n"
