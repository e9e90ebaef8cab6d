"""The command line's argparse pieces: a parser without abbreviated flags and with one-line errors, the number
types its flags take, and a preset with the command line's config fields (`configured`; the fields' flags are
`azjax.config.config_flags`, below the command line, where the bench and the scripts take them from too).

Nothing here imports JAX or the games: the command line splits the CPU into devices and starts the many-host
runtime before anything does (`azjax.cli.main.main`).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from azjax.config import Config


class Parser(argparse.ArgumentParser):
    """argparse with no abbreviated flags (`--num_simulation 5` is an error, not `--num_simulations`) and one
    line per error: the usage of `train`, which lists every config field, would bury the message."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= `low`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    return parse


positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)


def even_games(text: str) -> int:
    """An argparse type: a positive even number of games (colours alternate)."""
    value = positive_int(text)
    if value % 2:
        raise argparse.ArgumentTypeError(f"must be a positive even number (colours alternate), got {value}")
    return value


def any_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects a whole number, got {text!r}") from None


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def unit_float(text: str) -> float:
    value = finite_float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


# Timings from committed files: results/connect_four/connect_four_quick/train_log.txt
# (scripts/reproduce_connect_four_quick.sh: 300 steps, real 18m37s on 2 idle cores, compile cache warm) and
# results/speed/compile_time.json (the first step cold: 567 s on 2 cores under load ~10).
PRESET_HELP = ("quick (CPU; Connect Four: 18.5 min for 300 steps on 2 idle cores once compiled, plus up to 9.5 min "
               "compiling the first step when the cache is cold: "
               "results/connect_four/connect_four_quick/train_log.txt, results/speed/compile_time.json), full (one "
               "GPU); connect_four: also hour (CPU, 1 h); go_7x7, go_9x9: also sai (default quick)")


def replay_ratio_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replay_ratio", type=positive_float, default=None, metavar="R",
                        help="positions trained on per position played: sets sgd_steps_per_step to "
                             "R x num_envs x moves_per_step / batch_size (rounded, at least 1)")


def configured(args: argparse.Namespace, game: str, name: str) -> Config:
    """The preset with the command line's fields, and its `--replay_ratio` where one is given."""
    from azjax.config import config_overrides, preset

    overrides_ = config_overrides(args)
    config = preset(game, name, **overrides_)
    if getattr(args, "replay_ratio", None) is not None:
        if "sgd_steps_per_step" in overrides_:
            raise ValueError("give --replay_ratio or --sgd_steps_per_step, not both (the ratio sets the steps)")
        config = config.with_replay_ratio(args.replay_ratio)
    return config
