"""The policy-value network: a small pre-activation ResNet in flax.

    logits, value = net.apply(params, observation)
    # observation [B, H, W, C] (any dtype) -> logits [B, A] float32, value [B] float32 in (-1, 1)

    logits, alpha, beta = sai_net.apply(params, observation)   # value_head="sai" (azjax.sai)
    # alpha [B]: the player to move's expected board lead (points); beta [B] > 0: the sigmoid's slope

`make_evaluator(config, game)` is the search evaluator of a config's network (either head).

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
    """AlphaZero's network: a conv stem, `num_blocks` residual blocks, policy and tanh value heads.

    With `value_head="sai"` the value head is replaced by two copies of it (SAI, METHODS.md section 2):
    alpha (linear output, points) and beta* with beta = beta_scale * exp(beta*) (beta* clipped to
    [-15, 15] so beta stays finite); `__call__` then returns (logits, alpha, beta).
    """

    num_actions: int
    num_blocks: int = 3
    num_channels: int = 32
    dtype: Any = jnp.float32
    value_head: str = "tanh"
    beta_scale: float = 1.0  # c in beta = c * exp(beta*) (SAI: 10 / intersections)

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, ...]:
        x = obs.astype(self.dtype)
        x = nn.Conv(self.num_channels, (3, 3), dtype=self.dtype)(x)
        for _ in range(self.num_blocks):
            x = ResBlock(self.num_channels, self.dtype)(x)
        x = nn.relu(nn.LayerNorm(dtype=self.dtype)(x))

        p = nn.relu(nn.Conv(2, (1, 1), dtype=self.dtype)(x))
        logits = nn.Dense(self.num_actions, dtype=self.dtype)(p.reshape(p.shape[0], -1))

        if self.value_head == "sai":
            alpha = self._scalar_head(x).astype(jnp.float32)
            beta_star = self._scalar_head(x).astype(jnp.float32)
            beta = self.beta_scale * jnp.exp(jnp.clip(beta_star, -15.0, 15.0))
            return logits.astype(jnp.float32), alpha, beta
        value = jnp.tanh(self._scalar_head(x))
        return logits.astype(jnp.float32), value.astype(jnp.float32)

    def _scalar_head(self, x: jax.Array) -> jax.Array:
        """AlphaZero's value head before its tanh: 1x1 conv, dense, dense -> [B] (compute dtype)."""
        v = nn.relu(nn.Conv(1, (1, 1), dtype=self.dtype)(x))
        v = nn.relu(nn.Dense(self.num_channels, dtype=self.dtype)(v.reshape(v.shape[0], -1)))
        return nn.Dense(1, dtype=self.dtype)(v)[:, 0]


def make_network(config: Config, game: Game) -> PolicyValueNet:
    dtype = jnp.bfloat16 if config.compute_dtype == "bfloat16" else jnp.float32
    if config.value_head == "sai":
        h, w = game.observation_shape[:2]
        return PolicyValueNet(num_actions=game.num_actions, num_blocks=config.num_blocks,
                              num_channels=config.num_channels, dtype=dtype, value_head="sai",
                              beta_scale=10.0 / (h * w))
    return PolicyValueNet(
        num_actions=game.num_actions,
        num_blocks=config.num_blocks,
        num_channels=config.num_channels,
        dtype=dtype,
    )


def make_evaluator(config: Config, game: Game, net: PolicyValueNet | None = None) -> Any:
    """The search evaluator of `config`'s network: the tanh value, or SAI's winrate 2 rho(0) - 1 for the
    player to move (with `sensible_lambda` > 0 the sensible agent, a `ParentAwareEvaluator`)."""
    from azjax.search import network_evaluator

    net = net or make_network(config, game)
    if config.value_head == "sai":
        from azjax.sai import make_sai_evaluator, network_heads

        return make_sai_evaluator(network_heads(net.apply), config.sensible_lambda)
    return network_evaluator(net.apply)


def init_params(net: PolicyValueNet, game: Game, key: jax.Array) -> Any:
    dummy = jnp.zeros((1, *game.observation_shape), jnp.float32)
    return net.init(key, dummy)
