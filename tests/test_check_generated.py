"""``check`` matches a solution of an instance that ``generate`` drew with the library's parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from balance_opt.io import read_bytes, sha256_bytes
from balance_opt.library.aliases import generated_sha256
from tests.test_cli_basic import run

LIBRARY = Path(__file__).parent.parent / "instances" / "paper"


def test_a_generated_copy_of_a_library_instance_is_matched(tmp_path: Path, capsys: Any) -> None:
    code, out, _ = run(
        capsys, "generate", "--preset", "fig4", "--users", "20", "--seed", "2", "--out", tmp_path
    )
    assert code == 0
    generated = tmp_path / "fig4-K20-s0002.json"
    assert generated.read_bytes() != (LIBRARY / "fig4a" / "k-20-s0002.json").read_bytes()  # the names differ
    assert generated_sha256(LIBRARY / "fig4a" / "k-20-s0002.json", "k-20-s0002") == sha256_bytes(
        read_bytes(generated)
    )
    code, _, err = run(capsys, "solve", generated, "--solver", "ad-only", "--out", tmp_path / "run")
    assert code == 0, err
    code, out, err = run(capsys, "check", tmp_path / "run" / "solutions", "--library", LIBRARY, "--json")
    assert code == 0, err
    assert '"instance": "k-20-s0002"' in out
    assert '"set": "fig4a"' in out


def test_other_parameters_or_a_changed_file_match_nothing(tmp_path: Path, capsys: Any) -> None:
    argv = ["generate", "--preset", "fig4", "--users", "20", "--seed", "2", "--deadline-max", "3.9"]
    run(capsys, *argv, "--out", tmp_path)
    run(capsys, "solve", tmp_path / "fig4-K20-s0002.json", "--solver", "ad-only", "--out", tmp_path / "run")
    code, _, err = run(capsys, "check", tmp_path / "run" / "solutions", "--library", LIBRARY)
    assert code == 2
    assert "matches no instance of the library" in err
    # a library file that is not the generator's draw under its name has no alias
    odd = tmp_path / "odd.json"
    odd.write_bytes((LIBRARY / "fig4a" / "k-20-s0002.json").read_bytes().replace(b'"u0"', b'"v0"'))
    assert generated_sha256(odd, "k-20-s0002") is None
