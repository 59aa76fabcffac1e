"""``balance-opt check`` and minimal solution files from outside tools."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from balance_opt.io import dumps, read_solution
from balance_opt.library.reference import read_reference
from tests.test_cli_basic import run

LIBRARY = Path(__file__).parent.parent / "instances" / "paper"
FIXTURES = Path(__file__).parent / "fixtures"
STEMS = ("small-k-11-s0003", "small-k-12-s0002")


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A one-set library: two fig6 instances with their references and stored schedules."""
    folder = tmp_path / "lib" / "fig6"
    (folder / "solutions").mkdir(parents=True)
    rows = read_reference(LIBRARY / "fig6")
    with (LIBRARY / "fig6" / "reference.csv").open() as fh:
        columns = next(csv.reader(fh))
    with (folder / "reference.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for stem in STEMS:
            writer.writerow(rows[stem])
            shutil.copy(LIBRARY / "fig6" / f"{stem}.json", folder)
            shutil.copy(LIBRARY / "fig6" / rows[stem]["solution"], folder / "solutions")
    return folder.parent


def minimal(library: Path, stem: str = STEMS[0], **extra: Any) -> dict[str, Any]:
    """The fewest fields a reader needs: the stored best schedule, stripped."""
    stored = json.loads((library / "fig6" / "solutions" / f"{stem}.json").read_text())
    doc = {"schema": "balance-opt/solution", "version": 1, "instance": stem,
           "z": stored["z"], "assignment": stored["assignment"]}  # fmt: skip
    doc.update(extra)
    return doc


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_a_minimal_solution_is_checked_and_evaluated(library: Path, tmp_path: Path, capsys: Any) -> None:
    path = write(tmp_path / "mine.json", minimal(library))
    code, out, err = run(capsys, "check", path, "--library", library, "--json")
    assert (code, err) == (0, "")
    (s,) = json.loads(out)["solutions"]
    best = int(read_reference(library / "fig6")[STEMS[0]]["best_known"])
    assert (s["instance"], s["feasible"], s["served"], s["gap"], s["ratio"]) == (STEMS[0], True, best, 0, 1.0)
    assert s["new_record"] is False
    code, out, err = run(capsys, "evaluate", library / "fig6" / f"{STEMS[0]}.json", path)
    assert (code, err) == (0, "")
    assert f"served {best}/" in out


def test_matching_by_digest_alone(library: Path, tmp_path: Path, capsys: Any) -> None:
    sha = read_reference(library / "fig6")[STEMS[1]]["sha256"]
    doc = minimal(library, STEMS[1])
    del doc["instance"]
    path = write(tmp_path / "mine.json", {**doc, "instance_sha256": sha})
    code, out, _ = run(capsys, "check", path, "--library", library)
    assert code == 0
    assert STEMS[1] in out


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        ({"instance": None}, "instance", "is required when instance_sha256 is missing"),
        ({"instance": "nowhere-K1"}, "instance", "names no instance of the library"),
        ({"instance_sha256": "a" * 64}, "instance_sha256", "does not match the library's fig6/"),
        ({"z": None}, "z", "is required but missing"),
        ({"served": -2}, "served", "must be an integer >= 0, got -2"),
    ],
)
def test_bad_input_is_exit_2_naming_file_and_field(
    library: Path, tmp_path: Path, capsys: Any, change: dict[str, Any], field: str, rule: str
) -> None:
    doc = minimal(library)
    for key, value in change.items():
        if value is None:
            del doc[key]
        else:
            doc[key] = value
    path = write(tmp_path / "bad.json", doc)
    good = write(tmp_path / "good.json", minimal(library))
    code, out, err = run(capsys, "check", path, good, "--library", library)
    assert code == 2
    assert f"{path}: {field}: {rule}" in err
    assert STEMS[0] in out  # the good file is still scored


def test_an_infeasible_schedule_is_exit_1(library: Path, tmp_path: Path, capsys: Any) -> None:
    doc = minimal(library)
    doc["assignment"] = dict.fromkeys(doc["assignment"], "ad")
    path = write(tmp_path / "greedy.json", {**doc, "z": 1.0})
    code, out, _ = run(capsys, "check", path, "--library", library)
    assert code == 1
    assert "INFEASIBLE" in out


