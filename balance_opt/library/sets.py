"""The library's instance sets: the paper's experiment sweeps and sets past the paper.

A paper set is the sweep of one figure (:data:`balance_opt.batch.experiments.EXPERIMENTS`), so
its instance files are byte for byte those ``balance-opt experiment`` writes for the same
seeds. Sets past the paper are sweeps of K over several presets at once, with a memory
override where the preset has none. Every set is written by :func:`write_library`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from balance_opt.batch.experiments import EXPERIMENTS, SWEEPS, Sweep, instance_stem
from balance_opt.families import TIGHT, generate_any
from balance_opt.generator import PRESETS
from balance_opt.io import atomic_write, instance_bytes
from balance_opt.library.found import ADVERSARY_FINDS, Found

LIBRARY_SEEDS = (1, 2, 3, 4, 5)
GENERATE_COMMAND = "balance-opt library generate instances/paper"
LARGE_K = (100, 150, 200)
# Past the paper's sizes (docs/exact.md): one seed per point, references as proved so far.
HUGE_K = (300, 500, 1000)
# The theorem1-tight family: m = 1, 2, 3, 5, 10, 25, 50 and 95, the largest m the model allows.
TIGHT_K = (2, 4, 6, 10, 20, 50, 100, 190)
# Fig. 5's users on the server of the tight-memory preset: the same KV budget in tokens.
TIGHT_KV_TOKENS = PRESETS["tight-memory"]["kv_budget_tokens"]


@dataclass(frozen=True)
class Part:
    """One sweep of a set, with generator overrides that hold for all its points."""

    sweep: Sweep
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def stems(self, seeds: tuple[int, ...]) -> list[tuple[str, float, int]]:
        return [(instance_stem(self.sweep, v, s), v, s) for v in self.sweep.values for s in seeds]

    def describe(self) -> str:
        s = self.sweep
        extra = "".join(f", {k} = {v:g}" for k, v in self.overrides.items())
        values = ", ".join(f"{v:g}" for v in s.values)
        return f"preset `{s.preset}`{extra}; `{s.param}` in {{{values}}}; files `{s.name}-<value>-s<seed>`"


@dataclass(frozen=True)
class LibrarySet:
    """A folder of ``instances/paper``: its parts, its found instances and what it is for."""

    name: str
    title: str
    parts: tuple[Part, ...]
    seeds: tuple[int, ...] = LIBRARY_SEEDS
    found: tuple[Found, ...] = ()

    def stems(self) -> list[str]:
        made = [stem for part in self.parts for stem, _, _ in part.stems(self.seeds)]
        return made + [f.stem for f in self.found]


def _paper_set(figure: str) -> LibrarySet:
    exp = EXPERIMENTS[figure]
    return LibrarySet(figure, exp.title, (Part(SWEEPS[exp.sweep]),))


def _large_set() -> LibrarySet:
    parts = (
        Part(Sweep("big-tight", "tight-memory", "users", LARGE_K, "K")),
        Part(Sweep("big-tight-fig5", "fig5", "users", LARGE_K, "K"), {"kv_budget_tokens": TIGHT_KV_TOKENS}),
    )
    title = (
        "Past the paper: K = 100, 150, 200 with tight memory (about 3000 tokens of LLM + SLM KV cache) "
        "for Fig. 4's and Fig. 5's users"
    )
    return LibrarySet("large-tight", title, parts)


def _huge_set() -> LibrarySet:
    parts = (
        Part(Sweep("large-fig4", "fig4", "users", HUGE_K, "K")),
        Part(Sweep("large-fig5", "fig5", "users", HUGE_K, "K")),
    )
    title = "Past the paper's sizes: K = 300, 500, 1000, Fig. 4's and Fig. 5's users, the RTX 4090's memory"
    return LibrarySet("large", title, parts, seeds=(1,))


def _adversarial_set() -> LibrarySet:
    parts = (Part(Sweep("tight", TIGHT, "users", TIGHT_K, "K")),)
    title = (
        "Instances that separate methods: the theorem1-tight family, where BALANCE serves exactly half "
        "of the optimum (docs/worst-case.md), and the worst instances the adversary found for each heuristic"
    )
    return LibrarySet("adversarial", title, parts, seeds=(1, 2), found=ADVERSARY_FINDS)


SETS: dict[str, LibrarySet] = {
    s.name: s
    for s in (
        *(_paper_set(f) for f in ("fig4a", "fig4b", "fig5a", "fig5b", "fig6")),
        _large_set(),
        _huge_set(),
        _adversarial_set(),
    )
}


def set_of(folder: Path) -> LibrarySet | None:
    """The set definition a folder is named after, if any."""
    return SETS.get(folder.name)


def instance_bytes_of(part: Part, value: float, seed: int) -> bytes:
    """The instance file of one point and seed (what ``make_instances`` writes for a paper sweep)."""
    overrides: dict[str, Any] = {**part.overrides, part.sweep.param: value}
    overrides["name"] = instance_stem(part.sweep, value, seed)
    return instance_bytes(generate_any(part.sweep.preset, seed=seed, **overrides))


def write_set(lib: LibrarySet, root: Path) -> list[Path]:
    """Write the set's generated instance files (rewritten each time: generation is deterministic).

    Found instances are not written here: they are stored as the command that found them wrote them.
    """
    folder = root / lib.name
    out = []
    for part in lib.parts:
        for stem, value, seed in part.stems(lib.seeds):
            out.append(atomic_write(folder / f"{stem}.json", instance_bytes_of(part, value, seed)))
    return out


def write_library(root: Path, names: list[str] | None = None) -> dict[str, list[Path]]:
    """Write the named sets (default all) under ``root``; returns the files per set."""
    unknown = sorted(set(names or []) - set(SETS))
    if unknown:
        raise ValueError(f"unknown library set(s) {', '.join(unknown)}; known: {', '.join(SETS)}")
    return {n: write_set(SETS[n], root) for n in names or list(SETS)}
