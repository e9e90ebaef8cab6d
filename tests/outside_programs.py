"""The one place tests find the outside programs they play against or check with: GNU Go, Stockfish and
OpenSpiel (its MCTS-Solver). Where one is missing the test skips saying why and how to install it; in CI
(`CI=true`, where `.ci/run` installs them) a missing program is a failure, so a broken install cannot pass
as a row of skips.

    path = outside_program("gnugo")     # the executable's path, or skip (fail in CI)
    pyspiel = open_spiel()              # the pyspiel module, or skip (fail in CI)
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType

import pytest

# Debian and Ubuntu install games under /usr/games, which is not on every PATH (root's, containers').
GAME_DIRS = ("/usr/games", "/usr/local/games")
INSTALL = {
    "gnugo": "apt-get install gnugo",
    "stockfish": "apt-get install stockfish",
    "open-spiel": "pip install open-spiel",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def missing(what: str, why: str) -> None:
    """Skips the calling test, naming `what` is missing and how to install it; fails it in CI."""
    reason = f"{what} is not available ({why}); install it with `{INSTALL[what]}` (.ci/run does)"
    if in_ci():
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def find_program(name: str) -> str | None:
    """The path of executable `name` on PATH or in the games directories, else None."""
    return shutil.which(name) or next(filter(None, (shutil.which(name, path=d) for d in GAME_DIRS)), None)


def outside_program(name: str) -> str:
    """The path of executable `name` (`gnugo`, `stockfish`); skips the test (fails it in CI) where there is none."""
    path = find_program(name)
    if path is None:
        missing(name, f"no `{name}` on PATH or in {', '.join(GAME_DIRS)}")
    return path


def open_spiel() -> ModuleType:
    """OpenSpiel's `pyspiel` module; skips the test (fails it in CI) where it cannot be imported."""
    try:
        return importlib.import_module("pyspiel")
    except ImportError as e:
        missing("open-spiel", f"import pyspiel: {e}")
