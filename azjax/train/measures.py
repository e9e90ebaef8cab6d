"""Host-side measures of a training run that the jitted loop does not compute, Go-Exploit's (docs/methods.md
section 3, "Measures"), gathered per run by `RunMeasures` into metrics.csv:

  * `unique_states`, `unique_states_new`: distinct positions visited so far and new this step (games whose
    observation is the position; the counts by depth go to unique_states.json at each checkpoint);
  * `value_loss_visited`, `value_loss_search` at evaluation steps (`value_probe_games` > 0;
    `azjax.play.value_probe`), NaN in the other rows.

`UniqueStates`: Go-Exploit's count of the distinct non-terminal positions self-play visited, by depth
(Trudeau & Bowling, Figure 3; docs/methods.md section 3, "Measures"). Exact, with a set of the positions'
bytes: cheap where the observation alone identifies the position (`Game.observation_is_position`,
Connect Four: own and opponent stones), where the depth is the number of stones on the board. Every
position the loop writes to its replay is one self-play visited (finished games restart at once, so
none is terminal).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from azjax.config import Config
from azjax.play.value_probe import value_probe

UNIQUE_STATES_DIR = "unique_states"  # the set itself after each of the last checkpoints' steps, for a resume
UNIQUE_STATES_SUMMARY = "unique_states.json"  # {"step", "total", "by_depth"}: what to read
UNIQUE_STATES_COLUMNS = ["unique_states", "unique_states_new"]
VALUE_PROBE_COLUMNS = ["value_loss_visited", "value_loss_search"]


class UniqueStates:
    """The distinct positions seen so far, with how many there are at each depth."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.depth_counts: dict[int, int] = {}
        self.step = 0  # the loop step the set is up to date with

    @property
    def total(self) -> int:
        return len(self.seen)

    def by_depth(self) -> list[int]:
        """Distinct positions at depth 0, 1, ... up to the deepest seen."""
        return [self.depth_counts.get(d, 0) for d in range(max(self.depth_counts, default=-1) + 1)]

    @staticmethod
    def keys(observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(keys uint8 [M, K], depths int [M]) of positions ([M, *obs_shape] boolean observations): a key is the
        packed observation, the depth its number of stones."""
        flat = np.asarray(observations).reshape(len(observations), -1).astype(bool)
        return np.packbits(flat, axis=1), flat.sum(axis=1)

    def contains(self, observations: np.ndarray) -> np.ndarray:
        """bool [M]: which of the positions ([M, *obs_shape] observations) are in the set."""
        return np.array([key.tobytes() in self.seen for key in self.keys(observations)[0]], bool)

    def add(self, observations: np.ndarray) -> int:
        """Adds positions ([M, *obs_shape] observations); returns how many were new."""
        keys, depths = self.keys(observations)
        new = 0
        for key, depth in zip(keys, depths, strict=True):
            b = key.tobytes()
            if b not in self.seen:
                self.seen.add(b)
                self.depth_counts[int(depth)] = self.depth_counts.get(int(depth), 0) + 1
                new += 1
        return new

    def save(self, run_dir: Path, step: int, keep: int = 3) -> None:
        """Writes the set as it stands after loop step `step` (atomically), one file a step beside the loop's
        checkpoints, keeping the newest `keep`: a resume from any kept checkpoint finds the set of its step."""
        directory = run_dir / UNIQUE_STATES_DIR
        directory.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.seen)
        packed = np.stack([np.frombuffer(k, np.uint8) for k in keys]) if keys else np.zeros((0, 0), np.uint8)
        depths = np.array([[d, c] for d, c in sorted(self.depth_counts.items())], np.int64).reshape(-1, 2)
        tmp = directory / f"{step}.tmp.npz"
        np.savez_compressed(tmp, keys=packed, depth_counts=depths, step=np.int64(step))
        tmp.replace(directory / f"{step}.npz")
        for old in sorted(_saved_steps(directory))[:-keep]:
            (directory / f"{old}.npz").unlink(missing_ok=True)
        summary = {"step": step, "total": self.total, "by_depth": self.by_depth()}
        (run_dir / UNIQUE_STATES_SUMMARY).write_text(json.dumps(summary) + "\n")
        self.step = step

    @staticmethod
    def saved_steps(run_dir: Path) -> list[int]:
        """The loop steps whose sets a run kept, oldest first."""
        directory = run_dir / UNIQUE_STATES_DIR
        return sorted(_saved_steps(directory)) if directory.is_dir() else []

    @classmethod
    def load(cls, run_dir: Path, step: int) -> UniqueStates | None:
        """The set a run saved after loop step `step` (None if it has none)."""
        file = run_dir / UNIQUE_STATES_DIR / f"{step}.npz"
        if not file.exists():
            return None
        with np.load(file) as data:
            out = cls()
            out.seen = {row.tobytes() for row in data["keys"]}
            out.depth_counts = {int(d): int(c) for d, c in data["depth_counts"]}
            out.step = int(data["step"])
        return out


def _saved_steps(directory: Path) -> list[int]:
    return [int(f.name[:-4]) for f in directory.glob("*.npz") if f.name[:-4].isdigit()]


def written_rows(moves_before: int, moves_after: int, num_envs: int, replay_size: int,
                 num_devices: int) -> np.ndarray:
    """int [M]: the global replay entries the loop wrote during moves [moves_before, moves_after).

    Each device writes its `num_envs` games (local) at local entries [(m * num_envs) % replay_size, + num_envs)
    of its own `replay_size` shard; shards are laid out one after another along the replay's leading axis.
    """
    local = np.concatenate([(m * num_envs) % replay_size + np.arange(num_envs)
                            for m in range(moves_before, moves_after)]) if moves_after > moves_before else \
        np.zeros((0,), np.int64)
    return (np.arange(num_devices)[:, None] * replay_size + local[None, :]).reshape(-1)


def count_written(unique: UniqueStates, replay_obs: Any, moves_before: int, moves_after: int, num_envs: int,
                  replay_size: int, num_devices: int, unpack: Callable[[Any], Any] | None = None) -> int:
    """Adds the positions written during moves [moves_before, moves_after) to `unique`; returns the new ones.
    `replay_obs`: the replay's stored observations, which `unpack` (`Game.unpack_observation`; default: none
    needed) turns into observations."""
    rows = written_rows(moves_before, moves_after, num_envs, replay_size, num_devices)
    stored = jax.tree.map(lambda x: np.asarray(x[rows]), replay_obs)
    return unique.add(np.asarray(stored if unpack is None else unpack(stored)))


def counts_unique_states(trainer: Any) -> bool:
    """Whether a run counts distinct positions: one process, a game whose observation is the position."""
    return trainer.game.observation_is_position and jax.process_count() == 1


def probes_values(config: Config) -> bool:
    return config.value_probe_games > 0 and config.eval_every > 0


def measure_columns(trainer: Any) -> list[str]:
    """The columns `RunMeasures` adds to metrics.csv for a trainer's config."""
    return ((UNIQUE_STATES_COLUMNS if counts_unique_states(trainer) else [])
            + (VALUE_PROBE_COLUMNS if probes_values(trainer.config) else []))


