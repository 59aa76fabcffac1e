"""The one claims checker: what a solution says about its schedule, against the evidence.

A solver's objective, a solution file's ``served`` / ``feasible`` / ``status`` / ``bound``
are claims; the evaluator's verdict (and, for ``check``, a feasible schedule the library
holds) is the evidence. Every user of claims goes through here:
:func:`~balance_opt.result.make_result` (a solver's claims), the solution reader
(claims that contradict each other make a malformed file), ``validate``, ``evaluate`` and
``check`` (a file's claims against the evaluator and the library).

Only claims that are made are compared (an outside tool may make none):

- ``served``: the users given a mode, feasible or not, as the evaluator counts them
  (not compared when ``status`` is ``"error"``, whose ``served`` is 0);
- ``feasible``: the evaluator's verdict;
- ``status``: ``"optimal"`` and ``"feasible"`` claim a feasible schedule; ``"optimal"``
  also claims that no schedule serves more, so a known better schedule refutes it, as does
  the claim's own bound above the served count;
- ``bound``: a proved upper bound on P1's optimum, refuted by any feasible schedule that
  serves more, the file's own or a known one.

A refuted optimality claim or bound is a *false proof*, the worst claim a solver can make:
callers report it loudly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from balance_opt.status import SOLVED, Status, Termination


class Judged(Protocol):
    """What the evaluator found (:class:`~balance_opt.evaluator.Evaluation` has these)."""

    @property
    def feasible(self) -> bool: ...
    @property
    def served(self) -> int: ...
    @property
    def violations(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Claims:
    """A schedule's claims; None where nothing is claimed."""

    served: int | None = None
    feasible: bool | None = None
    status: str | None = None
    bound: int | None = None
    bound_given: bool = False  # a ``bound`` field is present (null means "no bound proved")

    @classmethod
    def of_document(cls, doc: Mapping[str, Any]) -> Claims:
        """The claims of a solution document (docs/formats.md); fields absent are not claimed."""
        bound = doc.get("bound")
        return cls(
            served=doc.get("served"),
            feasible=doc.get("feasible"),
            status=doc.get("status"),
            bound=bound if isinstance(bound, int) and not isinstance(bound, bool) else None,
            bound_given="bound" in doc,
        )

    @classmethod
    def of_solver(cls, objective: int | None, bound: int | None, termination: Termination) -> Claims:
        """What a solver claims by returning: a feasible schedule, its objective, its bound, optimality."""
        optimal = termination == Termination.OPTIMAL
        return cls(
            served=objective,
            feasible=True,
            status=Status.OPTIMAL if optimal else None,
            bound=bound,
            bound_given=bound is not None,
        )


@dataclass(frozen=True)
class Known:
    """A feasible schedule known from elsewhere: its served count and where it is kept."""

    served: int
    where: str  # e.g. "the library's fig4a/k-20-s0001"


@dataclass(frozen=True)
class Mismatch:
    """One claim that the evidence refutes."""

    claim: str  # "served", "feasible", "status" or "bound"
    message: str  # "claims ...": the subject (the file, the solver) is the caller's
    false_proof: bool = False  # an optimality claim or bound that a feasible schedule refutes

    def __str__(self) -> str:
        return self.message


def contradiction(claims: Claims) -> tuple[str, str] | None:
    """``(field, rule)`` when two claims contradict each other, else None.

    No evaluation is needed to see these; a solution file holding one is malformed.
    """
    if claims.status == Status.ERROR and claims.served not in (None, 0):
        return "served", f'must be 0 when status is "error", got {claims.served}'
    optimal = claims.status == Status.OPTIMAL
    if optimal and claims.served is not None and claims.bound_given and claims.bound != claims.served:
        bound = "null" if claims.bound is None else claims.bound
        return "bound", f'must equal served ({claims.served}) when status is "optimal", got {bound}'
    return None


def instance_mismatch(
    claimed: str | None, claimed_sha: str | None, name: str, sha256: str, where: str
) -> tuple[str, str] | None:
    """``(field, rule)`` when a solution naming ``claimed`` (its ``instance``, None if
    absent) with ``claimed_sha`` (its ``instance_sha256``) names another instance than ``name``.

    The instance is the file ``where`` with digest ``sha256``. ``instance_sha256``, when
    present, decides (docs/formats.md); else ``instance`` must be the name. The rule says
    which instance the solution names.
    """
    if claimed_sha is not None and claimed_sha != sha256:
        named = (
            f"instance {claimed!r}"
            if claimed is not None
            else f"an instance with digest {claimed_sha[:12]}..."
        )
        return "instance_sha256", f"names {named}, not the bytes of {where} ({name!r})"
    if claimed_sha is None and claimed != name:
        return "instance", f"names instance {claimed!r}, but {where} is {name!r}"
    return None


def first_violation(ev: Judged) -> str:
    """The first violated rule in the evaluator's words, and how many others there are."""
    if not ev.violations:
        return "no violation"
    more = len(ev.violations) - 1
    return ev.violations[0] + (f" (and {more} more violation{'s' * (more > 1)})" if more else "")


def mismatches(claims: Claims, ev: Judged, known: Known | None = None) -> list[Mismatch]:
    """Every claim that the evaluation ``ev`` (or the ``known`` feasible schedule) refutes."""
    out: list[Mismatch] = []
    if claims.served is not None and claims.status != Status.ERROR and claims.served != ev.served:
        out.append(Mismatch("served", f"claims served {claims.served}, the evaluator counts {ev.served}"))
    if claims.feasible is not None and claims.feasible != ev.feasible:
        why = (
            f"the schedule is infeasible: {first_violation(ev)}"
            if claims.feasible
            else "the evaluator accepts it"
        )
        out.append(Mismatch("feasible", f"claims feasible {str(claims.feasible).lower()}, but {why}"))
    if claims.status in SOLVED and not ev.feasible:
        out.append(
            Mismatch(
                "status",
                f'claims status "{claims.status}", but the schedule is infeasible: {first_violation(ev)}',
            )
        )
    out += _false_proofs(claims, ev, known)
    return out


def _false_proofs(claims: Claims, ev: Judged, known: Known | None) -> list[Mismatch]:
    """An optimality claim or a bound that a feasible schedule serving more refutes."""
    out: list[Mismatch] = []
    own = ev.served if ev.feasible else None
    bound = claims.bound
    if bound is not None and own is not None and bound < own:
        out.append(Mismatch("bound", f"claims a proved bound {bound} below its own {own} served users", True))
    elif bound is not None and known is not None and bound < known.served:
        out.append(
            Mismatch(
                "bound",
                f"claims a proved bound {bound}, but {known.where} holds a feasible schedule "
                f"serving {known.served}",
                True,
            )
        )
    if claims.status != Status.OPTIMAL or own is None:
        return out
    if known is not None and known.served > own:  # the stronger evidence first: a schedule
        out.append(
            Mismatch(
                "status",
                f'claims status "optimal" serving {own}, but {known.where} holds a feasible schedule '
                f"serving {known.served}",
                True,
            )
        )
    elif bound is not None and bound > own:
        out.append(
            Mismatch(
                "status", f'claims status "optimal" with bound {bound}, but the schedule serves {own}', True
            )
        )
    return out
