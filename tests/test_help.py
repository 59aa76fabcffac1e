"""Every command's ``--help``: command-line words (no Python idioms) and every option's default."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from balance_opt.cli import build_parser

# Commands whose help still lacks some defaults; drop a name once its options show them.
PENDING: set[str] = set()
PYTHON = re.compile(r"\b(None|True|False)\b|\w=(True|False|None)\b|default: [\[(]")


def _commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        yield name, p
        for a in p._actions:  # nested commands (library where, ...)
            if isinstance(a, argparse._SubParsersAction):
                yield from ((f"{name} {n}", q) for n, q in a.choices.items())


COMMANDS = dict(_commands())


def _options(p: argparse.ArgumentParser) -> Iterator[tuple[argparse.Action, str]]:
    """Each option that takes a value, with its help as --help prints it."""
    formatter = p._get_formatter()
    for a in p._actions:
        if a.option_strings and a.nargs != 0 and not a.required:
            yield a, formatter._get_help_string(a) or ""


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_python_idioms(name: str) -> None:
    p = COMMANDS[name]
    found = [m.group(0) for m in PYTHON.finditer(p.format_help())]
    assert not found, f"balance-opt {name} --help says {found}: use --flag, 'off', 'not set'"


@pytest.mark.parametrize("name", sorted(n for n in COMMANDS if n.split()[0] not in PENDING))
def test_every_default_shown(name: str) -> None:
    missing = [a.option_strings[0] for a, text in _options(COMMANDS[name]) if "default" not in text.lower()]
    assert not missing, f"balance-opt {name}: say the default of {missing}"


def test_usage_maps_every_generator_field_to_its_flag() -> None:
    from balance_opt.generator import GeneratorParams

    doc = (Path(__file__).parent.parent / "docs" / "usage.md").read_text()
    rows = [line.split("|") for line in doc.splitlines() if line.startswith("| `") and "--" in line]
    mapped = {f: cells[2] for cells in rows for f in re.findall(r"`(\w+)`", cells[1])}
    flags = set(COMMANDS["generate"]._option_string_actions)
    for f in dataclasses.fields(GeneratorParams):
        assert f.name in mapped, f"docs/usage.md: no flag for GeneratorParams.{f.name}"
        named = re.findall(r"`(-[-\w]+)", mapped[f.name])
        assert named, f.name
        assert set(named) <= flags, f"{f.name}: {named}"
