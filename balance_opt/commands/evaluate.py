"""``balance-opt evaluate``: re-check a schedule with the project's evaluator.

Prints the latency breakdown per mode, every user's completion and slack, the memory
breakdown and the violations; ``--json`` prints :meth:`Evaluation.to_dict` instead.
``--compare-modes`` puts "everybody in AD at z = 1" beside "everybody in SD at z = 0"
(the paper's Fig. 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from balance_opt.evaluator import Evaluation, Schedule
    from balance_opt.instance import Instance
    from balance_opt.mode_comparison import ModeComparison
    from balance_opt.solution_checks import SolutionFile


def register(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="re-check a solution: latencies, memory, violations",
        description="Evaluate a schedule of INSTANCE: from a SOLUTION file, from --z and --assign, "
        "or, with --compare-modes, all users in AD at z=1 against all users in SD at z=0. A SOLUTION "
        "must name INSTANCE (instance_sha256, else instance). Exit status 0 when the evaluation is "
        "printed, feasible or not (1 for an infeasible schedule or a refuted claim with "
        "--fail-on-infeasible); 2 on bad input.",
    )
    p.add_argument("instance", type=Path, metavar="INSTANCE", help="instance file")
    p.add_argument("solution", type=Path, nargs="?", metavar="SOLUTION", help="solution file")
    p.add_argument(
        "--z", type=float, help="compute fraction of AD, instead of a solution file (default: not set)"
    )
    p.add_argument(
        "--assign",
        metavar="ID=MODE,...",
        help="modes ad|sd|none by user id with --z, e.g. u0=ad,u1=sd (default: a user not named is none)",
    )
    p.add_argument("--compare-modes", action="store_true", help="all-AD at z=1 vs all-SD at z=0")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--fail-on-infeasible",
        action="store_true",
        help="exit with status 1 when the schedule is infeasible or the solution file claims what the "
        "evaluator refutes (default: exit 0 whenever the evaluation is printed)",
    )
    p.add_argument(
        "--other-instance",
        action="store_true",
        help="evaluate a solution on INSTANCE although it names another instance (same user ids); "
        "without it that is bad input (exit status 2)",
    )
    p.set_defaults(func=handle)


def parse_assign(inst: Instance, text: str) -> dict[str, str]:
    """``u0=ad,u1=sd`` -> a full assignment (unnamed users: none)."""
    from balance_opt.errors import UsageError
    from balance_opt.model import MODE_CODES

    out = dict.fromkeys(inst.user_ids, "none")
    given: set[str] = set()
    for item in filter(None, (t.strip() for t in text.split(","))):
        uid, sep, mode = item.partition("=")
        if not sep or mode not in MODE_CODES:
            raise UsageError(f"--assign: expected ID=ad|sd|none, got {item!r}")
        if uid not in out:
            raise UsageError(f"--assign: the instance has no user {uid!r}")
        if uid in given:
            raise UsageError(f"--assign: user {uid!r} is given twice")
        given.add(uid)
        out[uid] = mode
    return out


@dataclass(frozen=True)
class Source:
    """The solution file a schedule came from: what it claims, and whether it names the instance."""

    path: str
    file: SolutionFile  # the checked file, typed
    instance_sha256_matches: bool | None  # None: the file gives no digest

    def json_fields(self, mismatches: list[str]) -> dict[str, Any]:
        """What ``--json`` adds about the file, after the evaluation's own fields."""
        f = self.file
        return {
            "solution": self.path,
            "solver": f.solver,
            "status": None if f.status is None else str(f.status),
            "instance_sha256_matches": self.instance_sha256_matches,
            "claimed_served": f.served,
            "claimed_feasible": f.feasible,
            "claim_mismatches": mismatches,
        }


