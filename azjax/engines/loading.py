"""An engine's network loaded in the background, as lc0 loads its own: GTP and UCI answer the handshake at once
(`uci` -> `uciok`; `protocol_version`, `name`, `version`, `known_command`, `list_commands`), and a command that
needs the network waits for it. The same thread then compiles the engine's search and times it
(`azjax.engines.engine.Engine.prepare`), so that no compile happens once a GUI's clock runs: a command that needs
the engine waits for that too.

    load = start_engine(args, "uci")   # reads the checkpoint's config now; parameters and engine in a thread
    load.defaults.visits               # known before the network: the `uci` options' defaults
    engine = load.get()                # waits; raises EngineLoadError (one line) if the load failed

A config that is missing or invalid fails at once (the command's usual one-line error and exit code 2); a
parameter file found corrupt or unlike its config's network during the background load is reported as one line on
stderr when it is found, and to every later command that needs the network (GTP `? cannot load ...`, UCI
`info string error: cannot load ...`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, TextIO

from azjax.engines.clock import MOVE_OVERHEAD_S

if TYPE_CHECKING:
    from azjax.engines.engine import Engine
    from azjax.engines.position import Position


def one_line(message: str, limit: int = 300) -> str:
    """An error message fit for a one-line reply (GTP `?`, UCI `info string`): a newline inside would end the reply
    early; echoed input may be megabytes long."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."


class EngineLoadError(ValueError):
    """The background load failed; the message is one line."""


@dataclasses.dataclass(frozen=True)
class EngineDefaults:
    """What the handshake tells before the network is loaded.

    Attributes:
      game: the checkpoint's game (`go_9x9`, `chess`, ...).
      visits: simulations per search (`--visits`, else the config's `eval_simulations`).
      n_scl: the search-contempt node limit (0: off).
      tree_reuse: searches continue the last search's tree where they can (`Engine.tree_reuse`).
      twofold_draws: chess: a repeated position is a draw inside the search (lc0's TwoFoldDraws).
      move_overhead: seconds kept back from each move under a clock (`azjax.engines.clock`; `--move_overhead`).
    """

    game: str
    visits: int
    n_scl: int
    tree_reuse: bool = True
    twofold_draws: bool = False
    move_overhead: float = MOVE_OVERHEAD_S


class EngineLoad:
    """An engine being built by `build` in a daemon thread (started at once).

    Args:
      build: makes the engine (reads parameters, builds the network and the start position).
      defaults: what the handshake reports before the engine exists.
      what: names the source in error messages (`checkpoint DIR`).
      err: where a failed load is reported when it happens (default stderr), with `prefix` before it.
      prepare: then compile and time the engine's search (`Engine.prepare`) in the same thread; `get` waits for
        that too (`wait`, at the end of the input, does not: a `quit` during the compile exits at once).
    """

    def __init__(self, build: Callable[[], Engine], defaults: EngineDefaults, *, what: str = "the checkpoint",
                 err: TextIO | None = None, prefix: str = "", prepare: bool = False):
        self.defaults = defaults
        self.what = what
        self.error: str | None = None
        self._engine: Engine | None = None
        self._err = err
        self._prefix = prefix
        self._prepare = prepare
        self._done = threading.Event()
        self._ready = threading.Event()  # built and (with `prepare`) compiled
        self._thread = threading.Thread(target=self._load, args=(build,), name="azjax-engine-load", daemon=True)
        self._thread.start()

    @classmethod
    def ready(cls, engine: Engine) -> EngineLoad:
        """An engine already built (tests, callers that hold one): nothing to wait for."""
        defaults = EngineDefaults(game=engine.game.name, visits=engine.visits, n_scl=engine.n_scl,
                                  tree_reuse=engine.tree_reuse, twofold_draws=engine.config.twofold_draws)
        return cls(lambda: engine, defaults)

    def _load(self, build: Callable[[], Engine]) -> None:
        try:
            self._engine = build()
        except Exception as e:  # any failure becomes one line: a traceback from a thread would reach the GUI's log
            reason = str(e) if isinstance(e, (ValueError, OSError)) else f"{type(e).__name__}: {e}"
            self.error = one_line(f"cannot load {self.what}: {reason}")
            print(f"{self._prefix}error: {self.error}", file=self._err or sys.stderr, flush=True)
        finally:
            self._done.set()
        try:
            if self._engine is not None and self._prepare:
                self._engine.prepare()
        except Exception as e:  # said once; the command that needs the search compiles it again, and says why
            print(f"{self._prefix}error: cannot prepare the search: {one_line(f'{type(e).__name__}: {e}')}",
                  file=self._err or sys.stderr, flush=True)
        finally:
            self._ready.set()

    @property
    def done(self) -> bool:
        """The load has ended (the engine is built, or the load failed)."""
        return self._done.is_set()

    def wait(self) -> bool:
        """Waits for the load to end; True if it failed (its one-line error was reported when it did)."""
        self._done.wait()
        return self._engine is None

    @property
    def prepared(self) -> bool:
        """The engine is built and (with `prepare`) its search compiled, or the load has failed."""
        return self._ready.is_set()

    @property
    def failed(self) -> bool:
        return self._done.is_set() and self._engine is None

    def get(self) -> Engine:
        """The engine, once built and prepared (waits for the load); raises EngineLoadError if the load failed."""
        self._ready.wait()
        if self._engine is None:
            raise EngineLoadError(self.error or f"cannot load {self.what}")
        return self._engine


