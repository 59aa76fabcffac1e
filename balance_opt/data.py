"""Where the data that ships with the package lives: the benchmark library, the CI set and the
named solver configurations.

An installed wheel carries them under ``balance_opt/_data/`` (``paper``, ``ci``, ``solvers``):
pyproject.toml maps those packages onto the repository folders ``instances/paper``,
``instances/ci`` and ``solvers``, which stay where the docs and reports name them. A checkout,
or an editable install of one, has no ``_data`` folder and reads the repository folders
themselves. ``balance-opt library where`` prints the folders found (docs/library.md).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from balance_opt.errors import UsageError

# Each packaged folder: its name under balance_opt/_data and its place in a checkout.
_CHECKOUT = {"paper": ("instances", "paper"), "ci": ("instances", "ci"), "solvers": ("solvers",)}


class DataMissing(UsageError):
    """The package's data folder is not where it should be (a broken or zipped install)."""


def package_root() -> Path:
    """The folder of the installed ``balance_opt`` package (site-packages/balance_opt)."""
    root = files("balance_opt")
    if not isinstance(root, Path):  # a zip import: the commands need real folders
        raise DataMissing(f"balance_opt is imported from {root}, not a folder: install it unzipped")
    return root


def _folder(name: str) -> Path:
    root = package_root()
    packaged = root / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = root.parent.joinpath(*_CHECKOUT[name])
    if checkout.is_dir():
        return checkout
    raise DataMissing(
        f"the package's data folder {name!r} is missing (neither {packaged} nor {checkout}): "
        "reinstall balance-opt, or name a folder explicitly"
    )


def library_dir() -> Path:
    """The benchmark library: one folder per set (``fig4a``, ..., ``adversarial``)."""
    return _folder("paper")


def ci_dir() -> Path:
    """The CI instance set and its ``reference.csv`` (``balance-opt regress``)."""
    return _folder("ci")


def config_dir() -> Path:
    """The named solver configurations, one ``NAME.toml`` each."""
    return _folder("solvers")


def is_packaged(path: Path) -> bool:
    """Whether ``path`` lies inside the installed package (never to be written to)."""
    return path.resolve().is_relative_to(package_root().resolve())


def shown(folder: Callable[[], Path]) -> str:
    """A default folder as ``--help`` shows it: its path, or that it is missing (help never fails)."""
    try:
        return str(folder())
    except DataMissing:
        return "the installed copy, missing from this install"
