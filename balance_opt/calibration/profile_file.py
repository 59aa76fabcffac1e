"""The hardware-profile file that ``calibrate`` writes and ``generate --hardware-file`` reads.

JSON, ``schema = "balance-opt/hardware-profile"``, ``version = 1``::

    {"schema": "balance-opt/hardware-profile", "version": 1, "name": "my-gpu",
     "source": "balance-opt calibrate timings.csv ...", "memory_bytes": 24e9,
     "llm": {"name": "llama-2-7b", "alpha_s_per_flop": 1.1e-14, "beta_s": 0.012, "rows": 40,
             "relative_error": {"prefill": {"rows": 8, "mean": 0.03, "max": 0.07}, ...}},
     "slm": {...}}

Required: ``schema``, ``version``, ``llm`` and ``slm`` with ``name`` (a model of
:mod:`balance_opt.profiles`), ``alpha_s_per_flop`` (finite, > 0) and ``beta_s`` (finite,
>= 0). ``memory_bytes`` (finite, > 0) is optional: the GPU's capacity ``Q``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from balance_opt.calibration.fit import ModelFit
from balance_opt.errors import InputError
from balance_opt.io import atomic_write
from balance_opt.profiles import MODELS

SCHEMA = "balance-opt/hardware-profile"
VERSION = 1


@dataclass(frozen=True)
class ModelConstants:
    """One model's fitted constants."""

    name: str
    alpha_s_per_flop: float
    beta_s: float


@dataclass(frozen=True)
class HardwareFile:
    """What ``generate --hardware-file`` needs of a profile file."""

    llm: ModelConstants
    slm: ModelConstants
    memory_bytes: float | None
    name: str


def profile_json(
    name: str, source: str, names: dict[str, str], fits: dict[str, ModelFit], memory_bytes: float | None
) -> str:
    """The file's text (keys in a fixed order, so the same fit gives the same bytes)."""
    doc: dict[str, Any] = {"schema": SCHEMA, "version": VERSION, "name": name, "source": source}
    if memory_bytes is not None:
        doc["memory_bytes"] = memory_bytes
    for key in ("llm", "slm"):
        fit = fits[key]
        doc[key] = {
            "name": names[key],
            "alpha_s_per_flop": fit.alpha_s_per_flop,
            "beta_s": fit.beta_s,
            "rows": fit.rows,
            "relative_error": {
                p: {"rows": e.rows, "mean": round(e.mean, 6), "max": round(e.max, 6)}
                for p, e in fit.errors.items()
            },
        }
    return json.dumps(doc, indent=2) + "\n"


def write_profile(path: str | Path, text: str) -> Path:
    return atomic_write(path, text)


def _number(src: str, obj: dict[str, Any], key: str, where: str, positive: bool) -> float:
    value: Any = obj.get(key)
    rule = "a finite number > 0" if positive else "a finite number >= 0"
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if number and (value > 0 or (value == 0 and not positive)):
        return float(value)
    raise InputError(src, f"{where}{key}", f"must be {rule}, got {value!r}")


def _model(src: str, doc: dict[str, Any], key: str) -> ModelConstants:
    obj = doc.get(key)
    if not isinstance(obj, dict):
        raise InputError(src, key, f"must be a JSON object, got {obj!r}")
    name = obj.get("name")
    if name not in MODELS:
        raise InputError(src, f"{key}.name", f"must be a known model ({', '.join(MODELS)}), got {name!r}")
    alpha = _number(src, obj, "alpha_s_per_flop", f"{key}.", positive=True)
    return ModelConstants(str(name), alpha, _number(src, obj, "beta_s", f"{key}.", positive=False))


def read_profile(path: str | Path) -> HardwareFile:
    """The checked profile at ``path``; InputError naming the file, the field and the rule."""
    src = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(src, "", f"cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(src, "", f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else doc
        raise InputError(src, "schema", f"must be {SCHEMA!r}, got {got!r}")
    if doc.get("version") != VERSION:
        raise InputError(src, "version", f"must be {VERSION}, got {doc.get('version')!r}")
    memory = _number(src, doc, "memory_bytes", "", positive=True) if "memory_bytes" in doc else None
    name = doc.get("name")
    return HardwareFile(
        _model(src, doc, "llm"),
        _model(src, doc, "slm"),
        memory,
        name if isinstance(name, str) else Path(src).stem,
    )
