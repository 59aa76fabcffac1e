"""C-level solver output kept off the terminal (HiGHS's banner; SCIP's notices)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def redirected_fd(fd: int, target: int) -> Iterator[None]:
    """Point file descriptor ``fd`` at ``target`` (an open descriptor) for the block, at C level."""
    stream = sys.stdout if fd == 1 else sys.stderr
    stream.flush()
    saved = os.dup(fd)
    try:
        os.dup2(target, fd)
        yield
    finally:
        stream.flush()
        os.dup2(saved, fd)
        os.close(saved)


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null: HiGHS prints its banner at C level."""
    with open(os.devnull, "w") as null, redirected_fd(1, null.fileno()):
        yield
