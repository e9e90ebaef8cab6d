"""Batched sweeps: many training runs as one jitted program.

    sweep = Sweep(configs)                  # runs that differ only in run-axis fields (seed, lr, ...)
    states = sweep.init()                   # the loop state of every run, leading run axis [R, ...]
    states, metrics = sweep.step(states)    # one loop step of every run at once; each metric [R]

The loop's state gets a leading run axis, and one jitted step advances every run: `jax.vmap` over the
runs of the single-run step (`Trainer.step_local`), the run-axis fields that differ between runs
passed as traced values (`Trainer.rebound`). Runs that need a different program (another network size,
batch, search kind, a method switched on in some and off in others) are split into programs by
`group_programs`, and `run_sweep` runs those one after another.

Devices: a 2-D mesh (`runs`, `data`): runs split across devices when the run count allows it, and each
run's games split across the rest (the single-run data parallelism, with its collectives over `data`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from azjax import checkpoint as ckpt
from azjax.config import Config, parse_field
from azjax.play.arena import t_interval
from azjax.train.driver import (
    COMPILE_NOTE,
    HeadWatch,
    evaluate,
    metric_columns,
    numerical_fault,
    progress_bar,
    say,
    step_row,
    timing_columns,
)
from azjax.train.loop import AXIS, LoopState, Trainer
from azjax.train.measures import RunMeasures
from azjax.train.plan import check_run_fits
from azjax.train.plots import save_figure
from azjax.train.run_dir import RunLog, load_metrics, write_checkpoint

RUNS = "runs"

# Fields that ride the run axis: values that change no array shape and no component, so one program
# serves every value. The others (network, batch, simulations, search kind, ...) split programs.
RUN_AXIS_FIELDS = (
    "seed", "learning_rate", "lr_end_fraction", "weight_decay", "pb_c_init", "dirichlet_alpha",
    "dirichlet_fraction", "gumbel_scale", "temperature_moves", "value_target_q_weight", "value_loss_weight",
    "n_scl", "sensible_lambda", "branch_prob", "sai_official_komi_share", "start_state_prob", "td_lambda",
    "full_search_prob",
)
# Run-axis fields that also switch a component on, with the value at which it is off and its method reduces to
# AlphaZero bit for bit: a program holds the component when any of its runs switches it on, and its runs at the
# off value compute what they would without it, to float rounding as every vmapped run does (q weight 0:
# (1 - 0) z + 0 q = z; lambda = 1: the outcome; start_state_prob = 1: the same fresh games).
SWITCH_OFF_VALUES = {"value_target_q_weight": 0.0, "start_state_prob": 1.0, "td_lambda": 1.0}
# Run-axis fields whose off value takes another code path that is not bit for bit the same: off and on split
# programs; values that are all on ride one.
SPLIT_AT_OFF_VALUES = {"n_scl": 0, "sensible_lambda": 0.0, "branch_prob": 0.0, "full_search_prob": 1.0}
# Host-side fields: logging, checkpoints and evaluation; they never change the program.
HOST_FIELDS = ("log_every", "checkpoint_every", "eval_every", "eval_games", "eval_simulations",
               "eval_opponent_simulations", "eval_search", "eval_max_num_considered_actions", "eval_gumbel_c_scale")


def program_key(config: Config) -> tuple[Any, ...]:
    """What decides a run's program: every field but the run-axis and host ones, and which of
    `SPLIT_AT_OFF_VALUES` are off."""
    skip = set(RUN_AXIS_FIELDS) | set(HOST_FIELDS)
    fields = tuple((f.name, getattr(config, f.name)) for f in dataclasses.fields(config) if f.name not in skip)
    return (*fields, *((f"{name} off", getattr(config, name) == off) for name, off in SPLIT_AT_OFF_VALUES.items()))


def program_splitters(configs: Sequence[Config]) -> list[str]:
    """The fields whose values split `configs` into several programs."""
    keys = [dict(program_key(c)) for c in configs]
    return sorted({k.removesuffix(" off") for k in keys[0] if len({repr(key[k]) for key in keys}) > 1})


def group_programs(configs: Sequence[Config]) -> list[list[int]]:
    """The run indices of each program, programs in order of their first run."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(program_key(c), []).append(i)
    return list(groups.values())


