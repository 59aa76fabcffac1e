"""The package's data wherever it is installed: balance_opt.data, the commands' defaults, and
(slow) the sdist and wheel built, installed in a fresh virtual environment and run from an
empty folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
from pathlib import Path

import pytest

from balance_opt import data
from balance_opt.batch import regress
from balance_opt.cli import main

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ("fig4a", "k-20-s0001.json")  # a library instance with a proved optimum, solved in 1 s


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder: nothing there to resolve a default against."""
    cwd = tmp_path / "empty"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_folders_hold_the_data() -> None:
    lib, ci, configs = data.library_dir(), data.ci_dir(), data.config_dir()
    for folder in (lib, ci, configs):
        assert folder.is_absolute()
        assert data.is_packaged(folder) or folder.is_relative_to(data.package_root().parent)
    assert {"fig4a", "fig4b", "fig5a", "fig5b", "fig6", "adversarial"} <= {p.name for p in lib.iterdir()}
    assert (lib / INSTANCE[0] / INSTANCE[1]).is_file()
    assert (ci / "reference.csv").is_file()
    assert len(list(ci.glob("*.json"))) >= 10
    assert {"balance", "balance-plus", "exhaustive"} <= {p.stem for p in configs.glob("*.toml")}


def test_packaged_copy_first_then_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "site" / "balance_opt"
    (root / "_data" / "ci").mkdir(parents=True)
    (tmp_path / "site" / "instances" / "ci").mkdir(parents=True)
    (tmp_path / "site" / "solvers").mkdir()
    monkeypatch.setattr(data, "package_root", lambda: root)
    assert data.ci_dir() == root / "_data" / "ci"  # an installed copy wins over a checkout's folder
    assert data.config_dir() == tmp_path / "site" / "solvers"
    assert data.is_packaged(root / "_data" / "ci")
    assert not data.is_packaged(tmp_path / "site" / "solvers")
    with pytest.raises(data.DataMissing, match="'paper' is missing"):
        data.library_dir()
    assert data.shown(data.library_dir) == "the installed copy, missing from this install"


def test_every_package_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "balance_opt").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml's packages: {sorted(found - listed)}"


def test_solve_config_name_and_check_default_library(
    empty_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = data.library_dir().joinpath(*INSTANCE)
    code, out, err = run(capsys, "solve", instance, "--config", "balance-plus", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["run"]["config"] == "balance-plus"
    (empty_cwd / "sol.json").write_text(out)
    code, out, err = run(capsys, "check", "sol.json", "--json")
    assert code == 0, err
    [score] = json.loads(out)["solutions"]
    assert (score["set"], score["best_known"], score["reference_status"]) == ("fig4a", 18, "optimal")
    assert sorted(p.name for p in empty_cwd.iterdir()) == ["sol.json"]


def test_regress_defaults_to_the_installed_ci_set(
    empty_cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []

    def check(folder: Path, **_: object) -> regress.Check:
        seen.append(Path(folder))
        return regress.Check()

    monkeypatch.setattr(regress, "check", check)
    code, out, _ = run(capsys, "regress")
    assert code == 0
    assert seen == [data.ci_dir()]
    assert out.startswith("ok: 0 instances")
    code, _, err = run(capsys, "regress", "--update")
    assert code == 2
    assert "name FOLDER" in err


def test_help_names_the_data_folders(empty_cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command, folder in (("check", data.library_dir()), ("regress", data.ci_dir())):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0
        assert str(folder) in " ".join(out.split())


def _sh(*argv: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no way back to the checkout
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    tail = f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{tail}"
    return proc


def _venv_with_wheel(tmp: Path, wheel: Path) -> Path:
    """A fresh environment holding the wheel; the dependencies are this one's (no network)."""
    venv = tmp / "venv"
    _sh(sys.executable, "-m", "venv", venv, cwd=tmp)
    python = venv / "bin" / "python"
    site = _sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp)
    # a path line, not site.addsitedir: this environment's editable-install hook stays off
    Path(site.stdout.strip(), "balance-opt-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _sh(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp)
    return venv / "bin"


def _sdist_holds_the_tests(sdist: Path) -> None:
    tracked = _sh("git", "ls-files", "tests", cwd=ROOT).stdout.split()
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [f for f in tracked if (ROOT / f).exists() and f not in names]
    assert not missing, f"the sdist lacks {missing[:10]} (MANIFEST.in)"


@pytest.mark.slow
def test_built_wheel_runs_from_an_empty_folder(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    pytest.importorskip("build", reason="needs the dev extra's build")
    _sh(sys.executable, "-m", "build", "--outdir", tmp_path / "dist", ROOT, cwd=tmp_path, timeout=600)
    [sdist] = (tmp_path / "dist").glob("*.tar.gz")
    [wheel] = (tmp_path / "dist").glob("*.whl")
    _sdist_holds_the_tests(sdist)
    bin_dir = _venv_with_wheel(tmp_path, wheel)
    cwd = tmp_path / "empty"
    cwd.mkdir()
    cli = bin_dir / "balance-opt"
    for which in ("library", "ci", "configs"):
        folder = Path(_sh(cli, "library", "where", which, cwd=cwd).stdout.strip())
        assert folder.is_relative_to(tmp_path / "venv"), folder
    library = Path(_sh(cli, "library", "where", cwd=cwd).stdout.strip())
    _sh(cli, "solve", library.joinpath(*INSTANCE), "--config", "balance-plus", "--out", "run", cwd=cwd)
    _sh(cli, "check", "run/solutions", cwd=cwd)
    _sh(cli, "regress", cwd=cwd, timeout=600)
