"""Shared test set-up: a persistent compilation cache for the session (identical programs built by
different tests compile once, also across pytest-xdist workers), JAX's in-memory caches dropped after each
module (a worker's memory mappings stay bounded), and tiny configs."""

from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path

# The tests are compile-bound (tiny configs, a few steps): XLA's CPU backend at LLVM optimisation level 0
# compiles the loop ~2-3x faster and runs it a few times slower, a net win for every test here; without its
# fusion emitters (the older elemental codegen) the tiny loop compiles faster still at the same step time
# (`scripts/bench_xla_flags.py --tiny`, results/speed/bench_xla_flags_tiny.json). Numerics stay within float32
# reassociation (the golden runs match at their tolerance); the tests that hold two programs equal bit for bit
# compile with XLA's defaults instead (tests/production_xla.py). Set before JAX starts its backend; the variable is
# inherited by the xdist workers and by the subprocesses tests start. Opt out with AZJAX_TEST_XLA_OPT=default
# (or give your own --xla_backend_optimization_level in XLA_FLAGS).
if os.environ.get("AZJAX_TEST_XLA_OPT", "0") != "default" and "xla_backend_optimization_level" not in os.environ.get(
        "XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), "--xla_backend_optimization_level=0",
                                                     "--xla_cpu_use_fusion_emitters=false"]))

import jax  # noqa: E402
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.build import init_params, make_network
from azjax.checkpoint import save_config, save_params
from azjax.config import Config, preset
from azjax.engines.engine import clear_compiled_searches
from azjax.games import make_game

# One directory for the whole session: set in the environment by the first process that loads this file
# (the xdist controller, before it starts its workers), so every worker and subprocess shares it. A worker
# may read an entry another is still writing: JAX then warns and compiles the program itself.
_CACHE = os.environ.get("AZJAX_TEST_CACHE_DIR") or tempfile.mkdtemp(prefix="azjax-jax-cache-")
os.environ["AZJAX_TEST_CACHE_DIR"] = _CACHE
# The commands the tests run (in process through azjax.cli.main, or as subprocesses) use the same directory, not
# the user's ~/.cache/azjax/jax that a training run or arena on the same machine may be writing at that moment.
# AZJAX_TEST_CACHE=off runs the session without it. (The xdist workers that segfaulted reading or writing an entry
# had run out of memory mappings, see `_free_compiled_programs_after_each_module`: it crashed without the cache too.)
if os.environ.get("AZJAX_TEST_CACHE", "on") != "off":
    os.environ.setdefault("AZJAX_CACHE_DIR", _CACHE)
    jax.config.update("jax_compilation_cache_dir", _CACHE)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