class RunMeasures:
    """One run's host-side measures: `row(step, state)` after each loop step, `save(step)` with each checkpoint.

    trainer: the run's `Trainer` (or a sweep's shared one); config: the run's own config; start: the loop
    step the run starts from (a resume reloads the distinct positions saved with that step's checkpoint).
    """

    def __init__(self, trainer: Any, config: Config, run_dir: Path, start: int) -> None:
        self.trainer, self.config, self.run_dir = trainer, config, Path(run_dir)
        self.unique = _unique_states(self.run_dir, start) if counts_unique_states(trainer) else None
        self.probe = value_probe(config, trainer.game, config.value_probe_games) if probes_values(config) else None

    def row(self, step: int, state: Any) -> dict[str, float]:
        """The measures of loop step `step`, `state` being the run's loop state after it."""
        cfg, out = self.config, {}
        if self.unique is not None:
            sizes = self.trainer.sizes
            new = count_written(self.unique, state.replay.obs, (step - 1) * cfg.moves_per_step,
                                step * cfg.moves_per_step, sizes.num_envs, sizes.replay_size, sizes.num_devices,
                                self.trainer.game.unpack_observation)
            out.update(unique_states=self.unique.total, unique_states_new=new)
        if self.probe is not None:
            losses = {}
            if step % cfg.eval_every == 0 or step == cfg.num_steps:
                key = jax.random.fold_in(jax.random.key(cfg.seed + 2), step)
                losses = jax.device_get(self.probe(state.exported_params, key))
            out.update({k: float(losses.get(k, math.nan)) for k in VALUE_PROBE_COLUMNS})
        return out

    def save(self, step: int) -> None:
        if self.unique is not None:
            self.unique.save(self.run_dir, step)


def _unique_states(run_dir: Path, start: int) -> UniqueStates:
    """The distinct positions a run has visited up to loop step `start` (its saved set on a resume)."""
    if start == 0:
        return UniqueStates()
    saved = UniqueStates.load(run_dir, start)
    if saved is not None:
        return saved
    print(f"{run_dir}: no saved set of distinct positions for step {start}: unique_states counts again from "
          f"step {start}", flush=True)
    return UniqueStates()
