"""Shared test set-up: a persistent compilation cache for the session (identical programs built by
different tests compile once) and tiny configs."""

from __future__ import annotations

import os
import tempfile

import jax
import pytest

_CACHE = os.environ.get("AZJAX_TEST_CACHE_DIR") or tempfile.mkdtemp(prefix="azjax-jax-cache-")
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


@pytest.fixture(scope="session")
def tiny_overrides() -> dict:
    """Config overrides that make a loop compile and run in seconds on a CPU."""
    return dict(num_envs=8, num_simulations=4, moves_per_step=2, replay_size=64, min_replay_size=8,
                batch_size=8, sgd_steps_per_step=1, num_blocks=1, num_channels=8, eval_every=0,
                log_every=1, checkpoint_every=2, lr_warmup_steps=1, num_steps=4, temperature_moves=4)
