"""The policy-value network: a small pre-activation ResNet in flax.

    logits, value = net.apply(params, observation)
    # observation [B, H, W, C] (any dtype) -> logits [B, A] float32, value [B] float32 in (-1, 1)

Normalisation is LayerNorm over channels rather than BatchNorm, so the network is a pure function
of (params, observation): search, self-play and SGD share one `apply` with no batch statistics to
thread through the loop or to keep in sync across devices.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.config import Config
from azjax.games import Game


class ResBlock(nn.Module):
    channels: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y)
        y = nn.relu(nn.LayerNorm(dtype=self.dtype)(y))
        y = nn.Conv(self.channels, (3, 3), dtype=self.dtype)(y)
        return x + y


class PolicyValueNet(nn.Module):
    """AlphaZero's network: a conv stem, `num_blocks` residual blocks, policy and tanh value heads."""

    num_actions: int
    num_blocks: int = 3
    num_channels: int = 32
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs.astype(self.dtype)
        x = nn.Conv(self.num_channels, (3, 3), dtype=self.dtype)(x)
        for _ in range(self.num_blocks):
            x = ResBlock(self.num_channels, self.dtype)(x)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))

        p = nn.relu(nn.Conv(2, (1, 1), dtype=self.dtype)(x))
        logits = nn.Dense(self.num_actions, dtype=self.dtype)(p.reshape(p.shape[0], -1))

        v = nn.relu(nn.Conv(1, (1, 1), dtype=self.dtype)(x))
        v = nn.relu(nn.Dense(self.num_channels, dtype=self.dtype)(v.reshape(v.shape[0], -1)))
        value = jnp.tanh(nn.Dense(1, dtype=self.dtype)(v))[:, 0]
        return logits.astype(jnp.float32), value.astype(jnp.float32)


def make_network(config: Config, game: Game) -> PolicyValueNet:
    dtype = jnp.bfloat16 if config.compute_dtype == "bfloat16" else jnp.float32
    return PolicyValueNet(
        num_actions=game.num_actions,
        num_blocks=config.num_blocks,
        num_channels=config.num_channels,
        dtype=dtype,
    )


def init_params(net: PolicyValueNet, game: Game, key: jax.Array) -> Any:
    dummy = jnp.zeros((1, *game.observation_shape), jnp.float32)
    return net.init(key, dummy)
