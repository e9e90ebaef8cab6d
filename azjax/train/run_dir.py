"""A training run's directory through its life: opened new or resumed, then its config, logs and checkpoints.

    run = RunDir.open(run_dir, config, resume=False)  # the checks only: a refused start writes nothing
    log = run.begin(columns)                          # a new run's directory and config.json; the checkpoints
                                                      # and the logs (metrics.csv, eval.csv, TensorBoard)
    state, start = run.restore(trainer.init(seed))    # a resume: the latest checkpoint, the logs cut back to it
    run.checkpoint(step, state, measures)             # the orbax state, params.msgpack and the plots

What the files are is in `azjax.checkpoint`; what goes into them each step is the driver's
(`azjax.train.driver.train`). A sweep's runs write their files with the same `RunLog` and `write_checkpoint`.
"""

from __future__ import annotations

import csv
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

from azjax import checkpoint as ckpt
from azjax import hosts
from azjax.config import Config
from azjax.train.loop import LoopState, Trainer
from azjax.train.measures import RunMeasures
from azjax.train.plots import plot_run

# Columns of metrics.csv. The first group is what the loop computes (identical across a resume);
# the timing group depends on the machine.
METRIC_COLUMNS = [
    "step", "moves", "games", "first_player_wins", "draws", "first_player_losses", "mean_game_length",
    "loss", "policy_loss", "value_loss", "l2", "policy_target_entropy", "root_value", "replay_positions",
    "sgd_applied", "unvisited_greedy_moves",
]
# Then the value head's health columns (`ValueHead.columns`), from the SGD batches (NaN before SGD starts):
# the std over the batch of each scalar head's output, and the fraction of active units after each head's
# 1x1 conv; a head that outputs a constant shows a std near zero (see `HeadWatch`). Then the game starts'
# columns (`GameStarts.columns`; SAI: the empty board's sigmoid and the step's branch and new-game starts).
TIMING_COLUMNS = ["time_s", "step_s", "games_per_s", "positions_per_s", "sims_per_s"]
EVAL_COLUMNS = ["step", "time_s", "opponent", "games", "wins", "draws", "losses", "score", "score_low",
                "score_high", "elo", "elo_low", "elo_high"]


