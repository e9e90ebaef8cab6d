"""One line per XLA compilation, as it happens: what compiles when, in a process that is not training (the engines).

    log_compiles()      # from now on: `azjax: compiled jit(f) in 1.234 s` on stderr for every program JAX builds

`azjax` turns it on with `AZJAX_LOG_COMPILES=1`. The event is the one the compile watch counts
(`lab/reliability/compile_watch.py`; JAX records it for every program it builds, a persistent-cache hit included), so a
compile after an engine said it was ready (UCI's `readyok`) shows up in order with what the engine answers
(tests/engines/test_engine_clock.py). Only JAX is imported here, so that an engine that logs its compiles starts as fast
as one that does not.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import jax

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
COMPILE_LOG_PREFIX = "azjax: compiled "  # the start of each line `log_compiles` writes


def log_compiles(stream: TextIO | None = None) -> None:
    """Writes one line per XLA compilation from now on to `stream` (default stderr), as it happens."""

    def on_event(event: str, duration: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE_EVENT:
            out = stream or sys.stderr
            out.write(f"{COMPILE_LOG_PREFIX}{kwargs.get('fun_name', '?')} in {duration:.3f} s\n")
            out.flush()

    jax.monitoring.register_event_duration_secs_listener(on_event)
