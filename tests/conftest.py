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
