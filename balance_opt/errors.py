"""The errors that several layers raise, kept below all of them.

The command line turns :class:`InputError` and :class:`UsageError` into a one-line
message and exit status 2.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\n``): a message quoting a
    user's input must not move the terminal's cursor or start a new line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class InputError(ValueError):
    """A file or value that breaks a rule of the file formats (exit status 2 on the CLI)."""

    def __init__(self, source: str, path: str, rule: str) -> None:
        self.source, self.path, self.rule = source, path, rule
        where = f"{source}: {path}" if path else source
        super().__init__(printable(f"{where}: {rule}"))


class UsageError(Exception):
    """A command-line mistake found after parsing (exit status 2)."""


class SolverUnavailable(RuntimeError):
    """An optional backend is not installed; the message says how to install it."""


class SolveRefused(Exception):
    """A solver declines an instance (e.g. too large to search): termination ``refused``."""