def test_a_false_claim_is_exit_1_and_reported(library: Path, tmp_path: Path, capsys: Any) -> None:
    best = int(read_reference(library / "fig6")[STEMS[0]]["best_known"])
    path = write(tmp_path / "boast.json", minimal(library, served=best + 1, status="optimal", bound=best + 1))
    code, out, _ = run(capsys, "check", path, "--library", library)
    assert code == 1
    assert f"claims served {best + 1}, the evaluator counts {best}" in out
    code, _, err = run(capsys, "evaluate", library / "fig6" / f"{STEMS[0]}.json", path)
    assert code == 0
    assert "warning" in err
    assert f"claims served {best + 1}" in err


def test_a_new_record_is_said_loudly(library: Path, tmp_path: Path, capsys: Any) -> None:
    ref = library / "fig6" / "reference.csv"
    row = read_reference(library / "fig6")[STEMS[0]]
    best = int(row["best_known"])
    ref.write_text(ref.read_text().replace(f",{row['status']},{best},", f",open,{best - 1},", 1))
    path = write(tmp_path / "mine.json", minimal(library))
    out_dir = tmp_path / "report"
    code, out, err = run(capsys, "check", path, "--library", library, "--out", out_dir)
    assert code == 0
    assert f"NEW RECORD: serves {best}, best known {best - 1}" in out
    assert "NEW RECORD" in err
    table = list(csv.DictReader((out_dir / "check.csv").open()))
    assert table[0]["new_record"] == "True"
    assert table[0]["gap"] == "-1"
    assert "NEW RECORD" in (out_dir / "check.md").read_text()


def test_a_results_table_and_a_folder_are_checked(library: Path, tmp_path: Path, capsys: Any) -> None:
    run_dir = tmp_path / "run"
    code, _, _ = run(capsys, "solve", library / "fig6", "--solver", "balance", "--out", run_dir)
    assert code == 0
    code, out, _ = run(capsys, "check", run_dir / "results.csv", "--library", library, "--json")
    assert code == 0
    assert {s["instance"] for s in json.loads(out)["solutions"]} == set(STEMS)
    # the library's own folder: instance files are skipped, the stored schedules checked
    code, out, _ = run(capsys, "check", library, "--library", library, "--json")
    assert code == 0
    assert json.loads(out)["summary"]["at_best_known"] == len(STEMS)


def test_our_solution_files_still_round_trip_byte_for_byte() -> None:
    path = FIXTURES / "valid" / "tiny-K2-solution.json"
    assert dumps(read_solution(path).document).encode() == path.read_bytes()


def one_fewer(library: Path, stem: str = STEMS[0], **claims: Any) -> dict[str, Any]:
    """The stored best schedule less one served user: feasible, one below the best known."""
    doc = minimal(library, stem, **claims)
    first = next(u for u, mode in doc["assignment"].items() if mode != "none")
    doc["assignment"] = {**doc["assignment"], first: "none"}
    return doc


@pytest.mark.parametrize(
    ("claims", "proofs"),
    [
        ({"status": "optimal", "bound": "below"}, ["bound", "optimal"]),
        ({"status": "optimal"}, ["optimal"]),
        ({"status": "feasible", "bound": "below"}, ["bound"]),
    ],
)
def test_a_false_proof_below_the_best_known_is_said_loudly(
    library: Path, tmp_path: Path, capsys: Any, claims: dict[str, Any], proofs: list[str]
) -> None:
    """Claimed optimum or bound below a feasible schedule the library holds: exit 1, file, claim, value."""
    best = int(read_reference(library / "fig6")[STEMS[0]]["best_known"])
    claims = {k: best - 1 if v == "below" else v for k, v in claims.items()}
    path = write(tmp_path / "proof.json", one_fewer(library, served=best - 1, **claims))
    code, out, err = run(capsys, "check", path, "--library", library)
    assert code == 1
    held = f"the library's fig6/{STEMS[0]} holds a feasible schedule serving {best}"
    want = {
        "bound": f"claims a proved bound {best - 1}, but {held}",
        "optimal": f'claims status "optimal" serving {best - 1}, but {held}',
    }
    for proof in proofs:
        assert f"FALSE PROOF: {want[proof]}" in out
        assert f"balance-opt check: FALSE PROOF: {path} {want[proof]}" in err.splitlines()
    assert err.count("FALSE PROOF") == len(proofs)
    code, out, _ = run(capsys, "check", path, "--library", library, "--json")
    doc = json.loads(out)
    assert (code, doc["summary"]["false_proofs"], doc["summary"]["claim_mismatches"]) == (1, 1, 1)
    assert len(doc["solutions"][0]["false_proofs"]) == len(proofs)


