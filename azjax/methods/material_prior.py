"""KnightCap's start (Baxter, Tridgell and Weaver 1998; docs/methods.md section 16): a chess value that knows material
before it has learnt anything. KnightCap began from hand-set material weights and learnt the rest by TDLeaf; here the
search reads a blend of the value head and the material count,

    (1 - w) v + w tanh(m / scale),

v: the value head's value of a node; m: the material lead of its player to move in pawns (P 1, N 3, B 3, R 5, Q 9);
w: `material_prior_weight`; scale: `material_prior_scale` (pawns: a lead of `scale` pawns reads tanh(1) = 0.76).
Terminal nodes keep the game's result, so a mate is still worth more than any lead. Training is unchanged: the value
head still learns the games' outcomes, from games whose searches counted material from the first step.

    value = MaterialPriorValue(inner=WinDrawLossValue(), weight=0.5, scale=4.0)

`material_prior_weight=0` (the default) is AlphaZero: the search reads the value head alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from azjax.games import GameState, board_arrays, material_diff
from azjax.methods.alphazero import ApplyFn, ValueHeadWrapper
from azjax.search import Evaluator, ParentAwareEvaluator

__all__ = ["MaterialPriorValue", "material_prior"]

Array = jax.Array


def material_prior(value: Array, material: Array, weight: float, scale: float) -> Array:
    """float32 [B]: (1 - weight) value + weight tanh(material / scale), from a node's `value` [B] in [-1, 1] and its
    player to move's `material` lead [B] in pawns."""
    return (1.0 - weight) * value + weight * jnp.tanh(material / scale)


@dataclasses.dataclass(frozen=True)
class MaterialPriorValue(ValueHeadWrapper):
    """A value-head seam that is `inner` for training and, in the search, blends each node's value with its material
    lead (`material_prior`). `weight` 0: the search reads `inner`'s values unchanged. A parent-aware `inner`
    evaluator keeps its context."""

    weight: float = 0.0
    scale: float = 4.0

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator | ParentAwareEvaluator:
        inner = self.inner.evaluator(apply_fn)
        if self.weight == 0:
            return inner

        def blend(states: GameState, value: Array) -> Array:
            return material_prior(value, material_diff(board_arrays(states).board), self.weight, self.scale)

        if isinstance(inner, ParentAwareEvaluator):
            def root(params: Any, states: GameState) -> tuple[Array, Array, Any]:
                logits, value, context = inner.root(params, states)
                return logits, blend(states, value), context

            def child(params: Any, states: GameState, parent: Any) -> tuple[Array, Array, Any]:
                logits, value, context = inner.child(params, states, parent)
                return logits, blend(states, value), context

            return ParentAwareEvaluator(root=root, child=child)

        def evaluate(params: Any, states: GameState) -> tuple[Array, Array]:
            logits, value = inner(params, states)
            return logits, blend(states, value)

        return evaluate