else:
    os.environ.setdefault("AZJAX_CACHE_DIR", "off")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with a slow test run first, each module's tests together and in their order: a worker that picks up
    the minutes-long run-book or learning test near the end of the session would run alone for those minutes."""
    del config
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow") and item.module}
    items.sort(key=lambda item: item.module is None or item.module.__name__ not in slow_modules)


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs_after_each_module():
    """Drops JAX's compiled programs when a test module ends. Each XLA:CPU executable keeps its machine code in
    memory mappings of its own, and a worker that kept every program of its share of the suite passed Linux's
    limit of 65,530 mappings a process (vm.max_map_count) and segfaulted: in a compile, or reading or writing the
    persistent cache, in whichever test came next (tests/test_conftest.py shows the count going back down)."""
    yield
    jax.clear_caches()
    clear_compiled_searches()
    gc.collect()


@pytest.fixture(scope="session")
def tiny_overrides() -> dict:
    """Config overrides that make a loop compile and run in seconds on a CPU."""
    return dict(num_envs=8, num_simulations=4, moves_per_step=2, replay_size=64, min_replay_size=8,
                batch_size=8, sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0,
                log_every=1, checkpoint_every=2, lr_warmup_steps=1, num_steps=4, temperature_moves=4)


@pytest.fixture(scope="session")
def sai_tiny_overrides() -> dict:
    """A tiny 7x7 SAI loop (value_head="sai") whose games end and branch within 8 steps."""
    return dict(num_envs=8, num_simulations=4, moves_per_step=16, replay_size=256, min_replay_size=8, batch_size=8,
                sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0, log_every=1, checkpoint_every=4,
                lr_warmup_steps=1, num_steps=8, temperature_moves=4, value_head="sai", branch_prob=0.3,
                start_queue_size=32)


@pytest.fixture(scope="session")
def chess_tiny_overrides(tiny_overrides: dict) -> dict:
    """A tiny chess loop; its games (up to 512 plies) do not end within it."""
    return {**tiny_overrides, "num_envs": 4, "batch_size": 4, "num_simulations": 2, "min_replay_size": 4,
            "moves_per_step": 8, "num_steps": 4, "replay_size": 64}


def fit_auxiliary_heads(config: Config, obs: jax.Array, aux, targets: dict, steps: int) -> tuple[dict, dict]:  # noqa: ANN001
    """`steps` steps of the config's real optimizer on one fixed batch of observations [N, ...] whose only
    targets are the auxiliary ones (`aux`, an AuxiliaryTargets seam; `targets` its sampled arrays [N, ...]):
    the policy target is uniform and the value target 0. Returns the loss's measures before and after, so a
    test can ask that a head learns what no constant output meets."""
    import optax

    from azjax.methods.alphazero import TanhValue
    from azjax.train.loop import loss_fn, make_optimizer, with_head_health

    game = make_game(config.game)
    net = make_network(config, game)
    params = init_params(net, game, jax.random.key(0))
    optimizer = make_optimizer(config)
    n = obs.shape[0]
    policy = jnp.full((n, game.num_actions), 1.0 / game.num_actions)

    def loss(p):  # noqa: ANN001, ANN202
        return loss_fn(with_head_health(net.apply), TanhValue(), p, obs, policy, jnp.zeros(n), 1.0, None, aux, targets)

    @jax.jit
    def step(p, s):  # noqa: ANN001, ANN202
        grads, _ = jax.grad(loss, has_aux=True)(p)
        updates, s = optimizer.update(grads, s, p)
        return optax.apply_updates(p, updates), s

    measure = jax.jit(lambda p: loss(p)[1])
    first = measure(params)
    opt_state = optimizer.init(params)
    for _ in range(steps):
        params, opt_state = step(params, opt_state)
    return first, measure(params)


ENGINE_VISITS = 4  # the untrained models' search budget (eval_simulations)


def random_params(config: Config, game) -> dict:  # noqa: ANN001
    """Random weights of the config's network, shaped by `jax.eval_shape` (an untrained net; no XLA compile)."""
    rng = np.random.default_rng(1)
    net = make_network(config, game)
    shapes = jax.eval_shape(net.init, jax.random.key(1), jnp.zeros((1, *game.observation_shape)))

    def fill(path, x):  # noqa: ANN001, ANN202
        name = str(path[-1])
        if "scale" in name:
            return np.ones(x.shape, x.dtype)
        if "bias" in name:
            return np.zeros(x.shape, x.dtype)
        fan_in = int(np.prod(x.shape[:-1])) or 1
        return (rng.standard_normal(x.shape) / np.sqrt(fan_in)).astype(x.dtype)

    return jax.tree_util.tree_map_with_path(fill, shapes)


@pytest.fixture(scope="session")
def c4_quick_untrained(tmp_path_factory) -> Path:  # noqa: ANN001
    """An untrained Connect Four model directory: the quick preset at 1x8, `init_params` with key 0."""
    config = preset("connect_four", "quick", num_blocks=1, num_channels=8)
    game = make_game("connect_four")
    path = tmp_path_factory.mktemp("c4_quick_untrained")
    save_config(path, config)
    save_params(path, init_params(make_network(config, game), game, jax.random.key(0)))
    return path


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, Path]:  # noqa: ANN001
    """Untrained 1x8 model directories: Connect Four (Gumbel), Go 9x9 (PUCT), chess (Gumbel)."""
    root = tmp_path_factory.mktemp("models")
    out = {}
    for name, search in (("connect_four", "gumbel"), ("go_9x9", "puct"), ("chess", "gumbel")):
        config = Config(game=name, num_blocks=1, num_channels=8, eval_simulations=ENGINE_VISITS, search=search)
        save_config(root / name, config)
        save_params(root / name, random_params(config, make_game(name)))
        out[name] = root / name
    return out
