"""The solution file (docs/formats.md): its rules, its reader, and the typed document balance-opt writes.

Two readers, one per kind of file:

- :func:`check_solution_dict` / :func:`read_solution` accept any solution file, down to
  the five required fields an outside tool writes; they return the document as a dict,
  :class:`SolutionFile` as a record (None where a field is absent).
- :class:`Solution` is the document balance-opt's solvers and batch write, every field
  typed, in file order. :meth:`Solution.to_dict` is the one writer of solution documents;
  :meth:`Solution.from_dict` reads one back (the file rules first, then the fields
  balance-opt always writes).

The document's rules are stated once, in :func:`broken_rule`: an ``error`` message goes
with status ``"error"``, and the claims do not contradict each other
(:func:`~balance_opt.claims.contradiction`: an error serves 0, ``optimal`` has bound =
served). Claims against the evaluator are :mod:`balance_opt.claims`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from balance_opt.claims import Claims, contradiction
from balance_opt.files import FORMAT_VERSION, Checker, check_header, parse_json, read_bytes
from balance_opt.instance import NON_NEGATIVE, UNIT, Instance, Rule
from balance_opt.instance import show_value as _show
from balance_opt.model import MODE_CODES
from balance_opt.status import UNANSWERED, Status, Termination
from balance_opt.work import Work

SOLUTION_SCHEMA = "balance-opt/solution"

_COUNT0 = Rule(">= 0", lambda x: x >= 0, integer=True)  # served, bound


def broken_rule(claims: Claims, error: str | None, *, strict: bool) -> tuple[str, str] | None:
    """``(field, rule)`` of the first rule of the solution document broken, else None.

    ``error`` is the document's message (None: there is none). Every document with status
    ``"error"`` carries one; balance-opt writes one only there (``strict``), while a file
    from elsewhere may keep a message beside another status.
    """
    broken = contradiction(claims)
    if broken is not None:
        return broken
    if claims.status == Status.ERROR and error is None:
        return "error", 'is required when status is "error"'
    if strict and error is not None and claims.status != Status.ERROR:
        return "error", 'goes only with status "error"'
    return None


def recorded_options(options: Mapping[str, Any], seed: int, time_limit_s: float | None) -> dict[str, Any]:
    """The ``options`` a solution records: the solver's options, the seed, the time limit if any."""
    out = {**options, "seed": seed}
    if time_limit_s is not None:
        out["time_limit_s"] = time_limit_s
    return out


# --- any solution file ----------------------------------------------------------------


def check_solution_dict(doc: Any, source: str = "<solution>", inst: Instance | None = None) -> dict[str, Any]:
    """Validate a solution document (and, given the instance, its assignment's user ids).

    Required: ``schema``, ``version``, ``z``, ``assignment`` and ``instance`` or
    ``instance_sha256``; every other field is optional (an outside tool need not write
    them), but a field that is present must follow its rule.
    """
    c = Checker(source)
    check_header(c, doc, SOLUTION_SCHEMA)
    if "instance" not in doc and "instance_sha256" not in doc:
        raise c.fail("instance", "is required when instance_sha256 is missing (one must name the instance)")
    if "instance" in doc:
        c.name(doc, "instance", "")
    if "instance_sha256" in doc:
        sha = c.string(doc, "instance_sha256", "")
        if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
            raise c.fail("instance_sha256", f"must be 64 lowercase hex digits, got {_show(sha)}")
    _check_optional_claims(c, doc)
    c.value(doc, "z", "", UNIT)
    if doc.get("lambda") is not None:
        c.value(doc, "lambda", "", Rule("in [0, 1] or null", UNIT.ok))
    assignment = c.obj(doc, "assignment", "")
    for uid, mode in assignment.items():
        if not isinstance(mode, str) or mode not in MODE_CODES:  # a list is unhashable
            raise c.fail(f"assignment.{uid}", f'must be "ad", "sd" or "none", got {_show(mode)}')
    if inst is not None:
        missing = [u for u in inst.user_ids if u not in assignment]
        if missing:
            raise c.fail("assignment", f"must give every user a mode; missing {missing[:5]}")
        extra = [u for u in assignment if u not in set(inst.user_ids)]
        if extra:
            raise c.fail("assignment", f"names users the instance does not have: {extra[:5]}")
    return dict(doc)


def _check_optional_claims(c: Checker, doc: Mapping[str, Any]) -> None:
    """The rules of the optional fields that are present (solver, status, served, bound, ...)."""
    if "solver" in doc:
        c.name(doc, "solver", "")
    if "options" in doc:
        c.obj(doc, "options", "")
    for key, kind in (("status", Status), ("termination", Termination)):
        if key in doc and doc[key] not in kind.__members__.values():
            raise c.fail(key, f"must be one of {', '.join(kind)}, got {_show(doc[key])}")
    if "served" in doc:
        c.value(doc, "served", "", _COUNT0)
    if doc.get("bound") is not None:
        c.value(doc, "bound", "", _COUNT0)
    if "runtime_s" in doc:
        c.value(doc, "runtime_s", "", NON_NEGATIVE)
    if "feasible" in doc and not isinstance(doc["feasible"], bool):
        raise c.fail("feasible", f"must be true or false, got {_show(doc['feasible'])}")
    claims = Claims.of_document(doc)
    broken = broken_rule(claims, doc.get("error"), strict=False)
    if broken is not None:
        raise c.fail(*broken)
    if claims.status == Status.ERROR:
        c.string(doc, "error", "")


