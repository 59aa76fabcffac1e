"""What a solution file claims about its schedule, compared with the evaluator's verdict.

Only claims that are present are compared (outside tools may write none): ``served``,
``feasible``, ``status`` (a schedule claimed ``optimal`` or ``feasible`` must be
feasible) and ``bound`` (a proved bound below the schedule's own served count is false).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from balance_opt.evaluate import Evaluation
from balance_opt.status import SOLVED, Status


def claim_mismatches(doc: Mapping[str, Any], ev: Evaluation) -> list[str]:
    """One line per claim of ``doc`` that the evaluation ``ev`` does not confirm."""
    out: list[str] = []
    status = doc.get("status")
    # ``served`` counts the users given a mode, as the evaluator does, feasible or not.
    if "served" in doc and status != Status.ERROR and doc["served"] != ev.served:
        out.append(f"claims served {doc['served']}, the evaluator counts {ev.served}")
    if "feasible" in doc and doc["feasible"] != ev.feasible:
        out.append(
            f"claims feasible {str(doc['feasible']).lower()}, the evaluator says {str(ev.feasible).lower()}"
        )
    if status in SOLVED and not ev.feasible:
        out.append(f'claims status "{status}", but the evaluator rejects the schedule')
    bound = doc.get("bound")
    if isinstance(bound, int) and not isinstance(bound, bool) and ev.feasible and bound < ev.served:
        out.append(f"claims a proved bound {bound} below its own {ev.served} served users")
    return out