@dataclass
class RunDir:
    """One training run's directory, new or resumed, and the run's config (the saved one, on a resume).

    `open` checks and writes nothing; `begin` writes what a start writes and opens the checkpoints and logs, which
    `restore` and `checkpoint` then use."""

    path: Path
    config: Config
    resume: bool
    checkpointer: ckpt.StateCheckpointer | None = None
    log: RunLog | None = None

    @classmethod
    def open(cls, path: str | Path, config: Config | None, *, resume: bool) -> RunDir:
        """The run directory `path`, checked: a resume needs a run there (not an exported model) and takes its saved
        config (a given `config` must match it but for `ckpt.RESUME_MUTABLE_FIELDS`, which it sets); a new run
        needs a `config` and a directory that holds neither a run nor a model. Raises `ckpt.CheckpointError`."""
        path = Path(path)
        if resume:
            ckpt.check_resumable(path)  # an exported model is read-only: its params.msgpack would be overwritten
            saved = ckpt.load_config(path)
            if config is not None:
                diff = ckpt.config_mismatch(saved, config)
                if diff:
                    raise ckpt.CheckpointError(
                        f"cannot resume {path}: the given config differs from the saved one ({'; '.join(diff)})")
                saved = saved.replace(**{k: getattr(config, k) for k in ckpt.RESUME_MUTABLE_FIELDS})
            return cls(path, saved, resume)
        assert config is not None
        ckpt.refuse_model_dir(path, f"the run directory {path}")
        if (path / ckpt.CONFIG_FILE).exists():
            raise ckpt.CheckpointError(
                f"{path} already holds a run; use --resume {path} to continue it or pick a new --run_dir")
        return cls(path, config, resume)

    def begin(self, columns: list[str]) -> RunLog:
        """Writes what a start writes, once every check has passed: a new run's directory and config.json (the first
        process, after every process has looked). Then opens the checkpoints and the logs, with metrics.csv's
        loop columns `columns` (`azjax.train.driver.metric_columns`), and returns the logs (`log`)."""
        if not self.resume:
            hosts.barrier("azjax-new-run")  # every process has looked before the first one writes
            self.path.mkdir(parents=True, exist_ok=True)
            if hosts.is_primary():
                ckpt.save_config(self.path, self.config)
        self.checkpointer = ckpt.StateCheckpointer(self.path)
        self.log = RunLog(self.path, columns=columns, write=hosts.is_primary())
        return self.log

    def restore(self, state: LoopState) -> tuple[LoopState, int]:
        """(the state the run goes on from, its loop step). A resumed run's latest checkpoint is restored into the
        layout of `state` (`Trainer.init`'s) and its logs are cut back to that step; a new run, or one stopped before
        its first checkpoint, starts from `state` at step 0."""
        assert self.checkpointer is not None and self.log is not None, "begin() first"
        if not self.resume:
            return state, 0
        latest = self.checkpointer.latest_step()
        if latest is None and (self.path / ckpt.TRAINER_FILE).exists():
            return self._restore_portable(state)
        if latest is None:
            print("no checkpoint yet: starting from step 0", flush=True)
            self.log.truncate(0)
            return state, 0
        state = self.checkpointer.restore(latest, state)
        start = int(state.step)
        self.log.truncate(start)
        print(f"resumed from step {start}", flush=True)
        return state, start

    def _restore_portable(self, state: LoopState) -> tuple[LoopState, int]:
        """A resume where only the portable state came along (a committed run directory, copied to a new machine):
        weights, optimizer and counters from trainer.msgpack; the replay and the games in flight start afresh, and
        SGD waits until self-play has refilled `min_replay_size` positions, as at a run's start."""
        assert self.log is not None
        state = ckpt.load_portable_state(self.path, state)
        start = int(state.step)
        self.log.truncate(start)
        print(f"resumed from step {start} of {self.path / ckpt.TRAINER_FILE} (no loop checkpoint here): the replay "
              "and the games in flight start afresh", flush=True)
        return state, start

    def checkpoint(self, step: int, state: LoopState, measures: RunMeasures | None = None) -> None:
        """The run's checkpoint of loop step `step` (`write_checkpoint`)."""
        assert self.checkpointer is not None and self.log is not None, "begin() first"
        write_checkpoint(self.path, self.checkpointer, step, state, self.log, measures)

    def resume_note(self) -> str:
        """Where a resume would start, in words, for a run that stopped on a fault."""
        assert self.checkpointer is not None
        good = self.checkpointer.latest_step()
        if good is None:
            return "There is no checkpoint yet to resume from."
        return (f"The last good checkpoint is step {good} ({self.checkpointer.directory / str(good)}); "
                f"resume from it with `azjax train --resume {self.path}` after lowering learning_rate.")


def write_checkpoint(run_dir: Path, checkpointer: ckpt.StateCheckpointer, step: int, state: LoopState,
                     log: RunLog, measures: RunMeasures | None = None) -> None:
    """The run's checkpoint of `step`: its measures, the orbax state (every process its shards), and on the first
    process the exported parameters and the plots."""
    if measures is not None:  # first, so a checkpoint never has older measures beside it
        measures.save(step)
    checkpointer.save(step, state)  # every process writes its shards
    if not hosts.is_primary():  # the other hosts hold the same replicated parameters and metrics
        return
    ckpt.save_params(run_dir, state.exported_params)
    if jax.process_count() == 1:  # one host holds every device's part of the key and the game-starts pool
        ckpt.save_portable_state(run_dir, state)

    plot_run(run_dir, log.rows, log.evals)


