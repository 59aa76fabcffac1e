"""A journal of a MILP backend's proofs, so that a long refutation stopped part-way resumes.

A refutation of one fig4a K = 60 instance runs for hours (docs/library.md): hundreds of
part models of 120 s each. The journal keeps, for each model a backend has closed, what
it proved, keyed by a digest of the exact model the backend saw (every variable, row,
coefficient, right-hand side, unit and role, and the objective) and the solver's name. A later solve of
a byte-identical model gets the recorded answer without solving: the same fact, proved
by the same solver, on the same model. Nothing else is keyed, so the journal cannot lend
a proof to a model that differs in one coefficient.

Recorded are the answers without a schedule: an infeasibility proof, and a solve stopped
by its limit with its dual bound (a stopped part is then bisected at once instead of
being tried again; it is replayed only where it had at least :data:`LIMIT_SHARE` of the
time now asked for, on the same clock). A schedule is never journaled: the sweep needs
it, and in a refutation it would be the loud case of a contradiction, better re-solved.

One file per model (``<dir>/<digest[:2]>/<digest>.json``), written atomically, so two
processes can share a journal. The MILP solvers' option ``journal = "DIR"`` turns it on
(``library refs --journal DIR`` sets it on each MILP configuration); being an option, the
journal is part of the configuration and its hash.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.errors import InputError
from balance_opt.files import atomic_write
from balance_opt.solvers.milp.formulation import BackendResult
from balance_opt.solvers.milp.linear import Formulation
from balance_opt.status import Termination

FORMAT = "balance-opt-journal/1"
LIMIT_SHARE = 0.99  # a stopped solve stands for a new one asking at most 1/0.99 of its time
_KEPT = {Termination.INFEASIBLE: "infeasible", Termination.TIME_LIMIT: "time_limit"}

Backend = Callable[[Formulation, float | None, Any, bool], BackendResult]


def model_key(f: Formulation, solver: str) -> str:
    """SHA-256 of ``solver`` and everything of ``f`` a backend reads: every number (floats as
    raw bytes), and the units and roles by which CP-SAT scales and rounds."""
    h = hashlib.sha256()
    h.update(f"{FORMAT}\0{solver}\0{f.z!r}\0".encode())
    for v in f.vars:
        h.update(f"v\0{v.name}\0{v.kind}\0{v.lb.hex()}\0{v.ub.hex()}\0{v.unit}\0{v.role}\0".encode())
    for r in f.rows:
        big_m = r.big_m.hex() if r.indicator is not None else "-"
        h.update(f"r\0{r.name}\0{r.unit}\0{r.rhs.hex()}\0{r.indicator}\0{big_m}\0{len(r.index)}\0".encode())
        h.update(np.asarray(r.index, dtype="<i8").tobytes())
        h.update(np.asarray(r.coef, dtype="<f8").tobytes())
    h.update(b"o\0" + np.asarray(f.objective, dtype="<i8").tobytes())
    return h.hexdigest()


@dataclass
class Journal:
    """The journal folder, and what this process replayed from it and recorded in it."""

    folder: Path
    replayed: int = 0
    recorded: int = 0
    replayed_s: float = 0.0  # solve seconds the replayed entries once took

    @classmethod
    def at(cls, folder: Path) -> Journal:
        """The journal in ``folder`` (made when first written); InputError when it is a file."""
        if folder.exists() and not folder.is_dir():
            raise InputError(str(folder), "", "the journal option names a file, not a folder")
        return cls(folder)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry of ``key``, or None; a malformed entry is an InputError naming its file."""
        path = self.path(key)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(str(path), "", f"not a journal entry: {exc}") from None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
            raise InputError(str(path), "format", f"must be {FORMAT!r} with key {key}")
        if entry.get("termination") not in _KEPT.values():
            raise InputError(str(path), "termination", f"must be one of {sorted(_KEPT.values())}")
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        atomic_write(
            self.path(key),
            json.dumps({"format": FORMAT, "key": key, **entry}, sort_keys=True, default=str) + "\n",
        )
        self.recorded += 1

    def summary(self) -> dict[str, Any]:
        """What this process did with the journal (for a solver's stats)."""
        return {
            "folder": str(self.folder),
            "replayed": self.replayed,
            "recorded": self.recorded,
            "replayed_s": round(self.replayed_s, 3),
        }


def replays(entry: dict[str, Any], limit: float | None, clock: str | None) -> bool:
    """Whether ``entry`` answers a solve with ``limit`` seconds on ``clock``: a proof always;
    a stopped solve only where it had about as much time (or more) on the same clock."""
    if entry["termination"] == "infeasible":
        return True
    had = entry.get("time_limit")
    return (
        limit is not None and had is not None and entry.get("clock") == clock and had >= LIMIT_SHARE * limit
    )


def journaled(backend: Backend, journal: Journal, solver: str, clock: str | None = None) -> Backend:
    """``backend`` answering from ``journal`` where it can, and recording what it proves."""

    def solve(f: Formulation, limit: float | None, start: Any, strict: bool) -> BackendResult:
        key = model_key(f, solver)
        entry = journal.get(key)
        if entry is not None and replays(entry, limit, clock):
            journal.replayed += 1
            journal.replayed_s += float(entry.get("seconds", 0.0))
            term = Termination.INFEASIBLE if entry["termination"] == "infeasible" else Termination.TIME_LIMIT
            stats = {**entry.get("stats", {}), "journal": "replayed"}
            return BackendResult(term, None, entry.get("bound"), stats)
        t0 = time.perf_counter()
        res = backend(f, limit, start, strict)
        kept = _KEPT.get(res.termination)
        if kept is not None and res.values is None and res.exact:
            journal.put(
                key,
                {
                    "solver": solver,
                    "termination": kept,
                    "bound": res.bound,
                    "time_limit": limit,
                    "clock": clock,
                    "seconds": round(time.perf_counter() - t0, 3),
                    "stats": res.stats,
                    "z": f.z,
                    "rows": len(f.rows),
                },
            )
        return res

    return solve
