"""A run folder held by one batch at a time, and the errors of a folder that cannot be used.

Two ``balance-opt solve --out RUN_DIR`` at once would solve the same pairs twice and race
on the results table. :func:`hold_run_folder` takes ``RUN_DIR/.lock`` (``filelock``: an
``flock`` the kernel drops when its process dies, so a killed batch never leaves the
folder locked) and records who holds it in ``RUN_DIR/.lock.owner``; a second batch stops
at once with a :class:`RunFolderError` naming the folder and the other process. Every
``OSError`` of the folder (not a folder, not writable, disk full) becomes a
:class:`RunFolderError` naming the path and the reason: exit status 2, never an internal
error, and every file already written is whole (atomic writes).
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Iterator
from pathlib import Path

from balance_opt.errors import UsageError
from balance_opt.files import atomic_write

LOCK_NAME = ".lock"
OWNER_NAME = ".lock.owner"


class RunFolderError(UsageError):
    """The run folder cannot be created, written or held (exit status 2)."""


def folder_error(exc: OSError, fallback: Path, doing: str) -> RunFolderError:
    """``PATH: cannot DOING (REASON)`` for an OSError met on the run folder."""
    where = exc.filename or fallback
    reason = exc.strerror or str(exc)
    return RunFolderError(f"{where}: cannot {doing} ({reason})")


def _owner_text() -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime())
    return f"process {os.getpid()} on {platform.node()}, since {stamp}"


def _remove_stale_temporaries(run_dir: Path, inner: str) -> None:
    """Delete the ``.NAME.RANDOM.tmp`` files of writes that a killed batch left unfinished.

    Only the holder of the lock writes here, so every temporary file found on taking it
    belongs to a process that is gone; each one's finished file is rewritten by this batch.
    """
    for folder in (run_dir, run_dir / inner):
        for tmp in folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()


@contextlib.contextmanager
def hold_run_folder(run_dir: Path, inner: str = "solutions") -> Iterator[None]:
    """Create ``run_dir/inner`` and hold the folder's lock for the ``with`` block."""
    from filelock import FileLock, Timeout

    try:
        (run_dir / inner).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise folder_error(exc, run_dir, "create the run folder") from None
    lock = FileLock(str(run_dir / LOCK_NAME), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            owner = (run_dir / OWNER_NAME).read_text().strip() or "another process"
        except OSError:
            owner = "another process"
        raise RunFolderError(
            f"{run_dir}: run folder in use by another balance-opt solve ({owner}); "
            "wait for it to end or give another --out"
        ) from None
    except OSError as exc:
        raise folder_error(exc, run_dir / LOCK_NAME, "lock the run folder") from None
    try:
        _remove_stale_temporaries(run_dir, inner)
        try:
            atomic_write(run_dir / OWNER_NAME, _owner_text() + "\n")
        except OSError as exc:
            raise folder_error(exc, run_dir / OWNER_NAME, "write to the run folder") from None
        yield
    finally:
        with contextlib.suppress(OSError):
            (run_dir / OWNER_NAME).unlink()
        lock.release()