def program_config(configs: Sequence[Config]) -> Config:
    """The config that picks a program's components: its first run's, with each method switch on where any
    run switches it on (`SWITCH_OFF_VALUES`)."""
    like = configs[0]
    changes = {}
    for name, off in SWITCH_OFF_VALUES.items():
        on = [getattr(c, name) for c in configs if getattr(c, name) != off]
        if on:
            changes[name] = on[0]
    return like.replace(**changes)


def with_values(config: Config, values: dict[str, Any]) -> Config:
    """`config` with some fields set to (traced) arrays. The config's checks are skipped: every run's own
    config has passed them."""
    new = copy.copy(config)
    for name, value in values.items():
        object.__setattr__(new, name, value)
    return new


def mesh_shape(num_runs: int, num_devices: int) -> tuple[int, int]:
    """(devices along runs, devices along each run's games): runs split across devices as far as the run
    count allows (gcd), each run's games across the rest."""
    runs = math.gcd(num_runs, num_devices)
    return runs, num_devices // runs


class Sweep:
    """The jitted init and step of one program's runs (configs equal in all but run-axis and host fields)."""

    def __init__(self, configs: Sequence[Config], devices: list[jax.Device] | None = None,
                 memory_limit: int | None = None, batching: str | None = None):
        self.configs = list(configs)
        if len(group_programs(self.configs)) != 1:
            raise ValueError("a Sweep's runs must share one program; split them with group_programs")
        devices = list(devices) if devices is not None else jax.devices()
        self.batching = batching or default_batching(devices[0])
        if self.batching not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)}, got {self.batching!r}")
        self.like = program_config(self.configs)
        varying = [f for f in RUN_AXIS_FIELDS if f != "seed" and len({getattr(c, f) for c in self.configs}) > 1]
        self.hyper = {f: np.asarray([getattr(c, f) for c in self.configs],
                                    np.int32 if isinstance(getattr(self.like, f), int) else np.float32)
                      for f in varying}
        run_devices, data_devices = mesh_shape(len(self.configs), len(devices))
        self.mesh = Mesh(np.array(devices[:run_devices * data_devices]).reshape(run_devices, data_devices),
                         (RUNS, AXIS))
        self.trainer = Trainer(self.like, devices=devices[:data_devices])
        self.check_memory(memory_limit)

        single = self.trainer.state_specs()
        specs = jax.tree.map(lambda s: P(RUNS, *s), single, is_leaf=lambda x: isinstance(x, P))
        self.shardings = jax.tree.map(lambda s: NamedSharding(self.mesh, s), specs,
                                      is_leaf=lambda x: isinstance(x, P))
        hyper_specs = {f: P(RUNS) for f in self.hyper}
        init = jax.shard_map(self._init_local, mesh=self.mesh, in_specs=(P(RUNS), hyper_specs), out_specs=specs,
                             check_vma=False)
        self._init = jax.jit(init, out_shardings=self.shardings)
        step = jax.shard_map(self._step_local, mesh=self.mesh, in_specs=(specs, hyper_specs),
                             out_specs=(specs, P(RUNS)), check_vma=False)
        self._step = jax.jit(step, in_shardings=(self.shardings, None), out_shardings=(self.shardings, None),
                             donate_argnums=0)
        self._hyper_device = {f: jax.device_put(v, NamedSharding(self.mesh, P(RUNS))) for f, v in self.hyper.items()}

    @property
    def num_runs(self) -> int:
        return len(self.configs)

    def run_devices(self) -> tuple[int, int]:
        return self.mesh.shape[RUNS], self.mesh.shape[AXIS]

    def init(self) -> LoopState:
        keys = np.stack([np.asarray(jax.random.key_data(jax.random.key(c.seed))) for c in self.configs])
        return self._init(keys, self._hyper_device)

    def step(self, states: LoopState) -> tuple[LoopState, dict[str, jax.Array]]:
        return self._step(states, self._hyper_device)

    def abstract_state(self) -> LoopState:
        """The sweep state's shapes, dtypes and shardings (`jax.ShapeDtypeStruct`s, leading run axis [R]; nothing
        is computed), as `init` returns it (`Trainer.abstract_state`, for every run)."""
        keys = np.zeros((self.num_runs, *jax.random.key_data(jax.random.key(0)).shape), np.uint32)
        return jax.eval_shape(self._init, keys, self._hyper_device)

    def run_state(self, states: LoopState, k: int) -> LoopState:
        """Run k's loop state (as a single run of its config holds it)."""
        return jax.tree.map(lambda x: x[k], states)

    def stack(self, runs: Sequence[LoopState]) -> LoopState:
        """The sweep state of per-run states (from checkpoints), placed on the sweep's devices."""
        stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *runs)
        return jax.device_put(stacked, self.shardings)

    def run_template(self, states: LoopState) -> LoopState:
        """Abstract per-run state for restoring one run's checkpoint (on the first device)."""
        device = SingleDeviceSharding(self.mesh.devices.flat[0])
        return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype, sharding=device), states)

    # ----- memory -----

    def check_memory(self, limit: int | None = None) -> None:
        """Refuses (MemoryPlanError, naming the fields to lower) a sweep whose runs on one device would need more
        than 90% of its memory (or of `limit` bytes): `azjax.train.plan`, the check `azjax train` makes too."""
        runs_per_device = self.num_runs // self.mesh.shape[RUNS]
        self.plan = check_run_fits(self.trainer, what=f"the sweep ({self.num_runs} runs)", runs=runs_per_device,
                                   limit=limit)

    # ----- device-local (inside shard_map) -----

    def _rebound(self, values: dict[str, jax.Array]) -> Trainer:
        return self.trainer.rebound(with_values(self.like, values)) if values else self.trainer

    def _over_runs(self, fn: Any, xs: Any, hyper: dict[str, jax.Array]) -> Any:
        """fn(x, values) of every run on this device: vmapped, or one run after another ("unrolled")."""
        if self.batching == "vmap":
            return jax.vmap(fn)(xs, hyper)
        runs = jax.tree.leaves(xs)[0].shape[0]
        outs = [fn(jax.tree.map(lambda x: x[k], xs), {f: v[k] for f, v in hyper.items()})  # noqa: B023
                for k in range(runs)]
        return jax.tree.map(lambda *ys: jnp.stack(ys), *outs)

    def _init_local(self, key_data: jax.Array, hyper: dict[str, jax.Array]) -> LoopState:
        return self._over_runs(lambda k, h: self._rebound(h).init_local(k), key_data, hyper)

    def _step_local(self, states: LoopState, hyper: dict[str, jax.Array]) -> tuple[LoopState, dict[str, jax.Array]]:
        return self._over_runs(lambda s, h: self._rebound(h).step_local(s), states, hyper)