def test_an_honest_claim_below_the_best_known_passes(library: Path, tmp_path: Path, capsys: Any) -> None:
    best = int(read_reference(library / "fig6")[STEMS[0]]["best_known"])
    path = write(tmp_path / "honest.json", one_fewer(library, served=best - 1, status="feasible", bound=best))
    code, out, err = run(capsys, "check", path, "--library", library)
    assert (code, err) == (0, "")
    assert "0 claim mismatches, 0 false proofs" in out


def test_every_claim_present_is_compared_and_each_mismatch_listed(
    library: Path, tmp_path: Path, capsys: Any
) -> None:
    doc = minimal(library, served=3, feasible=True, status="optimal", bound=3)
    doc["assignment"] = dict.fromkeys(doc["assignment"], "ad")
    path = write(tmp_path / "all-wrong.json", {**doc, "z": 1.0})
    code, out, _ = run(capsys, "check", path, "--library", library, "--json")
    assert code == 1
    (s,) = json.loads(out)["solutions"]
    k = len(doc["assignment"])
    assert s["claim_mismatches"][0] == f"claims served 3, the evaluator counts {k}"
    assert s["claim_mismatches"][1].startswith("claims feasible true, but the schedule is infeasible: ")
    assert s["claim_mismatches"][2].startswith('claims status "optimal", but the schedule is infeasible: ')
    held = f"the library's fig6/{STEMS[0]} holds a feasible schedule serving"
    assert s["claim_mismatches"][3].startswith(f"claims a proved bound 3, but {held}")
    assert s["false_proofs"] == s["claim_mismatches"][3:]
    # a bound below the schedule's own served count is refuted by the evaluator alone
    path = write(tmp_path / "low.json", minimal(library, bound=2))
    code, out, _ = run(capsys, "check", path, "--library", library, "--json")
    (s,) = json.loads(out)["solutions"]
    assert code == 1
    assert s["false_proofs"] == [f"claims a proved bound 2 below its own {s['served']} served users"]


def test_an_infeasible_schedule_names_its_first_violated_rule(
    library: Path, tmp_path: Path, capsys: Any
) -> None:
    """In the text table, the --json note and check.md; the table names each solution file."""
    doc = minimal(library)
    doc["assignment"] = dict.fromkeys(doc["assignment"], "sd")
    bad = write(tmp_path / "all-sd.json", {**doc, "z": 0.0})
    good = write(tmp_path / "best.json", minimal(library))
    code, out, _ = run(capsys, "check", bad, good, "--library", library, "--out", tmp_path / "r")
    assert code == 1
    rule = re.compile(r"INFEASIBLE: (user u\d+ \(sd\) completes at [\d.e+-]+ s, [\d.e+-]+ s after its "
                      r"deadline [\d.e+-]+ s \(20\), \(21c\)|memory [\d.e+]+ B exceeds the capacity "
                      r"[\d.e+]+ B by [\d.e+]+ B \(21d\))( \(and \d+ more violations?\))?")  # fmt: skip
    assert rule.search(out), out
    head, *lines = out.splitlines()
    assert head.split()[:2] == ["solution", "instance"]
    assert [line.split()[:2] for line in lines[:3:2]] == [[str(bad), STEMS[0]], [str(good), STEMS[0]]]
    assert rule.search((tmp_path / "r" / "check.md").read_text())
    code, out, _ = run(capsys, "check", bad, "--library", library, "--json")
    (s,) = json.loads(out)["solutions"]
    assert rule.fullmatch(s["note"]), s["note"]
    assert s["violation"] == s["note"].removeprefix("INFEASIBLE: ")
