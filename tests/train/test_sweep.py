"""`azjax sweep`: many runs vmapped into one jitted program compute what the runs compute one by one."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.experimental.compilation_cache import compilation_cache

from azjax.cli import main
from azjax.config import preset
from azjax.train import load_metrics
from azjax.train.loop import Trainer
from azjax.train.plan import MemoryPlanError
from azjax.train.sweep import (
    Sweep,
    default_batching,
    grid_runs,
    group_programs,
    mesh_shape,
    parse_grid,
    program_config,
    program_splitters,
    run_sweep,
)

STEPS = 3
LEARNS = {"moves_per_step": 8, "sgd_steps_per_step": 2}  # games end and SGD runs within two steps


@contextlib.contextmanager
def no_persistent_cache() -> Iterator[None]:
    """Compiles without JAX's persistent cache: reading back one run's training step from it (written by another
    test of this session) segfaulted a worker in three full-suite runs, though never when this test ran alone.
    JAX fixes whether it uses the cache at a process's first compile, hence the resets."""
    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        compilation_cache.reset_cache()


@pytest.fixture(autouse=True, scope="module")
def _drop_separate_runs_after_the_module() -> Iterator[None]:
    yield
    separate_run.cache_clear()
    _trainer.cache_clear()


@functools.cache
def _trainer(config) -> Trainer:
    """One trainer per config but its seed: `Trainer` reads the seed only through `init(seed)`, so one compiled step
    serves every seed's separate run (each compiled afresh, without the persistent cache, as `no_persistent_cache`
    says why)."""
    return Trainer(config)


@functools.cache
def separate_run(config, steps: int = STEPS):
    """The run `config` trains alone, for `steps` steps: (state, per-step metrics). Cached: the vmapped and the
    unrolled sweep are each compared with the same separate runs."""
    trainer = _trainer(config.replace(seed=0))
    metrics = []
    with no_persistent_cache():
        state = trainer.init(config.seed)
        for _ in range(steps):
            state, m = trainer.step(state)
            metrics.append(jax.device_get(m))
    return state, metrics


def swept(configs, steps: int = STEPS, batching: str | None = None):
    sweep = Sweep(configs, batching=batching)
    states = sweep.init()
    metrics = []
    for _ in range(steps):
        states, m = sweep.step(states)
        metrics.append(jax.device_get(m))
    return sweep, states, metrics