# How a device advances its runs: "vmap" batches them into every kernel (the networks' convolutions become
# grouped ones), "unrolled" runs them one after another inside the one program. XLA's CPU backend runs the
# grouped convolutions of vmapped networks several times slower than the runs one by one
# (results/speed/bench_sweep.json), so CPUs unroll.
BATCHING = ("vmap", "unrolled")


def default_batching(device: jax.Device) -> str:
    return "unrolled" if device.platform == "cpu" else "vmap"


# ---------------------------------------------------------------- grids and the host driver

SWEEP_FILE = "sweep.json"


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """`FIELD=v1,v2,...` items -> {field: [values]} (values parsed as the config field's type)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().lstrip("-")
        if not sep or not values.strip():
            raise ValueError(f"--grid expects FIELD=v1,v2,..., got {item!r}")
        if name == "seed":
            raise ValueError("--grid seed=...: give the number of seeds with --seeds instead")
        if name in grid:
            raise ValueError(f"--grid {name} is given twice")
        parsed = [parse_field(name, v.strip()) for v in values.split(",")]
        if len(set(map(repr, parsed))) != len(parsed):
            raise ValueError(f"--grid {name} repeats a value: {values}")
        grid[name] = parsed
    return grid


def grid_runs(base: Config, grid: dict[str, list[Any]], seeds: int) -> list[tuple[dict[str, Any], Config]]:
    """(grid point, config) of every run: each grid point (cartesian product) with seeds base.seed + 0..K-1."""
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    names = list(grid)
    runs = []
    for values in itertools.product(*(grid[n] for n in names)):
        point = dict(zip(names, values, strict=True))
        for s in range(seeds):
            try:
                config = base.replace(**point, seed=base.seed + s)
            except ValueError as e:
                raise ValueError(f"grid point {point}: {e}") from None
            runs.append((point, config))
    return runs


def run_sweep(runs: Sequence[tuple[dict[str, Any], Config]] | None, sweep_dir: str | Path, *,
              grid: dict[str, list[Any]] | None = None, resume: bool = False, progress: bool = True,
              stop_after: int | None = None, command: str | None = None,
              memory_limit: int | None = None) -> dict[str, Any]:
    """Trains every run of a sweep, program by program; each run gets its own run directory
    (`sweep_dir/run_K`: config.json, metrics.csv, eval.csv, checkpoints, params.msgpack) and
    `sweep_dir/sweep.json` the grid, the runs and, once they finish, the table; `sweep.png` the curves.

    resume: continue every run from the sweep's checkpoints (`runs` and `grid` are then read from sweep.json).
    stop_after: stop (with a checkpoint) after this many steps of each program, as if killed; for tests.
    """
    sweep_dir = Path(sweep_dir)
    sweep_file = sweep_dir / SWEEP_FILE
    if resume:
        if not sweep_file.exists():
            raise ckpt.CheckpointError(f"cannot resume {sweep_dir}: it holds no {SWEEP_FILE}")
        record = ckpt.read_json(sweep_file)
        runs = [(r["point"], ckpt.load_config(sweep_dir / r["dir"])) for r in record["runs"]]
        grid = record["grid"]
    else:
        assert runs is not None
        if sweep_file.exists():
            raise ckpt.CheckpointError(f"{sweep_dir} already holds a sweep; use --resume {sweep_dir} to continue it")
    configs = [c for _, c in runs]
    if any(c.init_from for c in configs):
        raise ValueError("init_from (a warm start) is not supported by azjax sweep: its runs start from fresh weights")
    programs = group_programs(configs)
    # Built before anything is written: their checks (device counts, memory) refuse a sweep that cannot run
    # without leaving a sweep directory that would then refuse the corrected command as "already holds a sweep".
    sweeps: list[Sweep | None] = [Sweep([configs[k] for k in indices], memory_limit=memory_limit)
                                  for indices in programs]
    if not resume:
        record = {
            "command": command or shlex.join(["azjax", *sys.argv[1:]]),
            "grid": grid or {},
            "seeds": sorted({c.seed for _, c in runs}),
            "runs": [{"dir": f"run_{k}", "point": point, "seed": c.seed} for k, (point, c) in enumerate(runs)],
        }
        for k, (_, config) in enumerate(runs):
            (sweep_dir / f"run_{k}").mkdir(parents=True, exist_ok=True)
            ckpt.save_config(sweep_dir / f"run_{k}", config)
    record["programs"] = programs
    ckpt.write_json(sweep_file, record)
    if len(programs) > 1:
        split = program_splitters(configs)
        print(f"{len(runs)} runs in {len(programs)} programs, run one after another: "
              f"{', '.join(split)} change{'s' if len(split) == 1 else ''} the program", flush=True)

    finished = True
    for p, indices in enumerate(programs):
        sweep, sweeps[p] = sweeps[p], None  # a finished program's compiled step is dropped, as before
        assert sweep is not None
        r_dev, d_dev = sweep.run_devices()
        ride = ", ".join(sweep.hyper) or "seed only"
        print(f"program {p + 1}/{len(programs)}: runs {', '.join(f'run_{k}' for k in indices)} "
              f"({ride} on the run axis; {r_dev} device(s) along runs x {d_dev} along games; "
              f"~{sweep.plan.bytes_per_device / 2**20:.0f} MiB per device)", flush=True)
        dirs = [sweep_dir / f"run_{k}" for k in indices]
        checkpointers = [ckpt.StateCheckpointer(d) for d in dirs]
        columns = metric_columns(sweep.trainer)
        logs = [RunLog(d, columns=columns) for d in dirs]
        watches = [HeadWatch([c for c in sweep.trainer.value.columns if c.endswith(("_std", "_active"))])
                   for _ in dirs]
        states = sweep.init()
        start = 0
        if resume:
            latest = [c.latest_step() for c in checkpointers]
            if all(s is not None for s in latest):
                start = min(latest)  # a kill between the runs' checkpoint writes leaves some one behind
                template = sweep.run_template(states)
                states = sweep.stack([c.restore(start, template) for c in checkpointers])
            for log in logs:
                log.truncate(start)
        measures = [RunMeasures(sweep.trainer, configs[k], d, start) for k, d in zip(indices, dirs, strict=True)]
        if resume:
            print(f"program {p + 1}: resumed from step {start}" if start else
                  f"program {p + 1}: no checkpoint yet, starting from step 0", flush=True)
        like = sweep.like
        end = like.num_steps if stop_after is None else min(like.num_steps, start + stop_after)
        elapsed0 = float(logs[0].rows[-1]["time_s"]) if logs[0].rows else 0.0
        failed: dict[int, str] = {}
        t_run = time.perf_counter()
        step = start
        bar = None  # made after the first step, so the compile stays out of its rate and ETA
        if step < end:
            print(COMPILE_NOTE, flush=True)
        try:
            while step < end:
                t0 = time.perf_counter()
                states, metrics = sweep.step(states)
                metrics = jax.device_get(metrics)
                step += 1
                dt = time.perf_counter() - t0
                for i, log in enumerate(logs):
                    run = sweep.run_state(states, i)
                    row = step_row(sweep.trainer, step, step * like.moves_per_step,
                                   {k: v[i] for k, v in metrics.items()})
                    row.update(measures[i].row(step, run))
                    row.update(timing_columns(like, row["games"], dt, elapsed0 + time.perf_counter() - t_run))
                    log.add(row)
                    if i not in failed:
                        fault = numerical_fault(row, run.params)
                        if fault is not None:
                            failed[i] = f"step {step}: {fault}"
                            say(bar, f"run {dirs[i].name}: stopped learning at step {step} ({fault}); its last "
                                     "good checkpoint is kept, the other runs go on")
                    for warning in watches[i].update(row):
                        say(bar, f"{dirs[i].name}: {warning}")
                if step == start + 1:
                    say(bar, f"step {step} (compiled and run) took {dt:.1f} s")
                    bar = progress_bar(progress, step, like.num_steps)
                elif bar is not None:
                    bar.update(1)
                if bar is None and step % like.log_every == 0:
                    losses = " ".join(f"{float(log.rows[-1]['loss']):.3f}" for log in logs)
                    print(f"step {step}/{like.num_steps} ({dt:.2f} s) loss per run: {losses}", flush=True)
                if like.eval_every and (step % like.eval_every == 0 or step == like.num_steps):
                    for i, (config, log) in enumerate(zip(sweep.configs, logs, strict=True)):
                        ev = evaluate(config, sweep.trainer, sweep.run_state(states, i).exported_params, step)
                        ev["time_s"] = elapsed0 + time.perf_counter() - t_run
                        log.add_eval(ev)
                    scores = " ".join(f"{float(log.evals[-1]['score']):.2f}" for log in logs)
                    say(bar, f"step {step}: score per run vs {logs[0].evals[-1]['opponent']}: {scores}")
                if step % like.checkpoint_every == 0 or step == end:
                    for i, (d, c, log) in enumerate(zip(dirs, checkpointers, logs, strict=True)):
                        if i not in failed:
                            write_checkpoint(d, c, step, sweep.run_state(states, i), log, measures[i])
        finally:
            if bar is not None:
                bar.close()
            for log in logs:
                log.close()
        if failed:
            for i, why in failed.items():
                record["runs"][indices[i]]["failed"] = why
            ckpt.write_json(sweep_file, record)
        if step < like.num_steps:
            finished = False
            break
    if finished:
        record["table"] = sweep_table(sweep_dir, record)
        ckpt.write_json(sweep_file, record)
        plot_sweep(sweep_dir, record)
        print("\n".join(table_lines(record["table"])), flush=True)
        print(f"sweep table and curves: {sweep_file}, {sweep_dir / 'sweep.png'}", flush=True)
    return {"sweep_dir": str(sweep_dir), "finished": finished, "record": record}


# ---------------------------------------------------------------- the combined table and curves

TABLE_METRICS = ("loss", "policy_loss", "value_loss")


def _point_label(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "all runs"


def sweep_table(sweep_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per grid point: the mean over seeds, with a 95% t interval, of each run's final losses (mean of its
    last 10% of steps) and last evaluation score."""
    by_point: dict[str, list[dict[str, Any]]] = {}
    points: dict[str, dict[str, Any]] = {}
    for r in record["runs"]:
        label = _point_label(r["point"])
        points[label] = r["point"]
        rows, evals = load_metrics(sweep_dir / r["dir"])
        tail = rows[-max(1, len(rows) // 10):]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a run that never reached SGD: NaN
            final = {m: float(np.nanmean([row[m] for row in tail])) for m in TABLE_METRICS}
        if evals:
            final["eval_score"] = float(evals[-1]["score"])
        by_point.setdefault(label, []).append(final)
    table = []
    for label, finals in by_point.items():
        entry: dict[str, Any] = {"point": points[label], "runs": len(finals)}
        for m in (*TABLE_METRICS, "eval_score"):
            # Only the runs that have the figure count (a run that never reached SGD has no loss), and `n` says
            # how many did: a mean over fewer runs than `runs` is not the point's mean over seeds.
            values = [f[m] for f in finals if m in f and math.isfinite(f[m])]
            if values:
                mean, low, high = t_interval(values)
                entry[m] = {"mean": mean, "low": low, "high": high, "n": len(values)}
        missing = len(finals) - entry.get("loss", {}).get("n", 0)
        if missing:
            entry["note"] = (f"{missing} of {len(finals)} runs never reached SGD (replay below min_replay_size): "
                             "their losses are left out")
        table.append(entry)
    return table


def table_lines(table: list[dict[str, Any]]) -> list[str]:
    """The sweep table as text: per grid point each figure's mean, 95% interval and how many runs it is over."""
    lines = []
    for entry in table:
        cells = []
        for m in (*TABLE_METRICS, "eval_score"):
            if m in entry:
                e = entry[m]
                interval = (f" [{e['low']:.3f}, {e['high']:.3f}]" if e["low"] is not None and e["high"] is not None
                            else " (no interval from one run)")
                cells.append(f"{m} {e['mean']:.3f}{interval} (n={e['n']})")
            elif m != "eval_score":
                cells.append(f"{m} - (n=0)")
        lines.append(f"{_point_label(entry['point'])} ({entry['runs']} runs): " + "; ".join(cells))
        if "note" in entry:
            lines.append(f"  {entry['note']}")
    return lines


def plot_sweep(sweep_dir: Path, record: dict[str, Any]) -> Path:
    """sweep.png: per grid point the mean learning curve over seeds with a min-max band (loss, and the
    evaluation score where there is one)."""
    import matplotlib.pyplot as plt

    curves: dict[str, list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]] = {}
    for r in record["runs"]:
        curves.setdefault(_point_label(r["point"]), []).append(load_metrics(sweep_dir / r["dir"]))
    warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)  # losses are NaN before SGD starts
    warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
    has_eval = any(evals for runs in curves.values() for _, evals in runs)
    fig, axes = plt.subplots(1, 2 if has_eval else 1, figsize=(11 if has_eval else 6, 4), squeeze=False)
    empty = []  # grid points none of whose runs has a loss to draw
    for label, runs in curves.items():
        steps = [row["step"] for row in runs[0][0]]
        n = min(len(rows) for rows, _ in runs)
        losses = np.array([[row["loss"] for row in rows[:n]] for rows, _ in runs], np.float64)
        if not np.isfinite(losses).any():
            empty.append(label)
        mean = np.nanmean(losses, axis=0) if np.isfinite(losses).any() else losses[0]
        with_loss = int(np.isfinite(losses).any(axis=1).sum())  # the band and mean are over these runs only
        seeds = f"{len(runs)} seeds" if with_loss == len(runs) else f"{with_loss} of {len(runs)} seeds have a loss"
        (line,) = axes[0, 0].plot(steps[:n], mean, label=f"{label} ({seeds})")
        axes[0, 0].fill_between(steps[:n], np.nanmin(losses, axis=0), np.nanmax(losses, axis=0),
                                color=line.get_color(), alpha=0.2)
        if has_eval and all(evals for _, evals in runs):
            m = min(len(evals) for _, evals in runs)
            scores = np.array([[e["score"] for e in evals[:m]] for _, evals in runs])
            xs = [e["step"] for e in runs[0][1][:m]]
            axes[0, 1].plot(xs, scores.mean(axis=0), marker="o", color=line.get_color(), label=label)
            axes[0, 1].fill_between(xs, scores.min(axis=0), scores.max(axis=0), color=line.get_color(), alpha=0.2)
    axes[0, 0].set(xlabel="loop step", ylabel="training loss", title="loss: mean over seeds, band min-max")
    axes[0, 0].legend(fontsize=7)
    if empty:  # say why the panel (or a curve) is empty rather than leave a blank plot
        why = f"no loss for {', '.join(empty)}:\nno run reached SGD\n(replay below min_replay_size)"
        axes[0, 0].text(0.5, 0.5, why, transform=axes[0, 0].transAxes, ha="center", va="center", fontsize=8, wrap=True)
    if has_eval:
        axes[0, 1].set(xlabel="loop step", ylabel="score", ylim=(0, 1), title="evaluation score")
        if not all(all(evals for _, evals in runs) for runs in curves.values()):
            axes[0, 1].text(0.5, 0.05, "points where a run has no evaluation are left out",
                            transform=axes[0, 1].transAxes, ha="center", fontsize=8)
    return save_figure(fig, sweep_dir / "sweep.png", dpi=100)
