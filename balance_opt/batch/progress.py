"""A batch's progress on standard error: a bar on a terminal, a plain line every few seconds off one.

Off a terminal (piped, CI, nohup) a bar's carriage returns would pile up in a log, so the
batch prints one line at most every ``interval_s`` and a last one when it ends:
``balance-opt solve: 12/36 done, 1 failed, about 2m05s left``. Nothing goes to standard
output, which ``--json`` keeps for the solution document.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

PLAIN_INTERVAL_S = 5.0


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Counts finished and failed solves; shows them as a bar, as plain lines, or not at all.

    ``enabled``: None or True shows progress (a bar on a terminal, plain lines elsewhere),
    False hides it; a batch of one solve shows none.
    """

    def __init__(
        self,
        total: int,
        enabled: bool | None,
        stream: TextIO | None = None,
        interval_s: float = PLAIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        label: str = "balance-opt solve",
        unit: str = "solve",
    ) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.interval_s, self.clock = interval_s, clock
        self.start = self.last = clock()
        self.show = enabled is not False and total > 1  # one solve's answer is its own progress
        self.bar: Any = None
        if self.show and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=self.stream, unit=unit, dynamic_ncols=True)

    def line(self) -> str:
        """The plain progress line."""
        left = ""
        if 0 < self.done < self.total:
            rate = (self.clock() - self.start) / self.done
            left = f", about {_duration(rate * (self.total - self.done))} left"
        return f"{self.label}: {self.done}/{self.total} done, {self.failed} failed{left}"

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if not self.show:
            return
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(failed=self.failed, refresh=False)
            return
        now = self.clock()
        if now - self.last >= self.interval_s or self.done == self.total:
            self.last = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.show and 0 < self.done < self.total:
            print(self.line(), file=self.stream, flush=True)  # stopped early: where it stood