def exit_status(load: EngineLoad, process: bool) -> int:
    """The exit status of `azjax gtp` / `azjax uci` at the end of its input: 2 where the network could not load (a
    load still running is waited for, so that its failure is said), else 0.

    process: the front end ran on the process's own stdin and stdout. Then a search still compiling in the background
    (a `quit` during start-up) is not waited for: the process ends at once (`os._exit`, its output flushed), since an
    interpreter that shuts down while a thread is inside XLA's compiler aborts."""
    status = 2 if load.wait() else 0
    if process and not load.prepared:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def start_engine(args: argparse.Namespace, command: str, err: TextIO | None = None) -> EngineLoad:
    """The engine of `azjax gtp` / `azjax uci` (`args`: checkpoint, visits, n_scl, search, seed, tree_reuse; GTP also
    sensible_lambda and score_utility_factor; UCI also material_prior_weight), loading in the background. Reads the
    checkpoint's config first: a missing or invalid config, or an override it refuses, raises ValueError here."""
    from azjax.checkpoint import load_config

    config = load_config(args.checkpoint)
    config_overrides: dict[str, float] = {}
    # refused here, in one line, for a network without the heads they read
    for flag, name in (("sensible_lambda", "eval_sensible_lambda"), ("score_utility_factor", "score_utility_factor"),
                       ("material_prior_weight", "material_prior_weight")):
        if getattr(args, flag, None) is not None:
            config_overrides[name] = getattr(args, flag)
    if config_overrides:
        config = config.replace(**config_overrides)
    n_scl = config.n_scl if args.n_scl is None else args.n_scl  # --n_scl overrides the config's; 0: off
    tree_reuse = bool(getattr(args, "tree_reuse", True))
    overhead_ms = getattr(args, "move_overhead", None)
    defaults = EngineDefaults(game=config.game, visits=int(args.visits or config.eval_simulations), n_scl=n_scl,
                              tree_reuse=tree_reuse, twofold_draws=config.twofold_draws,
                              move_overhead=MOVE_OVERHEAD_S if overhead_ms is None else overhead_ms / 1000)
    kwargs = dict(visits=args.visits, n_scl=args.n_scl, search=getattr(args, "search", None),
                  seed=getattr(args, "seed", 0), tree_reuse=tree_reuse, config_overrides=config_overrides)

    def build() -> Engine:
        # Imported here: the network and search modules (flax, mctx, orbax) load in the background too.
        from azjax.engines.engine import Engine

        return Engine.from_checkpoint(args.checkpoint, **kwargs)

    # Compiled at launch, while the GUI sends its handshake and options: ready before the clock starts.
    return EngineLoad(build, defaults, what=f"checkpoint {args.checkpoint}", err=err, prefix=f"azjax {command}: ",
                      prepare=True)


class LoadingFrontEnd:
    """What a protocol front end (GTP, UCI) holds of its engine: the load, and the engine and position once loaded.

    `engine` may still be loading: the front end answers what it can at once and waits here for the rest.
    """

    # Whether the engine is prepared (its search compiled, `Engine.prepare`) before a command uses it: GTP, whose
    # first command that needs the engine may be a `genmove` on the clock; UCI prepares on `isready` instead.
    prepare_on_use = False

    def __init__(self, engine: Engine | EngineLoad) -> None:
        self.load = engine if isinstance(engine, EngineLoad) else EngineLoad.ready(engine)

    @property
    def engine(self) -> Engine:
        """The engine; waits for the background load (raises EngineLoadError, a ValueError, if it failed)."""
        engine = self.load.get()
        if self.prepare_on_use:
            engine.prepare()
        return engine

    @property
    def position(self) -> Position:
        return self.engine.position  # the game on the board: the engine searches it, commands change it


# The network's modules, for a front end's commands that need them once the engine has loaded: imported here, where
# the front ends defer every heavy import, so that the handshake answers before JAX starts.


def stone_status(engine: Engine, status: str) -> list[list[str]]:
    """`azjax.engines.final_status.stone_status`: the chains of `status` (alive, dead, seki), as GTP vertices."""
    from azjax.engines.final_status import stone_status as status_of

    return status_of(engine, status)


def sgf_io() -> ModuleType:
    """The SGF reader and writer (`azjax.engines.sgf_io`)."""
    from azjax.engines import sgf_io as module

    return module
