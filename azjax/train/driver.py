"""The host driver: runs the jitted loop step, and only logs, evaluates and checkpoints.

    summary = train(config, run_dir)            # a new run
    summary = train(None, run_dir, resume=True)  # continue a stopped run where it stopped

`train` reads top to bottom: the run directory is opened (new or resumed, checked before anything is written;
`azjax.train.run_dir`), the loop is built (`Trainer`) and checked from shapes, the state it starts from is restored
or warm-started, and then the loop runs: a step, its metrics row (`step_row`), the console (`Console`), an
evaluation and a checkpoint when due, until the end, a signal (`StopSignals`) or the time budget.

Everything that decides what the loop computes lives in the checkpointed `LoopState` (games in
flight, replay, params, optimizer, PRNG, counters), and evaluation keys are derived from
(seed, step), so a resumed run produces the same metrics as one that never stopped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from azjax import checkpoint as ckpt
from azjax.config import PRESETS, Config, inert_contempt, methods_on, preset
from azjax.play.agents import network_agent, rollout_mcts_agent
from azjax.play.arena import match
from azjax.train.loop import LoopState, Trainer, local_sizes
from azjax.train.measures import RunMeasures, measure_columns
from azjax.train.plan import check_run_fits
from azjax.train.run_dir import METRIC_COLUMNS, RunDir
from azjax.train.warm_start import layers_to_copy, load_source, warm_start


def metric_columns(trainer: Trainer) -> list[str]:
    """The loop's columns of metrics.csv for a trainer's config (without the timing columns), then the
    host-side measures the run takes (`azjax.train.measures`)."""
    return (METRIC_COLUMNS + list(trainer.value.columns) + list(trainer.starts.columns) + list(trainer.search.columns)
            + measure_columns(trainer))


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
    # The run directory and its config, checked. Every check runs before anything is written, so a refused start
    # leaves no run directory behind (which would then refuse the corrected command as "already holds a run").
    run = RunDir.open(run_dir, config, resume=resume)
    config = run.config
    local_sizes(config, jax.device_count())  # the checks that need the device count
    print(f"azjax run {run.path} ({'resuming' if resume else 'new'}), {jax.device_count()} device(s) "
          f"[{jax.devices()[0].platform}]\n{config_summary(config)} (every field: {run.path / ckpt.CONFIG_FILE})",
          flush=True)
    # A missing warm-start model, or one whose trunk differs, is refused before anything is written too. A resumed
    # run has its own weights: it needs the model only if it stopped before its first checkpoint.
    source = load_source(config) if config.init_from and not resume else None

    # The loop, checked from shapes before the step compiles or the run directory is written.
    trainer = Trainer(config)
    check_run_fits(trainer)
    if source is not None:
        layers_to_copy(trainer.abstract_state(local=True).params, source[1], config.init_from)

    # The run's files, and the state the run goes on from: its latest checkpoint, a warm start, or a fresh one.
    log = run.begin(metric_columns(trainer))
    state, start = run.restore(trainer.init(config.seed))
    if config.init_from and start == 0:
        state = warm_started(state, source or load_source(config), config.init_from)
    measures = RunMeasures(trainer, config, run.path, start)
    end = config.num_steps if stop_after is None else min(config.num_steps, start + stop_after)

    # The loop: a step, its row in metrics.csv, the console, then an evaluation and a checkpoint when due.
    console = Console(trainer, progress, start, end)
    elapsed0 = float(log.rows[-1]["time_s"]) if log.rows else 0.0  # the time a resumed run had run before
    signals = StopSignals()  # from here SIGINT and SIGTERM finish the step, write a checkpoint and stop the run
    t_run = time.perf_counter()
    step = start
    if step < end:
        print(COMPILE_NOTE, flush=True)
    try:
        while step < end and signals.received is None:
            if time_budget_s is not None and time.perf_counter() - t_run >= time_budget_s:
                break
            t0 = time.perf_counter()
            state, metrics = trainer.step(state)
            metrics = jax.device_get(metrics)
            step += 1
            dt = time.perf_counter() - t0
            console.tick(step)
            if step == start + 1:  # the step was compiled: its garbage goes back to the OS now, not minutes later
                release_freed_memory()
            row = step_row(trainer, step, step * config.moves_per_step, metrics)
            row.update(measures.row(step, state))
            row.update(timing_columns(config, row["games"], dt, elapsed0 + time.perf_counter() - t_run))
            log.add(row)
            fault = numerical_fault(row, state.params)
            if fault is not None:  # before any checkpoint of this step: the last good one stays the newest
                raise NumericalFault(f"step {step}: {fault}; stopped without saving this step. {run.resume_note()}")
            console.report(step, dt, row)
            if config.eval_every and (step % config.eval_every == 0 or step == config.num_steps):
                ev = evaluate(config, trainer, state.exported_params, step)
                release_freed_memory()  # the first evaluation compiles its agents
                ev["time_s"] = elapsed0 + time.perf_counter() - t_run
                log.add_eval(ev)
                console.say(f"step {step}: vs {ev['opponent']} score {ev['score']:.3f} "
                            f"[{ev['score_low']:.3f}, {ev['score_high']:.3f}] (W{ev['wins']} D{ev['draws']} "
                            f"L{ev['losses']})")
            if step % config.checkpoint_every == 0 or step == end:
                run.checkpoint(step, state, measures)
        if step < end and step % config.checkpoint_every != 0:  # stopped early (a signal, the time budget)
            run.checkpoint(step, state, measures)
            console.say(f"interrupted: checkpoint written at step {step}; continue with --resume {run.path}")
    finally:
        signals.restore()
        console.close()
        log.close()
    # A signal that came during the last step stopped nothing: the run ended as it would have.
    signum = signals.received if step < end else None
    return {"run_dir": str(run.path), "step": step, "finished": step >= config.num_steps,
            "last": log.rows[-1] if log.rows else None, "last_eval": log.evals[-1] if log.evals else None,
            "signal": signum}


def warm_started(state: LoopState, source: tuple[Config, Any], init_from: str) -> LoopState:
    """`state` with the layers of the warm-start model `source` (`load_source`) that fit copied into its parameters
    (and its weights' average), on the devices the parameters were on; says what was copied."""
    params, report = warm_start(jax.device_get(state.params), source, init_from)
    params = jax.tree.map(lambda new, old: jax.device_put(new, old.sharding), params, state.params)
    # The average starts at the same weights, in buffers of its own: the step donates both.
    average = None if state.params_average is None else jax.tree.map(jnp.copy, params)
    print(report.describe(), flush=True)
    return state.replace(params=params, params_average=average)


def timing_columns(config: Config, games: int, dt: float, time_s: float) -> dict[str, float]:
    """The timing columns of a metrics row (`TIMING_COLUMNS`) of a step that took `dt` seconds and ended `time_s`
    seconds into the run."""
    positions = config.num_envs * config.moves_per_step
    return {"time_s": time_s, "step_s": dt, "games_per_s": games / dt, "positions_per_s": positions / dt,
            "sims_per_s": positions * config.num_simulations / dt}


class StopSignals:
    """SIGINT and SIGTERM, caught from its making until `restore`: the number of the last one is kept in `received`
    (None until one comes), and the loop finishes the step under way, writes a checkpoint and stops. The command
    then exits 128 + it (130 for Ctrl-C)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._saved = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.received = signum

    def restore(self) -> None:
        """The handlers as they were before."""
        for s, h in self._saved.items():
            signal.signal(s, h)


class Console:
    """What a run shows while it runs: a progress bar where stderr is a terminal (made after the first step, whose
    compile would otherwise weigh in the bar's rate and ETA), else a log line every `log_every` steps; above either,
    the first step's time, warnings of heads that look dead (`HeadWatch`) and the driver's other lines (`say`)."""

    def __init__(self, trainer: Trainer, progress: bool, start: int, end: int) -> None:
        self.config = trainer.config
        self.progress = progress
        self.start = start
        self.bar: Any = None
        self.eta = StepClock(end)
        self.watch = HeadWatch([c for c in trainer.value.columns if c.endswith(("_std", "_active"))])
        self.spread = trainer.value.columns[0]  # value_std, or alpha_std for SAI

    def tick(self, step: int) -> None:
        """Step `step` has just finished (the ETA's clock)."""
        self.eta.tick(step)

    def report(self, step: int, dt: float, row: dict[str, Any]) -> None:
        """Shows step `step`, which took `dt` seconds, from its metrics row."""
        config, spread = self.config, self.spread
        for warning in self.watch.update(row):
            self.say(warning)
        if step == self.start + 1:
            self.say(f"step {step} (compiled and run) took {dt:.1f} s")
            self.bar = progress_bar(self.progress, step, config.num_steps)
        elif self.bar is not None:
            self.bar.update(1)
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{row['loss']:.3f}", games_s=f"{row['games_per_s']:.0f}",
                                 len=f"{row['mean_game_length']:.1f}", **{spread: f"{row[spread]:.3g}"})
        elif step % config.log_every == 0:
            print(f"step {step}/{config.num_steps} loss {row['loss']:.3f} games/s {row['games_per_s']:.1f} "
                  f"sims/s {row['sims_per_s']:.0f} len {row['mean_game_length']:.1f} {spread} {row[spread]:.3g} "
                  f"head active >= {min(row[c] for c in self.watch.columns if c.endswith('_active')):.2f} "
                  f"eta {self.eta.text(step)}", flush=True)

    def say(self, text: str) -> None:
        say(self.bar, text)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def release_freed_memory() -> bool:
    """Hands the heap's free pages back to the operating system (glibc's `malloc_trim`); False where there is no
    glibc. Compiling the loop step frees nearly as much memory as the run then uses (chess quick: about 500 MiB
    of 2.8 GiB), which glibc keeps mapped until some later free happens to trim it, so without this a run's
    resident memory falls by a fifth at a random moment, minutes in (results/reliability/reliability.json, `memory`)."""
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
