"""The host driver: runs the jitted loop step, and only logs, evaluates and checkpoints.

    summary = train(config, run_dir)            # a new run
    summary = train(None, run_dir, resume=True)  # continue a stopped run where it stopped

Everything that decides what the loop computes lives in the checkpointed `LoopState` (games in
flight, replay, params, optimizer, PRNG, counters), and evaluation keys are derived from
(seed, step), so a resumed run produces the same metrics as one that never stopped.
"""

from __future__ import annotations

import csv
import ctypes
import ctypes.util
import functools
import math
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from azjax import checkpoint as ckpt
from azjax import hosts
from azjax.config import PRESETS, Config, inert_contempt, methods_on, preset
from azjax.play.agents import network_agent, rollout_mcts_agent
from azjax.play.arena import match
from azjax.train.loop import LoopState, Trainer, local_sizes
from azjax.train.measures import RunMeasures, measure_columns
from azjax.train.plan import check_run_fits
from azjax.train.plots import plot_run
from azjax.train.warm_start import layers_to_copy, load_source, warm_start

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


def metric_columns(trainer: Trainer) -> list[str]:
    """The loop's columns of metrics.csv for a trainer's config (without the timing columns), then the
    host-side measures the run takes (`azjax.train.measures`)."""
    return (METRIC_COLUMNS + list(trainer.value.columns) + list(trainer.starts.columns) + list(trainer.search.columns)
            + measure_columns(trainer))


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


def step_row(trainer: Trainer, step: int, moves: int, m: dict[str, Any]) -> dict[str, Any]:
    """The deterministic part of one metrics row from the loop's metrics dict."""
    games = int(m["games"])
    return {
        "step": step,
        "moves": moves,
        "games": games,
        "first_player_wins": int(m["first_player_wins"]),
        "draws": int(m["draws"]),
        "first_player_losses": int(m["first_player_losses"]),
        "mean_game_length": float(m["game_length_sum"]) / games if games else float("nan"),
        **{k: float(m[k]) for k in ("loss", "policy_loss", "value_loss", "l2", "policy_target_entropy",
                                     "root_value")},
        "replay_positions": int(m["replay_positions"]),
        "sgd_applied": int(bool(m["sgd_applied"])),
        "unvisited_greedy_moves": int(m["unvisited_greedy_moves"]),
        **{k: float(m.get(k, math.nan)) for k in trainer.value.columns},  # legacy heads: no *_active
        **trainer.starts.row(m),
        **trainer.search.row(m),
    }


@dataclass
class HeadWatch:
    """Warns once when a head looks dead: its output std over the SGD batch stays below `min_std`, or none
    of its units after the 1x1 conv is active, for `patience` SGD steps in a row."""

    columns: list[str]
    min_std: float = 1e-4
    patience: int = 20
    _since: dict[str, int] = field(default_factory=dict)
    _run: dict[str, int] = field(default_factory=dict)
    _warned: set[str] = field(default_factory=set)

    def update(self, row: dict[str, Any]) -> list[str]:
        """The warnings this metrics row raises (each head warns once until it recovers)."""
        if not row.get("sgd_applied"):
            return []
        warnings = []
        for col in self.columns:
            value = float(row[col])
            dead = value < self.min_std if col.endswith("_std") else value <= 0.0
            if not dead:
                self._run[col] = 0
                self._warned.discard(col)
                continue
            if self._run.get(col, 0) == 0:
                self._since[col] = int(row["step"])
            self._run[col] = self._run.get(col, 0) + 1
            if self._run[col] >= self.patience and col not in self._warned:
                self._warned.add(col)
                what = "output std over the batch" if col.endswith("_std") else "fraction of active units"
                limit = f"below {self.min_std:g}" if col.endswith("_std") else "at 0"
                warnings.append(
                    f"WARNING: {col.rsplit('_', 1)[0]} head: {what} has stayed {limit} for {self._run[col]} SGD "
                    f"steps (steps {self._since[col]}-{row['step']}): the head outputs a constant, and what is "
                    f"built on it (values, searches, results) is an artifact")
        return warnings


def evaluate(config: Config, trainer: Trainer, params: Any, step: int) -> dict[str, Any]:
    """The network + search against rollout MCTS (colours alternating)."""

    agent = network_agent(config, trainer.game, params, num_simulations=config.eval_simulations)
    opponent = rollout_mcts_agent(trainer.game, config.eval_opponent_simulations)
    key = jax.random.fold_in(jax.random.key(config.seed + 1), step)
    result = match(trainer.game, agent, opponent, config.eval_games, key).to_dict()
    return {"step": step, "opponent": f"mcts{config.eval_opponent_simulations}", **result}


