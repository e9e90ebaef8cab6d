"""Leela Chess Zero's win/draw/loss value head (docs/methods.md section 10), behind the value-head seam.

The network's value head ends in three logits, the player to move's win, draw and loss; the search's value is
the expected score P(win) - P(loss), and the loss is the cross-entropy of the three against the game's result.
A tanh head sees a draw as 0, the average of a win and a loss, and a young chess network whose self-play is
mostly drawn learns little else; here a draw is a class of its own and the head says how drawish a position is.

A value target t in [-1, 1] that is not a plain result (a z/q mix, a material adjudication's share, a TDLeaf
return) becomes the distribution with that expected score and the most draw: win max(t, 0), loss max(-t, 0),
draw 1 - |t|. A result of +1, 0 or -1 is one class.

    value = WinDrawLossValue()
    logits, v, spread = value.train_value(net.apply(params, obs), {})   # v = P(win) - P(loss), [B]
    loss = value.value_loss(outputs, v, z)                               # cross-entropy, []
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from azjax.games import GameState
from azjax.methods.alphazero import ApplyFn, Records
from azjax.search import Evaluator

Array = jax.Array


def expected_score(wdl_logits: Array) -> Array:
    """[..., 3] logits of (win, draw, loss) -> [...] P(win) - P(loss), in [-1, 1]."""
    p = jax.nn.softmax(wdl_logits, axis=-1)
    return p[..., 0] - p[..., 2]


def wdl_target(target: Array) -> Array:
    """[...] value targets in [-1, 1] -> [..., 3] (win, draw, loss) with expected score `target`: a result of
    +1, 0 or -1 is one class; a target in between puts the rest of its mass on the draw."""
    t = jnp.clip(target, -1.0, 1.0)
    return jnp.stack([jnp.maximum(t, 0.0), 1.0 - jnp.abs(t), jnp.maximum(-t, 0.0)], axis=-1)


@dataclasses.dataclass(frozen=True)
class WinDrawLossValue:
    """The value-head seam (`azjax.methods.alphazero.ValueHead`) for a network whose value output is [B, 3]
    logits of (win, draw, loss) from the view of the player to move."""

    columns: tuple[str, ...] = ("value_std", "draw_mean", "policy_head_active", "value_head_active")
    records: tuple[str, ...] = ()

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator:
        def evaluate(params: object, states: GameState) -> tuple[Array, Array]:
            logits, wdl = apply_fn(params, states.observation)
            return logits, expected_score(wdl)

        return evaluate

    def record(self, states: GameState) -> Records:
        del states
        return {}

    def train_value(self, outputs: tuple[Array, ...], recorded: Records) -> tuple[Array, Array, dict[str, Array]]:
        del recorded
        logits, wdl = outputs
        v = expected_score(wdl)
        # draw_mean: the head's mean draw probability, which shows self-play drifting into draws.
        return logits, v, {"value_std": jnp.std(v), "draw_mean": jnp.mean(jax.nn.softmax(wdl, axis=-1)[:, 1])}

    def value_loss(self, outputs: tuple[Array, ...], value: Array, target: Array) -> Array:
        del value
        wdl = outputs[1]
        return -jnp.mean(jnp.sum(wdl_target(target) * jax.nn.log_softmax(wdl, axis=-1), axis=-1))
