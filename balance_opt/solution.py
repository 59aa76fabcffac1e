"""The one record of a solve (:class:`Solution`): what a solver's answer became once the
evaluator judged it, from the solver through the batch to its file and the report.

A :class:`Solution` is made in the process that solved (:func:`~balance_opt.result.make_result`),
crosses process and machine boundaries by pickling, and becomes JSON only where its file is
written (:meth:`Solution.to_dict`, the one writer of solution documents); read back
(:meth:`Solution.from_dict`), it is the same record less the evaluator's per-user detail.
Any solution file, an outside tool's included, is checked and read by
:mod:`balance_opt.solution_checks` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from balance_opt.claims import Claims
from balance_opt.evaluator import Evaluation, Schedule
from balance_opt.files import FORMAT_VERSION, Checker, parse_json, read_bytes
from balance_opt.model import MODE_CODES
from balance_opt.solution_checks import (
    SOLUTION_SCHEMA,
    SolutionFile,
    broken_rule,
    check_solution_dict,
    read_solution,
)
from balance_opt.status import UNANSWERED, Status, Termination, Verdict
from balance_opt.work import Work


def recorded_options(options: Mapping[str, Any], seed: int, time_limit_s: float | None) -> dict[str, Any]:
    """The ``options`` a solution records: the solver's options, the seed, the time limit if any."""
    out = {**options, "seed": seed}
    if time_limit_s is not None:
        out["time_limit_s"] = time_limit_s
    return out


@dataclass(frozen=True)
class RunRecord:
    """A batch solve's provenance (the solution's ``run``): with it the file rebuilds its table row."""

    config: str  # the configuration's name
    config_hash: str  # what a rerun compares to skip finished work
    instance_file: str
    stem: str
    users: int | None  # K; None when the instance file could not be read
    generator: Mapping[str, Any] | None  # the instance's provenance
    host: str | None
    version: str | None
    commit: str | None  # ``git describe`` of the source, when it is a checkout

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, c: Checker, doc: Mapping[str, Any]) -> RunRecord:
        """Read ``run``: the names a rerun and the table need are required, the rest may be null."""
        names: dict[str, Any] = {
            k: c.string(doc, k, "run") for k in ("config", "config_hash", "instance_file", "stem")
        }
        kinds = {"users": (int, "an integer"), "generator": (dict, "a JSON object")}
        kinds |= dict.fromkeys(("host", "version", "commit"), (str, "a string"))
        optional = {k: c.optional(doc, k, kind, "run.", what) for k, (kind, what) in kinds.items()}
        return cls(**names, **optional)


_KEYS = {"lam": "lambda"}  # attribute -> field name, where they differ
# written only when set (stats: not empty)
_WHEN_GIVEN = ("instance_sha256", "termination", "error", "stats", "run")
_IN_PROCESS = ("evaluation", "work")  # attributes that are not fields of the file