def train(config: Config | None, run_dir: str | Path, *, resume: bool = False, progress: bool = True,
          stop_after: int | None = None, time_budget_s: float | None = None) -> dict[str, Any]:
    """Trains until `config.num_steps` loop steps (or `stop_after` more steps) are done.

    Args:
      config: the run's config; with `resume`, None means the saved one, and a given one must match.
      run_dir: the run directory (created if new).
      resume: continue from the latest checkpoint in `run_dir`.
      progress: show a progress bar.
      stop_after: stop (with a checkpoint) after this many more steps, as if killed (`azjax train
        --stop_after`); the config, and so the compiled program, stays the run's.
      time_budget_s: stop (with a checkpoint) once this call has run this many seconds (the step under
        way finishes first); the run can be resumed.

    Returns the run directory, the step reached, whether the run finished, its last metrics row and evaluation,
    and `signal`: the number of the signal (SIGINT, SIGTERM) that stopped it before its end (after the step under
    way and a checkpoint), else None.
    """
    run_dir = Path(run_dir)
    if resume:
        ckpt.check_resumable(run_dir)  # an exported model is read-only: its params.msgpack would be overwritten
        saved = ckpt.load_config(run_dir)
        if config is not None:
            diff = ckpt.config_mismatch(saved, config)
            if diff:
                raise ckpt.CheckpointError(
                    f"cannot resume {run_dir}: the given config differs from the saved one ({'; '.join(diff)})")
            saved = saved.replace(**{k: getattr(config, k) for k in ckpt.RESUME_MUTABLE_FIELDS})
        config = saved
    else:
        assert config is not None
        ckpt.refuse_model_dir(run_dir, f"the run directory {run_dir}")
        if (run_dir / ckpt.CONFIG_FILE).exists():
            raise ckpt.CheckpointError(
                f"{run_dir} already holds a run; use --resume {run_dir} to continue it or pick a new --run_dir")
    # Every check that needs the device count runs before anything is written, so a refused start leaves no
    # run directory behind (which would then refuse the corrected command as "already holds a run").
    local_sizes(config, jax.device_count())
    print(f"azjax run {run_dir} ({'resuming' if resume else 'new'}), {jax.device_count()} device(s) "
          f"[{jax.devices()[0].platform}]\n{config_summary(config)} (every field: {run_dir / ckpt.CONFIG_FILE})",
          flush=True)
    # A missing warm-start model, or one whose trunk differs, is refused before anything is written too. A resumed
    # run has its own weights: it needs the model only if it stopped before its first checkpoint.
    source = load_source(config) if config.init_from and not resume else None
    trainer = Trainer(config)
    check_run_fits(trainer)  # from shapes, before the step compiles or the run directory is written
    if source is not None:
        layers_to_copy(trainer.abstract_state(local=True).params, source[1], config.init_from)
    if not resume:
        hosts.barrier("azjax-new-run")  # every process has looked before the first one writes
        run_dir.mkdir(parents=True, exist_ok=True)
        if hosts.is_primary():
            ckpt.save_config(run_dir, config)
    checkpointer = ckpt.StateCheckpointer(run_dir)
    log = RunLog(run_dir, columns=metric_columns(trainer), write=hosts.is_primary())
    state = trainer.init(config.seed)
    start = 0
    if resume:
        latest = checkpointer.latest_step()
        if latest is None:
            print("no checkpoint yet: starting from step 0", flush=True)
            log.truncate(0)
        else:
            state = checkpointer.restore(latest, state)
            start = int(state.step)
            log.truncate(start)
            print(f"resumed from step {start}", flush=True)

    if config.init_from and start == 0:
        source = source or load_source(config)
        params, report = warm_start(jax.device_get(state.params), source, config.init_from)
        params = jax.tree.map(lambda new, old: jax.device_put(new, old.sharding), params, state.params)
        # The average starts at the same weights, in buffers of its own: the step donates both.
        average = None if state.params_average is None else jax.tree.map(jnp.copy, params)
        state = state.replace(params=params, params_average=average)
        print(report.describe(), flush=True)

    measures = RunMeasures(trainer, config, run_dir, start)
    end = config.num_steps if stop_after is None else min(config.num_steps, start + stop_after)
    elapsed0 = float(log.rows[-1]["time_s"]) if log.rows else 0.0
    positions_per_step = config.num_envs * config.moves_per_step
    bar = None  # made after the first step: its compile would otherwise weigh in the bar's rate and ETA
    eta = StepClock(end)
    watch = HeadWatch([c for c in trainer.value.columns if c.endswith(("_std", "_active"))])
    spread = trainer.value.columns[0]  # value_std, or alpha_std for SAI
    interrupted = False
    stopped_by: int | None = None  # the signal that stopped the run: the command exits 128 + it (130 for Ctrl-C)

    def on_signal(signum: int, frame: Any) -> None:  # finish the step, checkpoint, then stop
        nonlocal interrupted, stopped_by
        interrupted = True
        stopped_by = signum

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    t_run = time.perf_counter()
    step = start
    if step < end:
        print(COMPILE_NOTE, flush=True)
    try:
        while step < end and not interrupted:
            if time_budget_s is not None and time.perf_counter() - t_run >= time_budget_s:
                interrupted = True
                break
            t0 = time.perf_counter()
            state, metrics = trainer.step(state)
            metrics = jax.device_get(metrics)
            step += 1
            dt = time.perf_counter() - t0
            eta.tick(step)
            if step == start + 1:  # the step was compiled: its garbage goes back to the OS now, not minutes later
                release_freed_memory()
            row = step_row(trainer, step, step * config.moves_per_step, metrics)
            row.update(measures.row(step, state))
            row.update(
                time_s=elapsed0 + time.perf_counter() - t_run,
                step_s=dt,
                games_per_s=row["games"] / dt,
                positions_per_s=positions_per_step / dt,
                sims_per_s=positions_per_step * config.num_simulations / dt,
            )
            log.add(row)
            fault = numerical_fault(row, state.params)
            if fault is not None:  # before any checkpoint of this step: the last good one stays the newest
                good = checkpointer.latest_step()
                raise NumericalFault(
                    f"step {step}: {fault}; stopped without saving this step. "
                    + (f"The last good checkpoint is step {good} ({checkpointer.directory / str(good)}); "
                       f"resume from it with `azjax train --resume {run_dir}` after lowering learning_rate."
                       if good is not None else "There is no checkpoint yet to resume from."))
            for warning in watch.update(row):
                say(bar, warning)
            if step == start + 1:
                say(bar, f"step {step} (compiled and run) took {dt:.1f} s")
                bar = progress_bar(progress, step, config.num_steps)
            elif bar is not None:
                bar.update(1)
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.3f}", games_s=f"{row['games_per_s']:.0f}",
                                len=f"{row['mean_game_length']:.1f}", **{spread: f"{row[spread]:.3g}"})
            elif step % config.log_every == 0:
                print(f"step {step}/{config.num_steps} loss {row['loss']:.3f} games/s {row['games_per_s']:.1f} "
                      f"sims/s {row['sims_per_s']:.0f} len {row['mean_game_length']:.1f} {spread} {row[spread]:.3g} "
                      f"head active >= {min(row[c] for c in watch.columns if c.endswith('_active')):.2f} "
                      f"eta {eta.text(step)}", flush=True)
            if config.eval_every and (step % config.eval_every == 0 or step == config.num_steps):
                ev = evaluate(config, trainer, state.exported_params, step)
                release_freed_memory()  # the first evaluation compiles its agents
                ev["time_s"] = elapsed0 + time.perf_counter() - t_run
                log.add_eval(ev)
                say(bar, f"step {step}: vs {ev['opponent']} score {ev['score']:.3f} "
                         f"[{ev['score_low']:.3f}, {ev['score_high']:.3f}] (W{ev['wins']} D{ev['draws']} "
                         f"L{ev['losses']})")
            if step % config.checkpoint_every == 0 or step == end:
                write_checkpoint(run_dir, checkpointer, step, state, log, measures)
        if interrupted and step % config.checkpoint_every != 0 and step != end:
            write_checkpoint(run_dir, checkpointer, step, state, log, measures)
            say(bar, f"interrupted: checkpoint written at step {step}; continue with --resume {run_dir}")
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        if bar is not None:
            bar.close()
        log.close()
    # A signal that came during the last step stopped nothing: the run ended as it would have.
    signum = stopped_by if stopped_by is not None and step < end else None
    return {"run_dir": str(run_dir), "step": step, "finished": step >= config.num_steps,
            "last": log.rows[-1] if log.rows else None, "last_eval": log.evals[-1] if log.evals else None,
            "signal": signum}


