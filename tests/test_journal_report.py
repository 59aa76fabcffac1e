"""``balance-opt library journal``: a journal's entries counted, each one checked."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from balance_opt.cli import main
from balance_opt.library.journal_report import journal_rows
from balance_opt.solvers.milp.journal import Journal

ENTRY = st.fixed_dictionaries(
    {
        "solver": st.sampled_from(["milp-scip", "milp-highs"]),
        "clock": st.sampled_from(["cpu", "wall"]),
        "termination": st.sampled_from(["infeasible", "time_limit"]),
        "seconds": st.floats(0.0, 500.0),
        "time_limit": st.sampled_from([15.0, 39.99, 40.0, 120.0]),
    }
)


def write(folder: Path, entries: list[dict[str, object]]) -> None:
    journal = Journal(folder)
    for n, entry in enumerate(entries):
        journal.put(hashlib.sha256(str(n).encode()).hexdigest(), entry)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ENTRY, max_size=12))
def test_rows_count_every_entry_once(tmp_path_factory: pytest.TempPathFactory, entries: list[dict]) -> None:
    folder = tmp_path_factory.mktemp("journal")
    write(folder, entries)
    rows = journal_rows(folder)
    keys = [(e["solver"], e["clock"], e["termination"]) for e in entries]
    assert [(r.solver, r.clock, r.termination) for r in rows] == sorted(set(keys))
    assert {(r.solver, r.clock, r.termination): r.entries for r in rows} == Counter(keys)
    for r in rows:
        mine = [
            e
            for e in entries
            if (e["solver"], e["clock"], e["termination"]) == (r.solver, r.clock, r.termination)
        ]
        assert r.seconds == pytest.approx(sum(float(e["seconds"]) for e in mine))
        assert sorted(r.limits) == sorted(float(e["time_limit"]) for e in mine)


def test_the_command_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entry = {"solver": "milp-scip", "clock": "cpu", "seconds": 2.5, "time_limit": 39.99}
    write(tmp_path, [{**entry, "termination": "infeasible"}] * 3 + [{**entry, "termination": "time_limit"}])
    assert main(["library", "journal", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["milp-scip", "cpu", "infeasible", "3", "7.5", "40"]
    assert lines[2].split() == ["milp-scip", "cpu", "time_limit", "1", "2.5", "40"]
    assert lines[3].split() == ["total", "4", "10.0"]


def test_a_bad_entry_is_named_with_exit_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, [{"solver": "milp-scip", "termination": "infeasible", "seconds": 1.0}])
    good = next(tmp_path.rglob("*.json"))
    bad = good.with_name("f" * 64 + ".json")  # in a folder its name does not put it in
    bad.write_text(good.read_text())
    assert main(["library", "journal", str(tmp_path)]) == 2
    assert str(bad) in capsys.readouterr().err
    bad.unlink()
    good.write_text(good.read_text().replace('"infeasible"', '"optimal"'))
    assert main(["library", "journal", str(tmp_path)]) == 2
    assert f"{good}: termination" in capsys.readouterr().err
    good.write_text("{not json")
    assert main(["library", "journal", str(tmp_path)]) == 2
    assert str(good) in capsys.readouterr().err
    assert main(["library", "journal", str(tmp_path / "nowhere")]) == 2
    assert "not a journal folder" in capsys.readouterr().err
