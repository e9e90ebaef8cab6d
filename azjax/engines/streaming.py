"""What streamed analysis needs on both protocols: the commands read in a thread (`LineReader`), so that an analysis
can ask whether the next command has arrived, and where an analysis that runs until it is told to stop stops
growing (`analysis_cap`).

    reader = LineReader(sys.stdin)     # a daemon thread reads the stream line by line into a queue
    line = reader.get()                # the next line (waits); None at the end of the input
    if reader.wait(0.5): ...           # a line (or the end of the input) is waiting, within 0.5 s

A search call cannot be interrupted, so an analysis runs in chunks (`azjax.engines.engine.Engine.grow`): each call
adds at most `ANALYSIS_CHUNK` visits to one tree, in the engine's one compiled program, and the front end looks
for the next command between calls, so that it is answered after at most one chunk. With tree reuse
(`Engine.tree_reuse`) the chunks grow one tree (PUCT: a root with more visits each time; Gumbel: the next
simulations of one sequential halving planned for all the room the tree has) up to `analysis_cap` visits; an
engine that cannot keep its tree (search-contempt, certainty propagation, SAI's sensible agent) searches afresh
with double the visits each time, up to its `visits`.
"""

from __future__ import annotations

import collections
import threading
from typing import TextIO

MAX_INFINITE_FACTOR = 16  # a growing search stops growing at this many times the engine's visits ...
# ... and at MAX_VISITS: mctx keeps dense [visits + 1, actions] arrays per tree: 8192 visits of chess (4672 actions)
# are ~1 GB of tree on the device.
MAX_VISITS = 8192


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
