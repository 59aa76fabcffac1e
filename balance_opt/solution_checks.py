"""The rules of any solution file (docs/formats.md) and its reader.

:func:`check_solution_dict` accepts any solution document, down to the five required
fields an outside tool writes; :func:`read_solution` reads such a file as a
:class:`SolutionFile`, a record with None where a field is absent. The document
balance-opt writes, every field typed, is :class:`~balance_opt.solution.Solution`.

The document's rules are stated once, in :func:`broken_rule`: an ``error`` message goes
with status ``"error"``, and the claims do not contradict each other
(:func:`~balance_opt.claims.contradiction`: an error serves 0, ``optimal`` has bound =
served). Claims against the evaluator are :mod:`balance_opt.claims`' business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.claims import Claims, contradiction, instance_mismatch
from balance_opt.files import Checker, check_header, parse_json, read_bytes
from balance_opt.instance import NON_NEGATIVE, UNIT, Instance, Rule
from balance_opt.instance import show_value as _show
from balance_opt.model import MODE_CODES
from balance_opt.status import Status, Termination

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


def read_solution(path: str | Path, inst: Instance | None = None) -> SolutionFile:
    """Read and check any solution file (and, given the instance, its user ids), typed.

    The same as :meth:`SolutionFile.read`; the validated document is its ``document``.
    """
    return SolutionFile.read(path, inst)


@dataclass(frozen=True)
class SolutionFile:
    """Any solution file, typed: the required fields, and each optional one None where absent.

    The reader of files from elsewhere (``check``, ``evaluate``, ``simulate``, the library's
    stored schedules), which may hold no more than ``z``, ``assignment`` and the instance's
    name or digest; a file balance-opt wrote also reads whole as a
    :class:`~balance_opt.solution.Solution`. ``document`` is the checked document itself,
    for the fields no record names (``stats``, ``run``, an outside tool's own).
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
    lam: float | None = None
    runtime_s: float | None = None
    termination: Termination | None = None
    document: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def claims(self) -> Claims:
        """What the file claims; absent fields claim nothing."""
        return Claims(self.served, self.feasible, self.status, self.bound, self.bound_given)

    def other_instance(self, name: str, sha256: str, where: str) -> tuple[str, str] | None:
        """``(field, rule)`` when the file names another instance than ``where`` (see
        :func:`~balance_opt.claims.instance_mismatch`), else None."""
        return instance_mismatch(self.instance, self.instance_sha256, name, sha256, where)

    @classmethod
    def from_dict(cls, doc: Any, source: str = "<solution>", inst: Instance | None = None) -> SolutionFile:
        """Check ``doc`` (:func:`check_solution_dict`, with the instance's user ids if given) and type it."""
        doc = check_solution_dict(doc, source, inst)
        claims = Claims.of_document(doc)
        status = None if claims.status is None else Status(claims.status)
        termination = None if doc.get("termination") is None else Termination(doc["termination"])
        optional = {k: doc.get(k) for k in ("instance", "instance_sha256", "solver", "error", "runtime_s")}
        return cls(
            doc["z"], doc["assignment"], **optional, status=status, served=claims.served,
            bound=claims.bound, bound_given=claims.bound_given, feasible=claims.feasible,
            lam=doc.get("lambda"), termination=termination, document=doc,
        )  # fmt: skip

    @classmethod
    def read(cls, path: str | Path, inst: Instance | None = None) -> SolutionFile:
        """Read and check a solution file (InputError when it is not one)."""
        return cls.from_dict(parse_json(read_bytes(path), str(path)), str(path), inst)