@dataclass(frozen=True)
class Solution:
    """One solve, judged: every field of the solution document in file order (docs/formats.md),
    and, in the process that solved, the evaluator's whole :class:`Evaluation`.

    ``feasible`` and ``served`` are the evaluator's (:func:`~balance_opt.result.make_result`
    makes the record of a solver's answer). ``assignment`` is in instance order, so
    :attr:`schedule` needs no instance. ``instance_sha256`` is the digest of the instance
    file: a batch sets it (:meth:`for_file`); an in-process solve of an instance that came
    from no file has none, and its document then names the instance only. A record that
    breaks :func:`broken_rule` cannot be made (ValueError).

    A new field of the document is one attribute here, in its place in the file order: the
    writer and the typed reader follow the attributes (``_KEYS`` names those whose file name
    differs, ``_WHEN_GIVEN`` those left out while unset, ``_IN_PROCESS`` those never
    written); its value rule goes in :func:`check_solution_dict`, its column (if any) in
    :mod:`balance_opt.batch.table`.
    """

    instance: str
    instance_sha256: str | None
    solver: str
    options: Mapping[str, Any]
    status: Status
    served: int
    bound: int | None
    z: float
    lam: float | None
    assignment: Mapping[str, str]
    runtime_s: float
    feasible: bool
    termination: Termination | None = None  # None only in files written before it existed
    error: str | None = None
    stats: Mapping[str, Any] = field(default_factory=dict)
    run: RunRecord | None = None
    # the evaluator's verdict in full (latencies, memory); None once read from a file or
    # sent back from a batch worker (the file holds its summary: feasible, served)
    evaluation: Evaluation | None = field(default=None, repr=False, compare=False)
    work: Work = field(init=False, repr=False, compare=False)  # derived from stats, not a field of the file

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        set_(self, "status", Status(self.status))
        if self.termination is not None:
            set_(self, "termination", Termination(self.termination))
        for name in ("options", "assignment", "stats"):
            set_(self, name, dict(getattr(self, name)))
        set_(self, "work", Work.of(self.stats))
        broken = broken_rule(self.claims(), self.error, strict=True)
        if broken is not None:
            raise ValueError(f"{broken[0]}: {broken[1]}")

    @property
    def failed(self) -> bool:
        """No answer of its own (refused, crashed, killed), or one the evaluator rejects."""
        return self.status == Status.ERROR or self.termination in UNANSWERED

    @property
    def refused(self) -> bool:
        """Refused before it started (a bad instance file, a solver that declined)."""
        return self.termination == Termination.REFUSED

    @property
    def scheduled(self) -> bool:
        """False when the solve brought no schedule back (nobody served stands in)."""
        return self.termination not in UNANSWERED

    @property
    def verdict(self) -> Verdict:
        """What we hold: a schedule the evaluator accepts or rejects, or none at all."""
        if not self.scheduled:
            return Verdict.NO_SCHEDULE
        return Verdict.FEASIBLE if self.feasible else Verdict.INFEASIBLE

    @cached_property
    def schedule(self) -> Schedule:
        """The schedule: ``z`` and one mode per user, in the order of ``assignment``."""
        codes = [MODE_CODES[mode] for mode in self.assignment.values()]
        return Schedule(self.z, np.array(codes, dtype=np.int8))

    def gap(self) -> int | None:
        """Proved bound minus served, when there is a bound."""
        return None if self.bound is None else self.bound - self.served

    def claims(self) -> Claims:
        """What the document claims (compared with the evaluator by :mod:`balance_opt.claims`)."""
        return Claims(self.served, self.feasible, self.status, self.bound, bound_given=True)

    def for_file(self, instance_sha256: str, run: RunRecord | None = None) -> Solution:
        """This solve as a batch files it: the instance file's digest, the run's provenance,
        and no per-user detail (the parent process writes the file and needs none)."""
        return replace(self, instance_sha256=instance_sha256, run=run, evaluation=None)

    @classmethod
    def not_started(
        cls, instance: str, sha256: str, solver: str, options: Mapping[str, Any], message: str
    ) -> Solution:
        """The ``error`` of a solve that never started: its instance file could not be read."""
        return cls(
            instance, sha256, solver, options, Status.ERROR, served=0, bound=None, z=0.0, lam=None,
            assignment={}, runtime_s=0.0, feasible=False, termination=Termination.REFUSED, error=message,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The document, fields in their fixed order: the one writer of solution files."""
        doc: dict[str, Any] = {"schema": SOLUTION_SCHEMA, "version": FORMAT_VERSION}
        for f in fields(self):
            if f.name in _IN_PROCESS:
                continue
            value = getattr(self, f.name)
            if f.name in _WHEN_GIVEN and (value is None or value == {}):
                continue
            if isinstance(value, Status | Termination):
                value = str(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, RunRecord):
                value = value.to_dict()
            doc[_KEYS.get(f.name, f.name)] = value
        return doc

    @classmethod
    def from_dict(cls, doc: Any, source: str = "<solution>") -> Solution:
        """Read a document balance-opt wrote: the file rules, then the fields it always writes."""
        doc = check_solution_dict(doc, source)
        c = Checker(source)
        values: dict[str, Any] = {}
        for f in fields(cls):
            key = _KEYS.get(f.name, f.name)
            if f.name in _IN_PROCESS:
                continue
            if f.name not in _WHEN_GIVEN:
                values[f.name] = c.get(doc, key, "")
            elif key in doc:
                values[f.name] = doc[key]
            elif f.default is MISSING and f.default_factory is MISSING:
                values[f.name] = None  # left out while unknown (instance_sha256)
        if "stats" in values:
            c.obj(doc, "stats", "")
        if "run" in values:
            values["run"] = RunRecord.from_dict(c, c.obj(doc, "run", ""))
        broken = broken_rule(Claims.of_document(doc), values.get("error"), strict=True)
        if broken is not None:
            raise c.fail(*broken)
        return cls(**values)

    @classmethod
    def read(cls, path: str | Path) -> Solution:
        """Read a solution file balance-opt wrote (InputError when it is not one)."""
        return cls.from_dict(parse_json(read_bytes(path), str(path)), str(path))

    def summary(self) -> str:
        """One human line: instance, configuration (else solver), status, served (of K), bound,
        z, lambda, verdict, runtime (``solve`` without ``--out``)."""
        run = self.run
        label = f"{self.instance} {self.solver if run is None else run.config}"
        of = f"/{run.users}" if run is not None and run.users else ""
        bound = "" if self.bound is None else f" bound={self.bound}"
        lam = "" if self.lam is None else f" lambda={self.lam:g}"
        tail = f" ({self.error})" if self.error else ""
        return (
            f"{label}: {self.status} served={self.served}{of}{bound} z={self.z:g}{lam} "
            f"feasible={str(self.feasible).lower()} {self.runtime_s:.3f}s{tail}"
        )


__all__ = [
    "SOLUTION_SCHEMA",
    "RunRecord",
    "Solution",
    "SolutionFile",
    "check_solution_dict",
    "read_solution",
    "recorded_options",
]
