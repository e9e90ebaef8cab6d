"""The suite's own set-up (tests/conftest.py): what its fixtures rely on, shown."""

from __future__ import annotations

import gc
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from azjax.games import make_game

MAPS = Path("/proc/self/maps")


def _mappings() -> int:
    return len(MAPS.read_text().splitlines())


@pytest.mark.slow
@pytest.mark.skipif(not MAPS.exists(), reason="counts the process's memory mappings in /proc (Linux)")
def test_clearing_jax_caches_gives_back_the_memory_mappings_that_compiled_programs_hold():
    """Why conftest clears JAX's caches after every module: compiled programs keep memory mappings until dropped
    (a worker that kept all of its share passed vm.max_map_count and segfaulted)."""
    game = make_game("connect_four")
    jax.clear_caches()
    gc.collect()
    before = _mappings()
    for batch in (3, 5, 7):  # three programs of the game's step
        states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), batch))
        jax.block_until_ready(jax.jit(jax.vmap(game.step))(states, jnp.zeros(batch, jnp.int32)))
    grown = _mappings() - before
    assert grown >= 60, f"the programs took {grown} mappings"
    jax.clear_caches()
    gc.collect()
    assert _mappings() - before < grown / 4


def test_the_engines_searches_compiled_ahead_of_time_are_dropped_with_them(models):
    from azjax.engines import engine as engine_module

    engine = engine_module.Engine.from_checkpoint(str(models["connect_four"]))
    engine.search(visits=4)
    assert engine_module._EXECUTABLES, "the engine keeps its compiled search for the next move"
    engine_module.clear_compiled_searches()
    assert not engine_module._EXECUTABLES
