"""The errors that several layers raise, kept below all of them.

The command line turns :class:`InputError` and :class:`UsageError` into a one-line
message and exit status 2.
"""

from __future__ import annotations


class InputError(ValueError):
    """A file or value that breaks a rule of the file formats (exit status 2 on the CLI)."""

    def __init__(self, source: str, path: str, rule: str) -> None:
        self.source, self.path, self.rule = source, path, rule
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {rule}")


class UsageError(Exception):
    """A command-line mistake found after parsing (exit status 2)."""


class SolverUnavailable(RuntimeError):
    """An optional backend is not installed; the message says how to install it."""


class SolveRefused(Exception):
    """A solver declines an instance (e.g. too large to search): termination ``refused``."""
