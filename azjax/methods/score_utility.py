"""KataGo's score utility (Wu 2019, section 4.1; docs/methods.md section 15): the search values a node by its
winning chances and, a little, by the score lead it expects, so that a side far behind or far ahead, whose winning
chances no move changes, still plays for points instead of passing or giving stones away.

A node whose score head predicts a final margin s (points, for its player to move, komi included) gets the value

    (v + c f((s - s_0) / (scale sqrt(area)))) / (1 + c),    f(x) = (2 / pi) atan(x),

v: the value head's value of the node; s_0: the root's predicted margin from the node's player's view (KataGo's
dynamic score centre: a move is worth points relative to what the root already expects, so the bonus is as
strong at any lead); c: `score_utility_factor` (KataGo's `dynamicScoreUtilityFactor`, 0.3 in its match play);
scale: `score_utility_scale` (KataGo's `dynamicScoreCenterScale`, 0.75); area: the board's points.

Two choices differ from KataGo, both for the same reason. KataGo adds the bonus (v + c f); here the sum is divided
by 1 + c so that a value stays in [-1, 1], where the search's terminal rewards, which carry no score, remain the
best and the worst a line can give: a won game is never traded for a won-looking position with more points.
KataGo takes f's expectation over its score distribution (a mean and a standard deviation head); here f is taken
at the score head's mean, as azjax's score head predicts no spread.

Every move passes the turn in azjax's games, so a child's centre is its parent's, negated.

    value = ScoreUtilityValue(inner=TanhValue(), score_apply=with_auxiliary("score"), factor=0.3, scale=0.75)

`score_utility_factor=0` (the default) is AlphaZero: the search reads the value head alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from azjax.games import GameState
from azjax.methods.alphazero import ApplyFn, ValueHeadWrapper
from azjax.search import Evaluator, ParentAwareEvaluator

__all__ = ["ScoreUtilityValue", "ScoreUtilityContext", "score_utility", "KATAGO_FACTOR", "KATAGO_SCALE"]

Array = jax.Array
# (params, observations [B, H, W, C]) -> (the network's outputs, its score head's margin [B] in points), from one
# apply: `azjax.network.with_auxiliary("score")(apply_fn)`.
ScoreApply = Callable[[Any, Array], tuple[tuple[Array, ...], Array]]

KATAGO_FACTOR = 0.3  # KataGo's dynamicScoreUtilityFactor (match play)
KATAGO_SCALE = 0.75  # KataGo's dynamicScoreCenterScale, in units of sqrt(board area)


def score_utility(value: Array, score: Array, centre: Array, area: int, factor: float, scale: float) -> Array:
    """float32 [B]: (value + factor (2/pi) atan((score - centre) / (scale sqrt(area)))) / (1 + factor), from the node's
    `value` [B] in [-1, 1], its predicted `score` [B] and the `centre` [B] (points, all from its player to move)."""
    bonus = (2.0 / jnp.pi) * jnp.arctan((score - centre) / (scale * jnp.sqrt(float(area))))
    return (value + factor * bonus) / (1.0 + factor)


class ScoreUtilityContext(NamedTuple):
    """What a search node passes its children: the inner evaluator's context (None for a plain evaluator) and the
    root's predicted margin [B] from the view of the node's player to move."""

    inner: Any
    centre: Array


@dataclasses.dataclass(frozen=True)
class ScoreUtilityValue(ValueHeadWrapper):
    """A value-head seam that is `inner` for training and, in the search, adds to each node's value KataGo's bonus
    for the score lead its score head predicts relative to the root's (`score_utility`). `factor` 0: the search
    reads `inner`'s values unchanged. `inner`'s evaluator may be parent-aware (SAI's sensible agent): its context
    rides along."""

    # apply_fn -> its `ScoreApply` (`azjax.network.with_auxiliary("score")`; given by the build, as methods do not
    # import the network)
    score_apply: Callable[[ApplyFn], ScoreApply]
    factor: float = KATAGO_FACTOR
    scale: float = KATAGO_SCALE

    def evaluator(self, apply_fn: ApplyFn) -> Evaluator | ParentAwareEvaluator:
        if self.factor == 0:
            return self.inner.evaluator(apply_fn)
        network = self.score_apply(apply_fn)

        def node(params: Any, states: GameState,
                 parent: ScoreUtilityContext | None) -> tuple[Array, Array, ScoreUtilityContext]:
            """A node's (logits, value, context); `parent` None at the root."""
            outputs, score = network(params, states.observation)
            # The inner head reads the outputs of the one apply that gave the score: the network runs once per node.
            inner = self.inner.evaluator(lambda p, observation: outputs)
            if not isinstance(inner, ParentAwareEvaluator):
                (logits, value), inner_context = inner(params, states), None
            elif parent is None:
                logits, value, inner_context = inner.root(params, states)
            else:
                logits, value, inner_context = inner.child(params, states, parent.inner)
            # At the root the centre is its own score: the bonus is f(0) = 0, and the value is scaled as every node's.
            centre = score if parent is None else -parent.centre
            area = states.observation.shape[1] * states.observation.shape[2]
            value = score_utility(value, score, centre, area, self.factor, self.scale)
            return logits, value, ScoreUtilityContext(inner=inner_context, centre=centre)

        return ParentAwareEvaluator(root=lambda params, states: node(params, states, None), child=node)