def read_solution(path: str | Path, inst: Instance | None = None) -> dict[str, Any]:
    """Read and validate a solution file, as a dict (:meth:`SolutionFile.read` gives the record)."""
    return check_solution_dict(parse_json(read_bytes(path), str(path)), str(path), inst)


@dataclass(frozen=True)
class SolutionFile:
    """Any solution file, typed: the required fields, and each optional one None where absent.

    The reader of files from elsewhere (``check``, the library's stored schedules), which
    may hold no more than ``z``, ``assignment`` and the instance's name or digest; a file
    balance-opt wrote reads whole as a :class:`Solution`.
    """

    z: float
    assignment: Mapping[str, str]
    instance: str | None = None
    instance_sha256: str | None = None
    solver: str | None = None
    status: Status | None = None
    served: int | None = None
    bound: int | None = None
    bound_given: bool = False  # a ``bound`` field is present (null: no bound proved)
    feasible: bool | None = None
    error: str | None = None

    def claims(self) -> Claims:
        """What the file claims; absent fields claim nothing."""
        return Claims(self.served, self.feasible, self.status, self.bound, self.bound_given)

    @classmethod
    def from_dict(cls, doc: Any, source: str = "<solution>", inst: Instance | None = None) -> SolutionFile:
        """Check ``doc`` (:func:`check_solution_dict`, with the instance's user ids if given) and type it."""
        doc = check_solution_dict(doc, source, inst)
        claims = Claims.of_document(doc)
        status = None if claims.status is None else Status(claims.status)
        optional = {k: doc.get(k) for k in ("instance", "instance_sha256", "solver", "error")}
        return cls(
            doc["z"], doc["assignment"], **optional, status=status, served=claims.served,
            bound=claims.bound, bound_given=claims.bound_given, feasible=claims.feasible,
        )  # fmt: skip

    @classmethod
    def read(cls, path: str | Path, inst: Instance | None = None) -> SolutionFile:
        """Read and check a solution file (InputError when it is not one)."""
        return cls.from_dict(parse_json(read_bytes(path), str(path)), str(path), inst)


# --- the document balance-opt writes ----------------------------------------------------


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
_WHEN_GIVEN = ("termination", "error", "stats", "run")  # written only when set (stats: not empty)


@dataclass(frozen=True)
class Solution:
    """A solution document as balance-opt writes it: every field, in file order (docs/formats.md).

    ``feasible`` and ``served`` are the evaluator's (:class:`~balance_opt.result.Result`
    builds one with :meth:`~balance_opt.result.Result.solution`). A record that breaks
    :func:`broken_rule` cannot be made (ValueError).

    A new field of the document is one attribute here, in its place in the file order: the
    writer and the typed reader follow the attributes (``_KEYS`` names those whose file name
    differs, ``_WHEN_GIVEN`` those left out while unset); its value rule goes in
    :func:`check_solution_dict`, its column (if any) in :mod:`balance_opt.batch.table`.
    """

    instance: str
    instance_sha256: str
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

    def claims(self) -> Claims:
        """What the document claims (compared with the evaluator by :mod:`balance_opt.claims`)."""
        return Claims(self.served, self.feasible, self.status, self.bound, bound_given=True)

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
            if not f.init:
                continue  # derived (work)
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
            if not f.init:
                continue  # derived (work)
            if f.name not in _WHEN_GIVEN:
                values[f.name] = c.get(doc, key, "")
            elif key in doc:
                values[f.name] = doc[key]
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
        """One human line (``solve`` without ``--out``): instance, configuration, status, served of K."""
        run = self.run
        label = f"{self.instance} {self.solver if run is None else run.config}"
        return summary_line(self, label, None if run is None else run.users)


class Summarised(Protocol):
    """The fields a one-line summary shows (a :class:`Solution`, a :class:`~balance_opt.result.Result`)."""

    @property
    def status(self) -> Status: ...
    @property
    def served(self) -> int: ...
    @property
    def bound(self) -> int | None: ...
    @property
    def z(self) -> float: ...
    @property
    def lam(self) -> float | None: ...
    @property
    def feasible(self) -> bool: ...
    @property
    def runtime_s(self) -> float: ...
    @property
    def error(self) -> str | None: ...


def summary_line(sol: Summarised, label: str, users: int | None = None) -> str:
    """The one-line summary of a solve: status, served (of K), bound, z, lambda, verdict, runtime."""
    bound = "" if sol.bound is None else f" bound={sol.bound}"
    lam = "" if sol.lam is None else f" lambda={sol.lam:g}"
    of = f"/{users}" if users else ""
    tail = f" ({sol.error})" if sol.error else ""
    return (
        f"{label}: {sol.status} served={sol.served}{of}{bound} z={sol.z:g}{lam} "
        f"feasible={str(sol.feasible).lower()} {sol.runtime_s:.3f}s{tail}"
    )