def _schedule(args: argparse.Namespace, inst: Instance) -> tuple[Schedule, Source | None]:
    """The schedule to evaluate and, when it comes from a file, that file."""
    from balance_opt.errors import UsageError
    from balance_opt.evaluator import Schedule
    from balance_opt.io import read_bytes, read_solution, sha256_bytes
    from balance_opt.solution_checks import SolutionFile

    if args.solution is not None:
        if args.z is not None or args.assign is not None:
            raise UsageError("give either a SOLUTION file or --z/--assign, not both")
        sol = read_solution(args.solution)
        data = read_bytes(args.instance)
        if not args.other_instance:
            _same_instance(sol, str(args.solution), inst, data, str(args.instance))
        # the user ids, once the instance is right
        sol = SolutionFile.from_dict(sol.document, str(args.solution), inst)
        sha = sol.instance_sha256
        matches = None if sha is None else sha == sha256_bytes(data)
        schedule = Schedule.from_assignment(inst, sol.z, sol.assignment)
        return schedule, Source(str(args.solution), sol, matches)
    if args.other_instance:
        raise UsageError("--other-instance goes with a SOLUTION file")
    if args.z is None:
        raise UsageError("give a SOLUTION file, --z Z (with --assign) or --compare-modes")
    if not 0.0 <= args.z <= 1.0:
        raise UsageError(f"--z must be in [0, 1], got {args.z!r}")
    assignment = parse_assign(inst, args.assign or "")
    return Schedule.from_assignment(inst, args.z, assignment), None


def _same_instance(sol: SolutionFile, source: str, inst: Instance, data: bytes, where: str) -> None:
    """Bad input unless the solution names ``inst`` (checked before its user ids, to say why)."""
    from balance_opt.errors import InputError
    from balance_opt.io import sha256_bytes

    other = sol.other_instance(inst.name, sha256_bytes(data), where)
    if other is not None:
        raise InputError(source, other[0], other[1] + " (--other-instance evaluates it anyway)")


def handle(args: argparse.Namespace) -> int:
    from balance_opt.errors import UsageError
    from balance_opt.evaluator import evaluate
    from balance_opt.io import read_instance

    inst = read_instance(args.instance)
    if args.compare_modes:
        if args.solution is not None or args.z is not None or args.assign is not None:
            raise UsageError("--compare-modes takes only INSTANCE")
        if args.fail_on_infeasible or args.other_instance:
            raise UsageError("--compare-modes takes no --fail-on-infeasible or --other-instance")
        return compare_modes(inst, args.json)
    schedule, source = _schedule(args, inst)
    ev = evaluate(inst, schedule)
    refuted = [] if source is None else _warn_about_claims(args, inst, source, ev)
    if args.json:
        doc = ev.to_dict(inst)
        doc["instance"] = inst.name
        assignment = schedule.assignment(inst)
        for user in doc["users"]:
            user["mode"] = assignment[user["id"]]
        doc["assignment"] = assignment
        if source is not None:
            doc.update(source.json_fields(refuted))
        print(json.dumps(doc, allow_nan=False))
    else:
        print(format_evaluation(inst, schedule, ev))
    failed = not ev.feasible or bool(refuted)
    return 1 if args.fail_on_infeasible and failed else 0


def _warn_about_claims(args: argparse.Namespace, inst: Instance, source: Source, ev: Evaluation) -> list[str]:
    """The claims the evaluator refutes, each also a warning on standard error, after those
    about a solution that names another instance."""
    from balance_opt.claims import mismatches

    sol = source.file
    warnings = []
    if source.instance_sha256_matches is False:
        warnings.append(f"instance_sha256 does not match {args.instance}")
    if sol.instance is not None and sol.instance != inst.name:
        warnings.append(f"names instance {sol.instance!r}, but {args.instance} is {inst.name!r}")
    found = mismatches(sol.claims(), ev)
    for w in [*warnings, *(("FALSE PROOF: " if m.false_proof else "") + m.message for m in found)]:
        print(f"balance-opt evaluate: warning: {args.solution}: {w}", file=sys.stderr)
    return [m.message for m in found]


def _fmt(x: float | None, spec: str = ".6f") -> str:
    return "-" if x is None else format(x, spec)


