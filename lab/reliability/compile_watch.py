"""Counting XLA compilations, to prove that a run compiles its loop step once.

    with CompileWatch() as watch:
        train(config, run_dir)
    watch.after_first_step("jit(_step_local)")   # 0: no silent recompiles of the step

JAX records a `/jax/core/compile/backend_compile_duration` event (with the jitted function's name)
for every program it builds, a persistent-cache hit included: a jit cache miss always shows up.
While watching, every new `Trainer` and every `Trainer.step` call is noted too, so each compilation
is known to have come before or after the first step of the latest trainer (a resume builds a new one).
`azjax.compile_log` writes the same event as a line per compile, for processes that are not training.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import jax

from azjax.compile_log import BACKEND_COMPILE_EVENT
from azjax.train.driver import train
from azjax.train.loop import Trainer

STEP_FUNCTION = "jit(_step_local)"  # the name JAX gives the loop step (`Trainer.step`; loop.py keeps it)


@dataclass
class Compilation:
    fun_name: str
    seconds: float
    trainer: int  # the latest trainer built (0, 1, ...); -1 before any
    steps_done: int  # loop steps that trainer had finished when this compilation started


@dataclass
class CompileWatch:
    compilations: list[Compilation] = field(default_factory=list)
    _steps: list[int] = field(default_factory=list)  # steps done by trainer 0, 1, ...
    _current: int = -1
    _saved: tuple[Any, Any] | None = None  # Trainer's own __init__ and step

    def __enter__(self) -> CompileWatch:
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        self._saved = original_init, original_step = Trainer.__init__, Trainer.step
        watch = self

        def index(trainer: Trainer) -> int:  # kept on the trainer: ids of dead objects get reused
            if getattr(trainer, "_compile_watch_index", None) is None:
                trainer._compile_watch_index = len(watch._steps)  # type: ignore[attr-defined]
                watch._steps.append(0)
            return trainer._compile_watch_index  # type: ignore[attr-defined]

        def init(trainer: Trainer, *args: Any, **kwargs: Any) -> None:
            original_init(trainer, *args, **kwargs)
            watch._current = index(trainer)

        def step(trainer: Trainer, state: Any) -> Any:
            watch._current = i = index(trainer)
            out = original_step(trainer, state)
            watch._steps[i] += 1
            return out

        Trainer.__init__, Trainer.step = init, step  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._saved is not None
        Trainer.__init__, Trainer.step = self._saved  # type: ignore[method-assign]
        jax.monitoring.unregister_event_duration_listener(self._on_event)

    def _on_event(self, event: str, duration: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE_EVENT:
            steps = self._steps[self._current] if self._current >= 0 else 0
            self.compilations.append(Compilation(str(kwargs.get("fun_name", "?")), duration, self._current, steps))

    def after_first_step(self, fun_name: str | None = None) -> int:
        """Compilations (of `fun_name`, or of anything) after the running trainer's first step."""
        return sum(1 for c in self.compilations
                   if c.steps_done >= 1 and (fun_name is None or c.fun_name == fun_name))

    def of(self, fun_name: str) -> list[Compilation]:
        return [c for c in self.compilations if c.fun_name == fun_name]

    def by_function(self, after_first_step: bool = False) -> dict[str, int]:
        return dict(Counter(c.fun_name for c in self.compilations if not after_first_step or c.steps_done >= 1))


def watch_run_and_resume(config: Any, run_dir: Any, stop_after: int) -> CompileWatch:
    """Trains `config` for `stop_after` steps (stopping with a checkpoint), resumes to the end, and
    returns what compiled when."""

    with CompileWatch() as watch:
        train(config, run_dir, progress=False, stop_after=stop_after)
        train(None, run_dir, resume=True, progress=False)
    return watch