def release_freed_memory() -> bool:
    """Hands the heap's free pages back to the operating system (glibc's `malloc_trim`); False where there is no
    glibc. Compiling the loop step frees nearly as much memory as the run then uses (chess quick: about 500 MiB
    of 2.8 GiB), which glibc keeps mapped until some later free happens to trim it, so without this a run's
    resident memory falls by a fifth at a random moment, minutes in (results/reliability.json, `memory`)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # musl and other C libraries have no malloc_trim
        return None


class NumericalFault(FloatingPointError):
    """A NaN or inf in the loss or the parameters: the run stops rather than train on it."""


@jax.jit
def _all_finite(params: Any) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))


def numerical_fault(row: dict[str, Any], params: Any) -> str | None:
    """What is not finite after a loop step (None when all is well). The loss is only looked at where
    SGD ran (the loss columns are NaN by design before the replay holds min_replay_size positions)."""
    if row.get("sgd_applied", 0) > 0:
        bad = [k for k in ("loss", "policy_loss", "value_loss") if k in row and not math.isfinite(row[k])]
        if bad:
            return f"the {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} {row[bad[0]]}"
    if not bool(_all_finite(params)):
        return "the network parameters hold NaN or inf"
    return None


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

    plot_run(run_dir, log.rows, log.evals)


COMPILE_NOTE = "compiling the training step (first time: minutes on a CPU; cached after)"


def config_summary(config: Config) -> str:
    """The config as the preset of its game closest to it and the fields that differ from that preset."""
    fields = config.to_dict()
    best: tuple[str, list[str]] | None = None
    for name in PRESETS[config.game]:
        base = preset(config.game, name).to_dict()
        diff = [k for k in fields if fields[k] != base[k]]
        if best is None or len(diff) < len(best[1]):
            best = (name, diff)
    assert best is not None
    name, diff = best
    lines = [f"config: {config.game} preset {name!r}" + (", changed:" if diff else ", unchanged")]
    lines += [f"  {k} = {fields[k]!r}" for k in diff]
    lines.append(f"  methods on top of AlphaZero: {', '.join(methods_on(config)) or 'none'}")
    if (inert := inert_contempt(config)) is not None:
        lines.append(f"  note: search-contempt's {inert}")
    lines.append(f"  replay ratio {config.replay_ratio:.2f} (positions trained on per position played)")
    return "\n".join(lines)


@dataclass
class StepClock:
    """The time left to step `end`, from the steps after this process's first (which compiles the loop and
    would make an estimate of many times the real one)."""

    end: int
    _first: tuple[int, float] | None = None
    _last: tuple[int, float] | None = None

    def tick(self, step: int) -> None:
        now = time.perf_counter()
        if self._first is None:
            self._first = (step, now)
        self._last = (step, now)

    def seconds_left(self, step: int) -> float | None:
        if self._first is None or self._last is None or self._last[0] <= self._first[0]:
            return None
        per_step = (self._last[1] - self._first[1]) / (self._last[0] - self._first[0])
        return per_step * max(self.end - step, 0)

    def text(self, step: int) -> str:
        left = self.seconds_left(step)
        if left is None:
            return "after the next step"
        m, s = divmod(int(round(left)), 60)
        h, m = divmod(m, 60)
        return f"{h}:{m:02d}:{s:02d}"


def _terminal_columns(stream: Any) -> int:
    """The width of the terminal behind `stream`; 0 where there is none or it reports none."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def progress_bar(enabled: bool, start: int, total: int, stream: Any = None) -> Any:
    """A tqdm bar on stderr, or None (then the caller prints plain log lines): when progress is off, stderr is
    not a terminal, or the terminal reports no width (some CI and notebook consoles: a bar would print nothing)."""
    stream = sys.stderr if stream is None else stream
    if not enabled or not stream.isatty() or _terminal_columns(stream) < 1:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, file=stream)


def say(bar: Any, text: str) -> None:
    """A line of the run's log: above the progress bar `bar`, or printed where there is none."""
    if bar is not None:
        bar.write(text)
    else:
        print(text, flush=True)


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