@dataclass
class RunLog:
    """metrics.csv, eval.csv and TensorBoard for one run directory."""

    run_dir: Path
    columns: list[str] = field(default_factory=lambda: list(METRIC_COLUMNS))
    rows: list[dict[str, Any]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)
    write: bool = True  # False on every process but the first of a many-host run

    def __post_init__(self) -> None:
        self.rows = read_csv(self.run_dir / "metrics.csv")
        self.evals = read_csv(self.run_dir / "eval.csv")
        self._tb = None
        header = _read_header(self.run_dir / "metrics.csv")
        if self.write and header is not None and header != self.columns + TIMING_COLUMNS:
            # A run written before a column existed: rewrite it under today's header (new columns empty)
            # rather than append rows that no longer line up with it.
            _write_csv(self.run_dir / "metrics.csv", self.columns + TIMING_COLUMNS, self.rows)

    def truncate(self, step: int) -> None:
        """Forgets rows after `step` (written after the checkpoint a resume starts from). The files as they
        were are kept beside them (`metrics.csv.before-resume-TIME`) whenever rows are dropped."""
        rows = [r for r in self.rows if int(float(r["step"])) <= step]
        evals = [r for r in self.evals if int(float(r["step"])) <= step]
        dropped = (len(rows), len(evals)) != (len(self.rows), len(self.evals))
        self.rows, self.evals = rows, evals
        if not self.write:
            return
        if dropped:
            stamp = time.strftime("%Y%m%d_%H%M%S")
            for name in ("metrics.csv", "eval.csv"):
                if (self.run_dir / name).exists():
                    shutil.copy2(self.run_dir / name, self.run_dir / f"{name}.before-resume-{stamp}")
            print(f"rows after step {step} are forgotten; the files as they were are kept as "
                  f"{self.run_dir}/*.before-resume-{stamp}", flush=True)
        _write_csv(self.run_dir / "metrics.csv", self.columns + TIMING_COLUMNS, self.rows)
        _write_csv(self.run_dir / "eval.csv", EVAL_COLUMNS, self.evals)

    def tb(self) -> Any:
        if self._tb is None:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(self.run_dir / "tb"))
        return self._tb

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if not self.write:
            return
        _append_csv(self.run_dir / "metrics.csv", self.columns + TIMING_COLUMNS, row)
        for k, v in row.items():
            if k != "step" and isinstance(v, float) and math.isfinite(v):
                self.tb().add_scalar(f"train/{k}", v, int(row["step"]))

    def add_eval(self, row: dict[str, Any]) -> None:
        self.evals.append(row)
        if not self.write:
            return
        _append_csv(self.run_dir / "eval.csv", EVAL_COLUMNS, row)
        self.tb().add_scalar(f"eval/score_vs_{row['opponent']}", row["score"], int(row["step"]))

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def read_csv(file: Path) -> list[dict[str, Any]]:
    """The rows of `file`, without a last row cut short (a process killed while appending it)."""
    if not file.exists():
        return []
    text = file.read_text()
    rows = [dict(r) for r in csv.DictReader(text.splitlines())]
    if rows and (not text.endswith("\n") or None in rows[-1] or None in rows[-1].values()):
        rows.pop()
    return rows


def _read_header(file: Path) -> list[str] | None:
    if not file.exists():
        return None
    with open(file, newline="") as f:
        return next(csv.reader(f), None)


def _write_csv(file: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    tmp = file.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(file)


def _append_csv(file: Path, columns: list[str], row: dict[str, Any]) -> None:
    new = not file.exists()
    with open(file, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


def load_metrics(run_dir: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(metrics rows, eval rows) of a run, values as floats where numeric."""
    def conv(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for r in rows:
            out.append({k: _num(v) for k, v in r.items()})
        return out

    return conv(read_csv(Path(run_dir) / "metrics.csv")), conv(read_csv(Path(run_dir) / "eval.csv"))


def _num(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def params_at_step(run_dir: str | Path, step: int) -> Any:
    """The network parameters the run's orbax checkpoint of loop step `step` gives out (`exported_params`)."""
    config = ckpt.load_config(run_dir)
    checkpointer = ckpt.StateCheckpointer(run_dir)
    steps = sorted(checkpointer.manager.all_steps())
    if step not in steps:
        have = ", ".join(map(str, steps)) or "none"
        raise ckpt.CheckpointError(f"no checkpoint of step {step} in {run_dir} (checkpoints: {have})")
    trainer = Trainer(config)
    return checkpointer.restore(step, trainer.init(config.seed)).exported_params
