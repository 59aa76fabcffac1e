"""The README of a library set: how its instances were made and how its references were computed.

Written by ``library generate`` and rewritten by ``library refs`` from the set definition
and the set's ledger, so the text never disagrees with the files beside it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from balance_opt.io import atomic_write
from balance_opt.library.reference import EASY_SECONDS, read_ledger, read_reference
from balance_opt.library.sets import GENERATE_COMMAND, LibrarySet

COLUMNS_TEXT = """\
| column | meaning |
|---|---|
| `instance` | file stem (also the instance's `name`) |
| `sha256` | SHA-256 of the instance file's bytes |
| `K` | number of users |
| `status` | `optimal` when a tested exact method proved `bound == best_known` (or all served), else `open` |
| `best_known` | served users of the best feasible schedule known (the evaluator's count) |
| `bound` | best proved upper bound; `K` (trivial) when no solver proved one |
| `class` | `easy`: optimal, fastest proof within {easy:g} s; `hard`: optimal, slower; `open` |
| `proofs` | the number of independent proofs of `best_known`: the solvers in `proved_by` |
| `proved_by` | exact methods whose proved bound is `best_known`, with their fastest times (or `all-served`) |
| `bound_by` | the solver that proved `bound` (`trivial` for `K`) |
| `best_by` | the solver that found the stored schedule |
| `solution` | the stored best schedule, relative to this folder |
| `balance` ... `ecrma` | served users of each heuristic of the suite |
"""


def _attempts_text(ledger: Sequence[Mapping[str, str]]) -> list[str]:
    groups: dict[tuple[str, str], list[Mapping[str, str]]] = defaultdict(list)
    for row in ledger:
        groups[row["config"], row["time_limit_s"]].append(row)
    lines = [
        "| solver configuration | time limit (s) | instances | statuses | total seconds |",
        "|---|---|---|---|---|",
    ]
    for (config, limit), rows in sorted(groups.items()):
        statuses = Counter(r["status"] for r in rows)
        text = ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()))
        seconds = sum(float(r["runtime_s"]) for r in rows)
        lines.append(f"| `{config}` | {limit or '-'} | {len(rows)} | {text} | {seconds:.1f} |")
    return lines


def _found_text(lib: LibrarySet) -> list[str]:
    """The found instances and the command that wrote each (its ``worst.json``, copied here)."""
    if not lib.found:
        return []
    return [
        f"{len(lib.found)} more instance(s) were found by a search, not written by `library generate`: "
        "each is the `worst.json` of the command beside it (the same command writes the same bytes; "
        "docs/worst-case.md), copied here as `<instance>.json`:",
        "",
        *(f"- `{f.stem}`: `{f.command}`" for f in lib.found),
        "",
    ]


def readme_text(lib: LibrarySet, folder: Path, commands: Sequence[str] = ()) -> str:
    """The README of ``lib`` as stored in ``folder`` (its ledger and reference, when present)."""
    seeds = ", ".join(map(str, lib.seeds))
    lines = [
        f"# Library set `{lib.name}`",
        "",
        f"{lib.title}.",
        "",
        "## Instances",
        "",
        f"Written by `{GENERATE_COMMAND}` (every set; `--set {lib.name}` for this one alone); "
        "the same command writes the same bytes.",
        "",
        *(f"- {part.describe()}" for part in lib.parts),
        f"- seeds {seeds} at every point ({len(lib.stems()) - len(lib.found)} files)",
        "- units as in the instance format: seconds, bytes, tokens, Hz; every file records its "
        "generator parameters, seed and RNG under `generator`",
        "",
        *_found_text(lib),
    ]
    lines += [
        "## References (`reference.csv`)",
        "",
        COLUMNS_TEXT.format(easy=EASY_SECONDS),
    ]
    ref = read_reference(folder)
    if ref:
        statuses = Counter(r["status"] for r in ref.values())
        classes = Counter(r["class"] for r in ref.values())
        trivial = sum(r["status"] != "optimal" and r["bound"] == r["K"] for r in ref.values())
        proofs = Counter(min(int(r.get("proofs") or 0), 2) for r in ref.values() if r["status"] == "optimal")
        lines += [
            f"Now: {', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))} "
            f"({', '.join(f'{n} {c}' for c, n in sorted(classes.items()))}); "
            f"of the optimal ones, {proofs[1]} proved by one exact method and {proofs[2]} by two or more "
            f"(`proofs`); {trivial} instance(s) have only the trivial bound K (no solver has proved a "
            "smaller one yet).",
            "",
        ]
    ledger = read_ledger(folder)
    lines += [
        "The references are computed with `balance-opt library refs` (resumable; see "
        "docs/library.md). Every solve so far (`attempts.csv`; times are wall seconds on a "
        "shared 2-core machine, noisy):",
        "",
        *(_attempts_text(ledger) if ledger else ["(none yet)"]),
        "",
    ]
    if commands:
        lines += ["Commands run:", "", "```sh", *commands, "```", ""]
    return "\n".join(lines)


def write_readme(lib: LibrarySet, folder: Path, commands: Sequence[str] = ()) -> Path:
    return atomic_write(folder / "README.md", readme_text(lib, folder, commands))


def commands_of(folder: Path) -> list[str]:
    """The commands listed in an existing README (kept when it is rewritten)."""
    path = folder / "README.md"
    if not path.exists():
        return []
    text = path.read_text().split("Commands run:", 1)
    if len(text) < 2:
        return []
    block = text[1].split("```sh", 1)[-1].split("```", 1)[0]
    return [line for line in block.strip().splitlines() if line.strip()]


def remember(folder: Path, command: str) -> list[str]:
    """The README's commands with ``command`` appended once."""
    known = commands_of(folder)
    return known if command in known else [*known, command]