def format_evaluation(inst: Instance, schedule: Schedule, ev: Evaluation) -> str:
    """The human-readable report of one evaluation."""
    from balance_opt.evaluator import MODE_NAMES

    k = inst.num_users
    lines = [
        f"instance {inst.name} (K={k}), z={ev.z:g}: "
        f"{'feasible' if ev.feasible else 'INFEASIBLE'}, served {ev.served}/{k} "
        f"(AD {ev.num_ad}, SD {ev.num_sd})",
        "",
        f"{'latency (s, excl. download)':<30}{'AD':>16}{'SD':>16}",
    ]
    for label, attr in (("upload", "upload_s"), ("compute", "compute_s"), ("fixed passes", "fixed_s")):
        a = getattr(ev.ad, attr) if ev.ad.latency_s is not None else None
        s = getattr(ev.sd, attr) if ev.sd.latency_s is not None else None
        lines.append(f"  {label:<28}{_fmt(a):>16}{_fmt(s):>16}")
    lines.append(f"  {'total (t_ad, t_sd)':<28}{_fmt(ev.t_ad):>16}{_fmt(ev.t_sd):>16}")
    lines += ["", "memory (bytes)"]
    for label, value in (
        ("weights LLM", ev.weights_llm_bytes),
        ("weights SLM", ev.weights_slm_bytes),
        ("KV cache AD", ev.ad.kv_bytes),
        ("KV cache SD", ev.sd.kv_bytes),
        ("total", ev.memory_bytes),
        ("capacity", inst.server.memory_bytes),
        ("free", ev.free_bytes),
    ):
        lines.append(f"  {label:<28}{value:>20.1f}")
    lines += ["", f"  {'user':<12}{'mode':>6}{'completion_s':>16}{'deadline_s':>14}{'slack_s':>14}"]
    modes = schedule.modes.tolist()
    for i, uid in enumerate(inst.user_ids):
        served = modes[i] != 0
        c = float(ev.completion_s[i]) if served else None
        sl = float(ev.slack_s[i]) if served else None
        deadline = float(inst.deadline_s[i])
        lines.append(f"  {uid:<12}{MODE_NAMES[modes[i]]:>6}{_fmt(c):>16}{deadline:>14.6f}{_fmt(sl):>14}")
    lines.append("")
    lines.append("violations: " + ("none" if not ev.violations else f"{len(ev.violations)}"))
    lines += [f"  - {v}" for v in ev.violations]
    return "\n".join(lines)


def compare_modes(inst: Instance, as_json: bool) -> int:
    """All users in AD at z = 1 against all in SD at z = 0 (Fig. 1 of the paper)."""
    from balance_opt.mode_comparison import compare_modes as compare

    cmp = compare(inst)
    print(json.dumps(_comparison_doc(inst, cmp), allow_nan=False) if as_json else _comparison_text(inst, cmp))
    return 0


def _comparison_doc(inst: Instance, cmp: ModeComparison) -> dict[str, Any]:
    ad, sd = cmp.ad, cmp.sd
    return {
        "instance": inst.name,
        "ad": {
            "z": 1.0,
            "latency_s": ad.t_ad,
            "completion_s": cmp.e2e_ad_s,
            "memory_bytes": ad.memory_bytes,
            "kv_bytes": ad.ad.kv_bytes,
            "feasible": ad.feasible,
        },
        "sd": {
            "z": 0.0,
            "latency_s": sd.t_sd,
            "completion_s": cmp.e2e_sd_s,
            "memory_bytes": sd.memory_bytes,
            "kv_bytes": sd.sd.kv_bytes,
            "feasible": sd.feasible,
        },
        "sd_more_memory_pct": cmp.sd_more_memory_pct,
        "sd_less_latency_pct": cmp.sd_less_latency_pct,
    }


def _comparison_text(inst: Instance, cmp: ModeComparison) -> str:
    ad, sd = cmp.ad, cmp.sd
    rows = (
        ("latency excl. download (s)", _fmt(ad.t_ad), _fmt(sd.t_sd)),
        ("end-to-end, last user (s)", _fmt(cmp.e2e_ad_s), _fmt(cmp.e2e_sd_s)),
        ("memory total (bytes)", f"{ad.memory_bytes:.1f}", f"{sd.memory_bytes:.1f}"),
        (
            "  weights (bytes)",
            f"{ad.weights_llm_bytes + ad.weights_slm_bytes:.1f}",
            f"{sd.weights_llm_bytes + sd.weights_slm_bytes:.1f}",
        ),
        ("  KV cache (bytes)", f"{ad.ad.kv_bytes:.1f}", f"{sd.sd.kv_bytes:.1f}"),
        ("feasible", str(ad.feasible), str(sd.feasible)),
    )
    lines = [
        f"instance {inst.name} (K={inst.num_users}): all users in AD at z=1 vs all in SD at z=0",
        "",
        f"{'':<30}{'AD (z=1)':>22}{'SD (z=0)':>22}",
    ]
    lines += [f"{a:<30}{b:>22}{c:>22}" for a, b, c in rows]
    lines += [
        "",
        f"SD needs {cmp.sd_more_memory_pct:.1f}% more memory than AD",
        f"SD has {cmp.sd_less_latency_pct:.1f}% less end-to-end latency than AD",
    ]
    return "\n".join(lines)
