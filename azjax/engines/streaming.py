"""What streamed analysis needs on both protocols: the commands read in a thread (`LineReader`), so that a search can
ask whether the next command has arrived, and the growing visit plan of an analysis that runs until it is told to stop
(`growing_visits`).

    reader = LineReader(sys.stdin)     # a daemon thread reads the stream line by line into a queue
    line = reader.get()                # the next line (waits); None at the end of the input
    if reader.wait(0.5): ...           # a line (or the end of the input) is waiting, within 0.5 s

A search runs a fixed number of simulations per call and cannot be interrupted, so an analysis that keeps growing
searches again with double the visits each time: `growing_visits(4, 64)` is `[4, 8, 16, 32, 64]`, one compiled
search per size (`Engine` keeps them). With tree reuse (`Engine.tree_reuse`) each search continues the last
one's tree, so the analysis grows one tree and throws nothing away (Gumbel: the root's sequential halving starts
again at each size, over everything below it); without it each size searches afresh,
and the doubling keeps the work thrown away to the size of the last search (the sum of the earlier ones).
"""

from __future__ import annotations

import collections
import threading
from typing import TextIO

MAX_INFINITE_FACTOR = 16  # a growing search stops growing at this many times the engine's visits ...
# ... and at MAX_VISITS: mctx keeps dense [visits + 1, actions] arrays per tree: 8192 visits of chess (4672 actions)
# are ~1 GB of tree on the device.
MAX_VISITS = 8192


def growing_visits(visits: int, cap: int) -> list[int]:
    """The visits of the searches of an analysis that runs until stopped: `visits`, doubling up to `cap` (the last one
    is `cap`); just `[visits]` when `visits` is already at or above `cap`."""
    plan = [visits]
    while plan[-1] < cap:
        plan.append(min(plan[-1] * 2, cap))
    return plan


def analysis_cap(visits: int) -> int:
    """Where a growing analysis of an engine searching `visits` per move stops growing: MAX_INFINITE_FACTOR x visits,
    at most MAX_VISITS (but never below `visits` itself)."""
    return max(visits, min(visits * MAX_INFINITE_FACTOR, MAX_VISITS))


class LineReader:
    """The lines of a text stream, read by a daemon thread into a queue as they arrive.

    A reader thread, not select + readline: select looks at the file descriptor, and a line that the text stream
    has already buffered (two commands in one write) would stay unseen until more input came. The reader reads
    ahead: lines after `quit` are read but never handled. A stream that fails to read (closed under it) counts as
    its end.
    """

    def __init__(self, stream: TextIO):
        self._lines: collections.deque[str] = collections.deque()
        self._eof = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), name="azjax-input", daemon=True)
        self._thread.start()

    def _read(self, stream: TextIO) -> None:
        try:
            for line in stream:
                with self._ready:
                    self._lines.append(line)
                    self._ready.notify_all()
        except (OSError, ValueError):  # closed while reading: the end of the input
            pass
        finally:
            with self._ready:
                self._eof = True
                self._ready.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether a line, or the end of the input, is waiting (waits up to `timeout` seconds for one; None: for
        ever)."""
        if timeout is not None:
            timeout = min(max(timeout, 0.0), threading.TIMEOUT_MAX)  # a huge interval must not overflow the wait
        with self._ready:
            return self._ready.wait_for(lambda: bool(self._lines) or self._eof, timeout)

    def get(self) -> str | None:
        """The next line (waits for it), with its line break; None at the end of the input."""
        with self._ready:
            self._ready.wait_for(lambda: bool(self._lines) or self._eof)
            return self._lines.popleft() if self._lines else None