def assert_run_matches(sweep, states, sweep_metrics, k, state, metrics):
    for step, (ours, theirs) in enumerate(zip(sweep_metrics, metrics, strict=True)):
        for name, value in theirs.items():
            # atol: vmapped networks run grouped convolutions, whose sums round in another order once trained.
            np.testing.assert_allclose(ours[name][k], value, rtol=1e-6, atol=1e-6, equal_nan=True,
                                       err_msg=f"run {k}, step {step + 1}, metric {name}")
    for a, b in zip(jax.tree.leaves(sweep.run_state(states, k).params), jax.tree.leaves(state.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


# Each batching is checked once against separate runs (the suite's time): vmap with runs on different games, the
# unrolled one with a traced hyperparameter; test_every_run_axis_field_rides_one_program covers the other fields.
@pytest.mark.slow
@pytest.mark.parametrize("batching", ["vmap"])
def test_a_sweep_of_three_seeds_computes_what_three_separate_runs_compute(tiny_overrides, batching):
    configs = [preset("connect_four", **{**tiny_overrides, **LEARNS}, seed=s) for s in (0, 1, 2)]
    sweep, states, metrics = swept(configs, batching=batching)
    assert sweep.hyper == {}  # seeds alone change no traced value
    for k, config in enumerate(configs):
        assert_run_matches(sweep, states, metrics, k, *separate_run(config))
    # Every run trained (so the comparison above covers SGD and trained parameters), each on its own games.
    assert all(metrics[-1]["sgd_applied"][k] > 0 for k in range(3))
    losses = [float(metrics[-1]["loss"][k]) for k in range(3)]
    assert all(np.isfinite(losses)) and len(set(losses)) == 3, f"the runs did not train on different games: {losses}"


@pytest.mark.slow
@pytest.mark.parametrize("batching", ["unrolled"])
def test_a_learning_rate_grid_computes_what_separate_runs_at_each_rate_compute(tiny_overrides, batching):
    base = preset("connect_four", **{**tiny_overrides, **LEARNS})
    runs = grid_runs(base, {"learning_rate": [1e-3, 1e-2]}, seeds=1)
    configs = [c for _, c in runs]
    sweep, states, metrics = swept(configs, batching=batching)
    assert list(sweep.hyper) == ["learning_rate"]
    for k, config in enumerate(configs):
        assert_run_matches(sweep, states, metrics, k, *separate_run(config))
    assert metrics[-1]["sgd_applied"].all()
    p0, p1 = (np.concatenate([np.ravel(x) for x in jax.tree.leaves(sweep.run_state(states, k).params)]) for k in (0, 1))
    assert not np.allclose(p0, p1), "both rates trained the same parameters"


@pytest.mark.slow
def test_every_run_axis_field_rides_one_program(tiny_overrides, sai_tiny_overrides):
    """Tracing only (no compile): every field the sweep puts on the run axis may be a traced value."""
    c4 = preset("connect_four", **tiny_overrides, search="puct", fast_simulations=2)
    c4_runs = [c4.replace(learning_rate=1e-3, lr_end_fraction=0.1, weight_decay=1e-4, pb_c_init=1.0,
                          dirichlet_alpha=0.3, dirichlet_fraction=0.25, gumbel_scale=1.0, temperature_moves=2,
                          value_target_q_weight=0.0, value_loss_weight=1.0, n_scl=2, start_state_prob=1.0,
                          td_lambda=1.0, full_search_prob=0.75),
               c4.replace(learning_rate=2e-3, lr_end_fraction=0.2, weight_decay=0.0, pb_c_init=2.0,
                          dirichlet_alpha=0.5, dirichlet_fraction=0.1, gumbel_scale=0.5, temperature_moves=3,
                          value_target_q_weight=0.5, value_loss_weight=0.5, n_scl=3, start_state_prob=0.5,
                          td_lambda=0.7, full_search_prob=0.5)]
    go = preset("go_7x7", "sai", **sai_tiny_overrides)
    go_runs = [go.replace(sensible_lambda=0.1, branch_prob=0.1, sai_official_komi_share=0.0),
               go.replace(sensible_lambda=0.3, branch_prob=0.3, sai_official_komi_share=0.5)]
    for runs in (c4_runs, go_runs):
        assert len(group_programs(runs)) == 1
        sweep = Sweep(runs)
        states = sweep.abstract_state()
        jax.eval_shape(sweep.step, states)


def test_fields_that_change_shapes_or_components_split_programs(tiny_overrides):
    base = preset("connect_four", **tiny_overrides)
    configs = [c for _, c in grid_runs(base, {"num_channels": [8, 16], "learning_rate": [1e-3, 2e-3]}, seeds=2)]
    assert group_programs(configs) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    contempt = [base, base.replace(search="puct"), base.replace(search="puct", n_scl=2)]
    assert len(group_programs(contempt)) == 3
    # A switch at its off value rides with the runs that turn it on where the method reduces to AlphaZero
    # bit for bit; where the off path is other code, off and on split.
    mixed = [base.replace(value_target_q_weight=0.0), base.replace(value_target_q_weight=0.5),
             base.replace(start_state_prob=1.0), base.replace(start_state_prob=0.1), base.replace(td_lambda=0.7)]
    assert len(group_programs(mixed)) == 1
    like = program_config(mixed)
    assert like.value_target_q_weight == 0.5 and like.start_state_prob == 0.1 and like.td_lambda == 0.7
    capped = [base.replace(fast_simulations=2, full_search_prob=p) for p in (1.0, 0.5, 0.25)]
    assert group_programs(capped) == [[0], [1, 2]]
    assert program_splitters(capped) == ["full_search_prob"]


@pytest.mark.slow
def test_a_run_with_its_switches_off_inside_a_sweep_computes_plain_alphazero(tiny_overrides):
    base = preset("connect_four", **{**tiny_overrides, **LEARNS})
    configs = [base, base.replace(value_target_q_weight=0.5, start_state_prob=0.5, td_lambda=0.7)]
    sweep, states, metrics = swept(configs)
    # The program holds q records, Go-Exploit's archive and TDLeaf's targets, for the run that uses them.
    assert sweep.trainer.targets.mixes_q and type(sweep.trainer.targets).__name__ == "TDLeafTargets"
    assert type(sweep.trainer.starts).__name__ == "ArchiveStarts"
    assert_run_matches(sweep, states, metrics, 0, *separate_run(configs[0]))


def test_cpus_run_a_devices_runs_one_after_another_and_accelerators_vmap_them(tiny_overrides):
    assert default_batching(jax.devices("cpu")[0]) == "unrolled"
    with pytest.raises(ValueError, match="batching"):
        Sweep([preset("connect_four", **tiny_overrides)], batching="pmap")


def test_runs_split_across_devices_as_far_as_the_run_count_allows():
    assert mesh_shape(8, 2) == (2, 1)
    assert mesh_shape(3, 2) == (1, 2)
    assert mesh_shape(4, 8) == (4, 2)
    assert mesh_shape(1, 4) == (1, 4)


TWO_DEVICES = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    import jax, numpy as np
    from azjax.config import preset
    from azjax.train.loop import Trainer
    from azjax.train.sweep import Sweep
    assert jax.device_count() == 2
    base = preset("connect_four", num_envs=8, num_simulations=4, moves_per_step=2, replay_size=64, min_replay_size=8,
                  batch_size=8, sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0,
                  lr_warmup_steps=1, num_steps=3, temperature_moves=4)

    def run(trainer, state):
        for _ in range(3):
            state, m = trainer.step(state)
        return jax.device_get(m)

    def compare(ours, theirs):
        for name, value in theirs.items():
            np.testing.assert_allclose(ours[name], value, rtol=1e-6, equal_nan=True, err_msg=name)

    # Two runs: one per device, each run's games on its device.
    sweep = Sweep([base, base.replace(seed=1)])
    assert sweep.run_devices() == (2, 1)
    m = run(sweep, sweep.init())
    alone = Trainer(base, devices=jax.devices()[:1])  # one compile for both: the seed enters through init(seed)
    for k in (0, 1):
        compare({n: v[k] for n, v in m.items()}, run(alone, alone.init(k)))
    # One run: its games split over both devices, as a single run's are.
    sweep = Sweep([base])
    assert sweep.run_devices() == (1, 2)
    m = run(sweep, sweep.init())
    alone = Trainer(base)
    compare({n: v[0] for n, v in m.items()}, run(alone, alone.init(0)))
    print("OK")
""")


@pytest.mark.slow
def test_a_sweep_on_two_devices_splits_runs_or_games_and_computes_the_same():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", TWO_DEVICES], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK" in proc.stdout


def test_a_sweep_that_will_not_fit_is_refused_before_compiling_naming_what_to_shrink(tiny_overrides):
    configs = [preset("connect_four", **tiny_overrides, seed=s) for s in (0, 1)]
    with pytest.raises(MemoryPlanError, match="replay_size"):
        Sweep(configs, memory_limit=100_000)
    assert Sweep(configs).plan.runs == 2


@pytest.mark.slow
def test_resuming_a_stopped_sweep_gives_the_same_metrics(tmp_path, tiny_overrides):
    base = preset("connect_four", **{**tiny_overrides, **LEARNS, "num_steps": 4, "checkpoint_every": 2})
    runs = grid_runs(base, {"learning_rate": [1e-3, 3e-3]}, seeds=1)
    run_sweep(runs, tmp_path / "whole", grid={"learning_rate": [1e-3, 3e-3]}, progress=False)
    run_sweep(runs, tmp_path / "parts", grid={"learning_rate": [1e-3, 3e-3]}, progress=False, stop_after=2)
    assert not (tmp_path / "parts" / "sweep.json").read_text().count('"table"')
    summary = run_sweep(None, tmp_path / "parts", resume=True, progress=False)
    assert summary["finished"]
    deterministic = [c for c in load_metrics(tmp_path / "whole" / "run_0")[0][0] if c not in
                     ("time_s", "step_s", "games_per_s", "positions_per_s", "sims_per_s")]
    for k in (0, 1):
        whole, parts = (load_metrics(tmp_path / d / f"run_{k}")[0] for d in ("whole", "parts"))
        np.testing.assert_array_equal(np.array([[r[c] for c in deterministic] for r in whole], np.float64),
                                      np.array([[r[c] for c in deterministic] for r in parts], np.float64))


def test_grids_are_checked_and_name_the_problem(tiny_overrides):
    assert parse_grid(["learning_rate=1e-3,2e-3", "num_channels=8"]) == {"learning_rate": [1e-3, 2e-3],
                                                                         "num_channels": [8]}
    for bad, message in [(["learning_rate"], "FIELD=v1,v2"), (["no_such_field=1"], "unknown config field"),
                         (["seed=1,2"], "--seeds"), (["learning_rate=1,2", "learning_rate=3"], "twice"),
                         (["num_channels=8,8"], "repeats"), (["num_channels=eight"], "num_channels")]:
        with pytest.raises(ValueError, match=message):
            parse_grid(bad)
    with pytest.raises(ValueError, match="grid point .*learning_rate"):
        grid_runs(preset("connect_four", **tiny_overrides), {"learning_rate": [-1.0]}, seeds=1)


@pytest.mark.slow
def test_sweep_from_the_command_line_writes_runs_a_table_and_curves(tmp_path, tiny_overrides, capsys):
    fields = [f"--{k}={v}" for k, v in {**tiny_overrides, **LEARNS, "num_steps": 3}.items()]
    code = main(["sweep", "--no-compile-cache", "--no-progress", "--seeds", "2", "--grid",
                 "value_target_q_weight=0,0.5", "--run_dir", str(tmp_path / "sw"), *fields])
    assert code == 0, capsys.readouterr().err
    record = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert record["grid"] == {"value_target_q_weight": [0.0, 0.5]} and len(record["runs"]) == 4
    assert record["programs"] == [[0, 1, 2, 3]]
    assert [row["runs"] for row in record["table"]] == [2, 2]
    assert all(set(row["loss"]) == {"mean", "low", "high", "n"} and row["loss"]["low"] <= row["loss"]["mean"]
               for row in record["table"])
    assert (tmp_path / "sw" / "sweep.png").stat().st_size > 0
    for k in range(4):
        run = tmp_path / "sw" / f"run_{k}"
        assert (run / "config.json").exists() and (run / "params.msgpack").exists()
        assert len(load_metrics(run)[0]) == 3
    assert main(["export", str(tmp_path / "sw" / "run_3"), str(tmp_path / "model")]) == 0
    assert main(["sweep", "--resume", str(tmp_path / "sw"), "--seeds", "3"]) == 2
    assert "--resume continues a sweep" in capsys.readouterr().err
